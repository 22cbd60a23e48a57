#!/usr/bin/env bash
# `attnprof why` end to end on the H200 fixture (reports/h200-stalls/results.json) and the CPU fixture:
# the text and the JSON, the FILE:KERNEL and FILE forms, and every bad input: exit 2 with exactly one
# line on stderr and nothing on stdout. Usage: test_why.sh <attnprof>
set -u
bin="$1"
src="${ATTNPROF_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
results="$src/reports/h200-stalls/results.json"
cpu="$src/tests/report/fixtures/cpu_results.json"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The text: every shape, the largest terms with their numbers and places.
if "$bin" why torch:cudnn fused-sm90 "$results" >"$tmp/out" 2>"$tmp/err"; then
  for want in 'why: torch:cudnn (baseline) -> fused-sm90 (candidate)' 'sum to the gap' \
              'b1 h16/16 s16384x16384 d128 bf16' 'P50 3461.2 -> 3824.6 us: +363.38 us (+10.5%)' \
              'fused-sm90 runs at 0.905x torch:cudnn' 'device_math.cuh:28' 'SASS 0x' 'mio_throttle' \
              'long_scoreboard' 'evidence, not additive' 'warp cycles per issued instruction' 'other states'; do
    grep -qF -- "$want" "$tmp/out" || fail "text lacks '$want'"
  done
  [ "$(grep -c '^b[0-9]' "$tmp/out")" -eq 6 ] || fail "not 6 shapes: $(grep -c '^b[0-9]' "$tmp/out")"
  [ -s "$tmp/err" ] && fail "stderr not empty: $(cat "$tmp/err")"
else
  fail "why exited $?: $(cat "$tmp/err")"
fi

# --json: versioned, every term, the terms summing to the gap; --shape picks by a part of the label.
if "$bin" why torch:cudnn fused-sm90 "$results" --json >"$tmp/json" 2>"$tmp/err"; then
  python3 - "$tmp/json" <<'PY' || fail "JSON output wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == "1.0", d["schema_version"]
assert d["baseline"] == "torch:cudnn" and d["candidate"] == "fused-sm90"
assert len(d["points"]) == 6 and d["skipped"] == []
for p in d["points"]:
    assert p["method"] == "warp-states", p["method"]
    assert abs(p["terms_sum_us"] - p["gap_us"]) < 1e-6 * p["gap_us"], p["shape"]
    assert abs(sum(t["delta_us"] for t in p["terms"]) - p["gap_us"]) < 1e-6 * p["gap_us"]
    assert abs(p["gap_us"] - (p["candidate"]["p50_us"] - p["baseline"]["p50_us"])) < 1e-9
    deltas = [abs(t["delta_us"]) for t in p["terms"]]
    assert deltas == sorted(deltas, reverse=True), p["shape"]
p = {q["shape"]: q for q in d["points"]}["b1 h16/16 s16384x16384 d128 bf16"]
assert p["terms"][0]["state"] == "wait" and abs(p["terms"][0]["delta_us"] - 559.0) < 0.1, p["terms"][0]
spot = p["terms"][0]["candidate_spots"][0]
assert (spot["file"], spot["line"]) == ("device_math.cuh", 28), spot
PY
else
  fail "why --json exited $?: $(cat "$tmp/err")"
fi
"$bin" why torch:cudnn fused-sm90 "$results" --shape "s16384x16384 d128 bf16" --json >"$tmp/one" 2>"$tmp/err" ||
  fail "--shape exited $?: $(cat "$tmp/err")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert [p['shape'] for p in d['points']] == ['b1 h16/16 s16384x16384 d128 bf16'], d['points']" \
  "$tmp/one" || fail "--shape did not pick the one shape"
"$bin" why torch:cudnn fused-sm90 "$results" --top 2 >"$tmp/top" 2>&1 || fail "--top 2 exited $?"
grep -qF 'more that differ less (--top' "$tmp/top" || fail "--top 2 does not say what it left out"

# Two files: FILE:KERNEL on both sides, a bare FILE taking the other side's kernel.
cp "$results" "$tmp/base.json"
python3 - "$results" "$tmp/new.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["records"] = [r for r in d["records"] if r["kernel"] == "fused-sm90"]
for r in d["records"]:
    r["latency"]["p50_us"] *= 1.08
json.dump(d, open(sys.argv[2], "w"))
PY
if (cd "$tmp" && "$bin" why base.json:fused-sm90 new.json:fused-sm90 >"$tmp/builds" 2>"$tmp/err"); then
  grep -qF 'why: base.json:fused-sm90 (baseline) -> new.json:fused-sm90 (candidate)' "$tmp/builds" || fail "two files' labels"
  grep -qF '(+8.0%)' "$tmp/builds" || fail "two builds: the 8% gap not shown"
  grep -qF 'new.json:fused-sm90 there' "$tmp/builds" && fail "same-place times name the wrong side"
  grep -qF 'base.json:fused-sm90 there' "$tmp/builds" || fail "two builds: no time of the same line on the other side"
else
  fail "why FILE:KERNEL exited $?: $(cat "$tmp/err")"
