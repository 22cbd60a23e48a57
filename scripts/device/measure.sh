#!/usr/bin/env bash
# One GPU-machine pass over the measurement engine (src/measure/cuda): its tests — CUPTI DRAM bytes of
# a streaming copy against the analytic count, per-launch ranges, the counters-unavailable path, the
# timer (cold events, graph replay, stages, SM clock), occupancy against the CUDA API, the ceiling
# probes, the backend end to end — and, when an attnprof binary is there, a small sweep with counters.
# Usage: scripts/device/measure.sh [BIN_DIR] [OUT_DIR]
#   BIN_DIR holds test_gpu_measure (and optionally attnprof), default .devcarry/measure; logs go to
#   OUT_DIR (default $OUT, else ./measure-out). Every figure the tests measure is on a "MEASURE" line,
#   collected in measure-figures.txt.
set -uo pipefail
bin=${1:-.devcarry/measure}
out=${2:-${OUT:-measure-out}}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNPROF_TEST_FIGURES=1  # the GPU tests' "MEASURE ..." lines (tests/gpu/figures.hpp)
export ATTNPROF_CACHE_DIR=/tmp/attnprof-measure-cache
status=0

echo "== device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv \
  | tee "$out/device.txt"
grep -H . /proc/driver/nvidia/params 2>/dev/null | grep -i profiling | tee -a "$out/device.txt"

echo "== test_gpu_measure"
timeout "${TEST_TIMEOUT_S:-200}" "$bin/test_gpu_measure" --durations yes 2>&1 | tee "$out/test_gpu_measure.log"
rc=${PIPESTATUS[0]}
echo "test_gpu_measure exit code $rc" | tee -a "$out/test_gpu_measure.log"
[ "$rc" -eq 0 ] || status=1
grep -E "^MEASURE|passed|failed" "$out/test_gpu_measure.log" > "$out/measure-figures.txt"

if [ -x "$bin/attnprof" ]; then
  echo "== attnprof sweep (small, with counters)"
  timeout "${SWEEP_TIMEOUT_S:-60}" "$bin/attnprof" sweep --backend cuda \
    --axes "batch=2;heads=16;seq=1024,4096;hdim=64,128;dtype=bf16" --out /tmp/attnprof-measure-sweep 2>&1 \
    | tail -n 40 | tee "$out/sweep.log"
  [ -f /tmp/attnprof-measure-sweep/results.json ] && gzip -c /tmp/attnprof-measure-sweep/results.json > "$out/sweep-results.json.gz"
fi
exit $status
