#!/usr/bin/env bash
# One GPU-machine pass over the CUDA kernels: correctness tests, a timing table at the FlashAttention
# benchmark shapes, and the fused kernel's machine code (tensor-core instructions, spills).
# Usage: scripts/device/kernels.sh [BIN_DIR] [OUT_DIR]
#   BIN_DIR holds test_gpu_kernels and bench_gpu_kernels (default .devcarry/kernels: copy them there
#   from the build dir, see docs/kernels.md); logs go to OUT_DIR (default $OUT, else ./kernels-out).
# Environment: BENCH_ARGS (extra bench_gpu_kernels options), NCU=1 to add one Nsight Compute pass,
# TEST_TIMEOUT_S / BENCH_TIMEOUT_S (defaults 150 / 150) so that a hung kernel cannot eat the budget,
# SANITIZE=1 to run the fused kernel at two small shapes under compute-sanitizer memcheck and racecheck.
set -uo pipefail
bin=${1:-.devcarry/kernels}
out=${2:-${OUT:-kernels-out}}
mkdir -p "$out"
status=0

echo "== device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$out/device.txt"

echo "== tests"
timeout "${TEST_TIMEOUT_S:-150}" "$bin/test_gpu_kernels" 2>&1 | tee "$out/test_gpu_kernels.log"
test_rc=${PIPESTATUS[0]}
echo "test_gpu_kernels exit code $test_rc" | tee -a "$out/test_gpu_kernels.log"
[ "$test_rc" -eq 0 ] || status=1

echo "== machine code"
{
  cuobjdump --dump-sass "$bin/test_gpu_kernels" > "$out/kernels.sass" 2>&1
  # Per __global__ function: tensor-core MMAs, ldmatrix, cp.async, local-memory (spill) accesses.
  awk '/Function :/ { if (name) printf "%-110s HMMA %5d LDSM %4d LDGSTS %4d LDL %3d STL %3d\n", name, h, l, g, ll, sl;
                      name = $3; h = l = g = ll = sl = 0 }
       /HMMA/ { h++ } /LDSM/ { l++ } /LDGSTS/ { g++ } /LDL/ { ll++ } /STL/ { sl++ }
       END { if (name) printf "%-110s HMMA %5d LDSM %4d LDGSTS %4d LDL %3d STL %3d\n", name, h, l, g, ll, sl }' \
    "$out/kernels.sass" | grep -E "fused|softmax" | c++filt
} 2>&1 | tee "$out/sass_summary.txt"
gzip -f "$out/kernels.sass"

echo "== timing"
timeout "${BENCH_TIMEOUT_S:-150}" "$bin/bench_gpu_kernels" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if [ "${SANITIZE:-0}" = 1 ] && command -v compute-sanitizer > /dev/null; then
  echo "== compute-sanitizer (fused, seq 512, hdim 64 and 128, causal and not)"
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool "$tool" --error-exitcode 3 "$bin/bench_gpu_kernels" \
      --kernels fused --seqs 512 --hdims 64,128 --iters 1 2>&1 | tail -n 12 | tee "$out/sanitizer_$tool.txt"
    echo "compute-sanitizer $tool exit code ${PIPESTATUS[0]}" | tee -a "$out/sanitizer_$tool.txt"
  done
fi

if [ "${NCU:-0}" = 1 ] && command -v ncu > /dev/null; then
  echo "== nsight compute (one fused call, hdim 128, seq 4096)"
  timeout 60 ncu --clock-control none -k regex:fused_attention --launch-skip 6 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
    --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    "$bin/bench_gpu_kernels" --kernels fused --seqs 4096 --hdims 128 --iters 1 2>&1 | tee "$out/ncu.txt"
fi
exit $status