fi
(cd "$tmp" && "$bin" why base.json new.json:fused-sm90 >/dev/null 2>"$tmp/err") || fail "bare FILE exited $?: $(cat "$tmp/err")"
(cd "$tmp" && "$bin" why new.json base.json --json >"$tmp/bare" 2>"$tmp/err") || fail "two bare files of one common kernel: $(cat "$tmp/err")"

# The CPU backend: the time gap, and why there are no warp states or counters.
if "$bin" why reference fused "$cpu" >"$tmp/cpu" 2>"$tmp/err"; then
  grep -qF 'warp-state sampling needs an NVIDIA GPU' "$tmp/cpu" || fail "CPU: warp states not explained"
  grep -qF 'counters unavailable: CPU backend' "$tmp/cpu" || fail "CPU: counters not explained"
  grep -qF 'sum to the gap' "$tmp/cpu" && fail "CPU: speaks of terms it does not have"
else
  fail "why on the CPU fixture exited $?: $(cat "$tmp/err")"
fi

# Names from a file stay on their lines: a kernel, a warp state and a source file with ESC and newlines.
python3 - "$results" "$tmp/hostile.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["records"] = [r for r in d["records"] if r["kernel"] in ("fused-sm90", "torch:cudnn")]
for r in d["records"]:
    if r["kernel"] == "fused-sm90":
        r["kernel"] = "evil\x1b[31m\nkernel"
        k = r["stalls"]["per_kernel"][0]
        k["reasons"]["wait\x1b]0;x\x07\nstate"] = k["reasons"].pop("wait")
        for spot in k["lines"]:
            spot["file"] = "/x/evil\x1b[2J\n.cuh"
            if "wait" in spot["reasons"]:
                spot["reasons"]["wait\x1b]0;x\x07\nstate"] = spot["reasons"].pop("wait")
json.dump(d, open(sys.argv[2], "w"))
PY
if "$bin" why torch:cudnn "$(printf 'evil\x1b[31m\nkernel')" "$tmp/hostile.json" >"$tmp/hostile" 2>"$tmp/err"; then
  grep -q $'\x1b' "$tmp/hostile" && fail "an ESC byte reached the terminal text"
  grep -qF 'evil\x1b[31m\nkernel' "$tmp/hostile" || fail "the kernel's escapes are not shown visibly"
  grep -qF 'wait\x1b]0;x\x07\nstate' "$tmp/hostile" || fail "the state's escapes are not shown visibly"
  grep -qF 'evil\x1b[2J\n.cuh:28' "$tmp/hostile" || fail "the file's escapes are not shown visibly"
else
  fail "why on hostile names exited $?: $(cat "$tmp/err")"
fi

# Each bad input: exit 2, exactly one line on stderr, nothing on stdout.
echo 'not json' >"$tmp/notjson.json"
python3 - "$results" "$tmp/far.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["records"]:
    r["shape"]["batch"] *= 2
json.dump(d, open(sys.argv[2], "w"))
PY
bad_cases=(
  "torch:cudnn nope $results"                       # unknown kernel
  "fused fused-sm90"                                 # no RESULTS, no files
  "$tmp/missing.json:fused $tmp/base.json:fused"     # a file that is not there
  "fused-sm90 fused-sm90 $results"                   # the same records twice
  "$tmp/base.json $tmp/base.json"                    # one file, several kernels
  "$tmp/base.json:nope $tmp/new.json:fused-sm90"     # a kernel its file lacks
  "$tmp/notjson.json:fused $tmp/base.json:fused"     # not a results file
  "$tmp/far.json:fused-sm90 $results:fused-sm90"     # no shape in common
  "torch:cudnn fused-sm90 $results --shape s999"     # --shape matching nothing
  "torch:cudnn fused-sm90 $results --shape="         # an empty --shape
  "torch:cudnn fused-sm90 $results --top 0"          # --top out of range
  "torch:cudnn"                                      # no candidate
  "torch:cudnn fused-sm90 $results --bogus"          # unknown option
)
for args in "${bad_cases[@]}"; do
  # shellcheck disable=SC2086  # the cases are split into arguments on purpose
  "$bin" why $args >"$tmp/out" 2>"$tmp/err"
  rc=$?
  lines=$(wc -l <"$tmp/err")
  [ "$rc" -eq 2 ] || fail "'$args' exited $rc, expected 2: $(cat "$tmp/err")"
  [ "$lines" -eq 1 ] || fail "'$args' wrote $lines lines on stderr: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "'$args' wrote to stdout: $(head -c 200 "$tmp/out")"
done
"$bin" why torch:cudnn nope "$results" 2>&1 | grep -qF "kernels: fused, fused-sm90, torch:flash, torch:cudnn" ||
  fail "an unknown kernel does not list the file's kernels"
"$bin" why "$tmp/far.json:fused-sm90" "$results:fused-sm90" 2>&1 | grep -qF "no shape is in both" ||
  fail "two files without a shape in common not said so"
"$bin" why torch:cudnn fused-sm90 "$results" --shape s999 2>&1 | grep -qF "matches none of the 6 shape(s)" ||
  fail "--shape matching nothing does not list the shapes"

echo "why CLI: ${#bad_cases[@]} bad inputs checked, $failures failure(s)"
[ "$failures" -eq 0 ]
