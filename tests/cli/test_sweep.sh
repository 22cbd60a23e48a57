#!/usr/bin/env bash
# `attnprof sweep` (src/cli/sweep.cpp) on the CPU backend: the points of the axes for the kernels asked,
# results.json and the requested report files in --out; bad option values are exit 2 with one line and
# write nothing. Usage: test_sweep.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"

"$attnprof" sweep --axes "$tiny_axes" --kernels reference "${fast[@]}" --out "$scratch/s" --csv "$scratch/s.csv" \
  >"$scratch/log" 2>&1 || fail "sweep: $(tail -n 5 "$scratch/log")"
python3 - "$scratch/s/results.json" <<'PY' || fail "results.json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["context"]["backend"] == "cpu", d["context"]["backend"]
assert {r["kernel"] for r in d["records"]} == {"reference"}, {r["kernel"] for r in d["records"]}
assert sorted(r["shape"]["seq_q"] for r in d["records"]) == [32, 48, 64, 96], [r["shape"] for r in d["records"]]
for r in d["records"]:
    assert r["status"] == "ok" and r["verification"]["passed"] and r["latency"]["n"] >= 1, (r["key"], r["status"], r["reason"], r["latency"]["n"])
PY
[[ "$(($(wc -l <"$scratch/s.csv") - 1))" == 4 ]] || fail "the CSV does not hold 4 points"

bad() {
  local got=0
  "$attnprof" sweep "$@" --out "$scratch/bad" >/dev/null 2>"$scratch/err" || got=$?
  [[ "$got" == 2 ]] || fail "sweep $*: exit $got, want 2"
  [[ "$(wc -l <"$scratch/err")" == 1 ]] || fail "sweep $*: stderr $(cat "$scratch/err")"
  [[ ! -e "$scratch/bad/results.json" ]] || fail "sweep $*: wrote results"
}
bad --axes "" --backend cpu
bad --axes "$tiny_axes" --backend cpu --kernels no-such-kernel
bad --axes "$tiny_axes" --backend cpu --max-seconds nan
bad --axes "batch=1;heads=3;kv_heads=2;seq=32;hdim=32" --backend cpu
echo "test_sweep: ok"
