#!/usr/bin/env bash
# On a GPU: a plugin point that never finishes (on the host, or as a GPU kernel that spins forever) is
# killed at --point-timeout, and the built-in points after it run in a fresh worker that first checks
# that the device is idle (the wait recorded in the results' notices): every later point is ok, no
# sample is negative. Repeated ATTNPROF_KILLED_POINT_ROUNDS times (default 10).
# Usage: gpu_killed_point_test.sh ATTNPROF TEST_PLUGIN_DIR. Skips (77) without a GPU.
set -euo pipefail
attnprof="$1"
tests="$2"
nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
rounds="${ATTNPROF_KILLED_POINT_ROUNDS:-10}"
out="${ATTNPROF_GPU_TEST_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/attnprof-killed-point.XXXXXX")}"
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for mode in host gpu; do
    dir="$out/$mode$round"
    "$attnprof" sweep --backend cuda --plugin "$tests/hang_$mode.so" --kernels "plugin-hang-$mode,fused,decode" \
      --axes "batch=4;heads=8;kv_heads=2;seq_q=1,256;seq_k=1024;hdim=128;causal=0;dtype=bf16" --point-timeout 3 --no-counters \
      --max-seconds 0.2 --warmup-seconds 0.05 --counter-batch 1 --out "$dir" >"$dir.log" 2>&1 ||
      { echo "FAIL: round $round ($mode): sweep: $(tail -n 20 "$dir.log")" >&2; exit 1; }
    python3 - "$dir/results.json" "plugin-hang-$mode" <<'PY' || { echo "FAIL: round $round ($mode)" >&2; exit 1; }
import json, sys
res = json.load(open(sys.argv[1]))
recs = res["records"]
hang = [r for r in recs if r["kernel"] == sys.argv[2]]
rest = [r for r in recs if r["kernel"] != sys.argv[2]]
assert len(hang) == 2 and all(r["status"] == "failed" and "timed out" in r["reason"] for r in hang), hang
bad = [(r["key"], r["status"], r["reason"]) for r in rest if r["status"] not in ("ok", "unsupported")]
assert not bad, bad
assert sum(r["status"] == "ok" for r in rest) >= 3, [(r["key"], r["status"]) for r in rest]
assert all(s >= 0 for r in rest for s in r.get("samples_us", [])), "a negative sample"
settled = [n for n in res["context"]["notices"] if "after a lost point" in n]
assert len(settled) == 2, res["context"]["notices"]
print(f"{sys.argv[2]}: {len(rest)} later points, {sum(r['status'] == 'ok' for r in rest)} ok; " + " | ".join(settled))
PY
  done
done
echo "gpu_killed_point: ok ($rounds rounds x 2 modes)"
