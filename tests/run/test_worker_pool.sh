#!/usr/bin/env bash
# Failure isolation through the real binary: a worker that crashes on a point, a worker that hangs
# past --point-timeout, and two workers sharing the queue. Each failed point is recorded as failed
# with the reason; every other point is measured.
source "$(dirname "$0")/lib.sh"

# A crash: the worker aborts on point 2; a fresh worker takes the rest.
ATTNPROF_TEST_FAIL_POINT=2 "$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --out "$scratch/crash" \
  >"$scratch/crash.log" 2>&1 || fail "sweep with a crashing point failed: $(tail -n 5 "$scratch/crash.log")"
python3 - "$scratch/crash/results.json" <<'PY' || fail "crash: wrong records"
import json, sys
results = json.load(open(sys.argv[1]))
records = results["records"]
total = results["context"]["sweep"]["points_total"]
assert len(records) == total, f"{len(records)} records for {total} points"
failed = [r for r in records if r["status"] == "failed"]
assert len(failed) == 1, f"expected exactly one failed point, got {[(r['key'], r['reason']) for r in failed]}"
assert records.index(failed[0]) == 2, "the failed point is not the third of the sweep"
assert "died while measuring" in failed[0]["reason"] and "signal" in failed[0]["reason"], failed[0]["reason"]
others = [r for r in records if r is not failed[0]]
assert all(r["status"] == "ok" for r in others), [(r["key"], r["status"], r["reason"]) for r in others]
assert all(r["latency"]["n"] > 0 for r in others)
PY

# A hang: the worker sleeps on point 1 and is killed after --point-timeout (6 s: a loaded CI machine
# must still finish every other point inside it).
start=$(date +%s)
ATTNPROF_TEST_HANG_POINT=1 "$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --point-timeout 6 \
  --out "$scratch/hang" >"$scratch/hang.log" 2>&1 || fail "sweep with a hanging point failed"
(($(date +%s) - start < 60)) || fail "the hanging point was not cut off by --point-timeout"
python3 - "$scratch/hang/results.json" <<'PY' || fail "hang: wrong records"
import json, sys
records = json.load(open(sys.argv[1]))["records"]
failed = [r for r in records if r["status"] == "failed"]
assert len(failed) == 1 and records.index(failed[0]) == 1, [(r["key"], r["status"]) for r in records]
assert "timed out" in failed[0]["reason"], failed[0]["reason"]
assert all(r["status"] == "ok" for r in records if r is not failed[0])
PY

# Two workers over one queue (on the CPU backend, two "devices" are two worker processes).
"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --devices 0,1 --out "$scratch/two" \
  >"$scratch/two.log" 2>&1 || fail "two-worker sweep failed: $(tail -n 5 "$scratch/two.log")"
python3 - "$scratch/two/results.json" "$scratch/crash/results.json" <<'PY' || fail "two workers: wrong records"
import json, sys
two = json.load(open(sys.argv[1]))["records"]
one = json.load(open(sys.argv[2]))["records"]
assert [r["key"] for r in two] == [r["key"] for r in one], "point order differs from the sweep order"
assert all(r["status"] == "ok" for r in two)
assert {r["device_id"] for r in two} <= {0, 1}
PY

# Bad input is exit 2 with one line.
for bad in "--axes seq=abc" "--kernels nosuch" "--shard 3/2" "--devices x" "--warmup-seconds -1" "--min-seconds -0.5"; do
  rc=0
  # shellcheck disable=SC2086
  "$attnprof" sweep $bad --backend cpu --out "$scratch/bad" >"$scratch/bad.log" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "'sweep $bad' exited $rc, expected 2: $(cat "$scratch/bad.log")"
  [[ $(wc -l <"$scratch/bad.log") -eq 1 ]] || fail "'sweep $bad' printed more than one line"
done
echo "isolation: ok"
