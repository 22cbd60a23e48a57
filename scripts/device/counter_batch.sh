#!/usr/bin/env bash
# Batched counter sessions (--counter-batch) on a GPU machine: one sweep timed three ways — without
# counters, with a CUPTI session per point (--counter-batch 1) and batched (the default) — and the
# counters of the last two side by side per point (DRAM bytes, tensor ops, range names).
# Usage: scripts/device/counter_batch.sh [ATTNPROF] [OUT_DIR]
#   ATTNPROF defaults to build/attnprof; logs and results go to OUT_DIR (default $OUT, else
#   ./counter-batch-out). AXES and KERNELS override the 24-point sweep.
set -uo pipefail
bin=${1:-build/attnprof}
out=${2:-${OUT:-counter-batch-out}}
axes=${AXES:-"batch=4;heads=16;seq=1024,2048,4096;hdim=64,128;causal=0,1;dtype=bf16"}
kernels=${KERNELS:-reference,fused}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
status=0

# The first sweep on a machine measures the ceilings (cached after): not part of any timing below.
"$bin" sweep --backend cuda --axes "batch=1;heads=1;seq=128;hdim=64;dtype=bf16" --no-counters \
  --out "$out/warmup" >"$out/warmup.log" 2>&1

sweep() {
  local name=$1
  shift
  local start end rc=0
  start=$(date +%s.%N)
  "$bin" sweep --backend cuda --axes "$axes" --kernels "$kernels" --out "$out/$name" "$@" >"$out/$name.log" 2>&1 || rc=$?
  end=$(date +%s.%N)
  [ "$rc" -eq 0 ] || status=1
  python3 -c "import sys; print(f'{sys.argv[1]}: exit {sys.argv[2]}, {float(sys.argv[4]) - float(sys.argv[3]):.1f} s')" \
    "$name" "$rc" "$start" "$end" | tee -a "$out/times.txt"
}
sweep no-counters --no-counters
sweep per-point --counter-batch 1
sweep batched
grep -h "^attnprof: counters" "$out/batched.log" | tee -a "$out/times.txt"

python3 "$(dirname "$0")/checks.py" counters-batched "$out/per-point/results.json" "$out/batched/results.json" \
  | tee "$out/compare.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit $status
