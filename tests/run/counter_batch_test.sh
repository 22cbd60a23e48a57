#!/usr/bin/env bash
# The counter phase through the real binary on the CPU backend (which has no counters): a CPU sweep
# makes no counter phase and no "pending" record; a journal holding points whose counters are pending
# (a CUDA sweep cut short in its counter phase) is completed by --resume without re-timing them.
source "$(dirname "$0")/lib.sh"

"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --counter-batch 8 --out "$scratch/a" >"$scratch/a.log" 2>&1 ||
  fail "CPU sweep failed: $(tail -n 5 "$scratch/a.log")"
total=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['records']))" "$scratch/a/results.json")
grep -q "counters:" "$scratch/a.log" && fail "a CPU sweep ran a counter phase"
[[ $(journal_points "$scratch/a/results.journal.jsonl") -eq $total ]] || fail "the CPU journal has extra lines"
grep -q '"pending"' "$scratch/a/results.json" && fail "a CPU sweep left counters pending"

rc=0
"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --counter-batch 0 --out "$scratch/b" >"$scratch/b.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "--counter-batch 0 exited $rc, expected 2"

# Mark two journaled points as timed with counters pending; remember their samples.
python3 - "$scratch/a/results.journal.jsonl" >"$scratch/pending_keys" <<'PY'
import json, sys
path = sys.argv[1]
lines = open(path).read().splitlines()
out = [lines[0]]
for i, line in enumerate(lines[1:]):
    r = json.loads(line)
    if i < 2 and r["status"] == "ok":
        r["counters"] = {"status": "pending", "reason": "cut short", "per_kernel": [], "total": {},
                         "passes": 0, "profiling_ms": 0}
        print(r["key"] if "key" in r else r["kernel"], r["samples_us"][0])
    out.append(json.dumps(r))
open(path, "w").write("\n".join(out) + "\n")
PY
[[ $(wc -l <"$scratch/pending_keys") -eq 2 ]] || fail "the fixture marked $(wc -l <"$scratch/pending_keys") points, expected 2"

"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --counter-batch 8 --out "$scratch/a" --resume \
  >"$scratch/resume.log" 2>&1 || fail "resume failed: $(tail -n 5 "$scratch/resume.log")"
grep -q "resuming: $total of $total points already done (2 with counters pending" "$scratch/resume.log" ||
  fail "resume did not report the pending counters: $(grep resum "$scratch/resume.log")"
grep -q "counters: 2 points in 1 group" "$scratch/resume.log" || fail "no counter phase for the pending points"
grep -q '"pending"' "$scratch/a/results.json" && fail "counters still pending after --resume"
python3 - "$scratch/a/results.json" "$scratch/pending_keys" <<'PY' || fail "the pending points were re-timed or not settled"
import json, sys
records = json.load(open(sys.argv[1]))["records"]
settled = [r for r in records if r["counters"]["status"] == "not_collected"]
assert len(settled) == 2, [r["counters"] for r in records]
firsts = sorted(float(line.split()[-1]) for line in open(sys.argv[2]))
assert sorted(r["samples_us"][0] for r in settled) == firsts, "samples changed: the points were re-timed"
PY
# The journal holds each settled point twice (pending, then complete); the later line wins.
[[ $(journal_points "$scratch/a/results.journal.jsonl") -eq $((total + 2)) ]] ||
  fail "journal holds $(journal_points "$scratch/a/results.journal.jsonl") lines, expected $((total + 2))"
echo "counter batch: ok ($total points; 2 pending counters settled by --resume)"

# A worker that crashes in the counter phase costs the group its counters, not its timing.
"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --out "$scratch/c" >"$scratch/c.log" 2>&1 ||
  fail "CPU sweep failed: $(tail -n 5 "$scratch/c.log")"
python3 - "$scratch/c/results.journal.jsonl" <<'PY'
import json, sys
path = sys.argv[1]
lines = open(path).read().splitlines()
out = [lines[0]]
for i, line in enumerate(lines[1:]):
    r = json.loads(line)
    if i < 2:  # one worker: journal order is sweep order, so these are points 0 and 1
        r["counters"] = {"status": "pending", "reason": "", "per_kernel": [], "total": {}, "passes": 0,
                         "profiling_ms": 0}
    out.append(json.dumps(r))
open(path, "w").write("\n".join(out) + "\n")
PY
ATTNPROF_TEST_FAIL_COUNTERS=0 "$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --out "$scratch/c" --resume \
  >"$scratch/crash.log" 2>&1 || fail "a crash in the counter phase stopped the sweep: $(tail -n 5 "$scratch/crash.log")"
python3 - "$scratch/c/results.json" <<'PY' || fail "the crashed group's points were not kept with counters unavailable"
import json, sys
records = json.load(open(sys.argv[1]))["records"]
lost = [r for r in records if "worker process died" in r["counters"]["reason"]]
assert len(lost) == 2, [r["counters"] for r in records]
assert all(r["counters"]["status"] == "unavailable" and r["status"] == "ok" and r["samples_us"] for r in lost)
PY
echo "counter batch: a crash in the counter phase: ok"
