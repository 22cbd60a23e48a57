#!/usr/bin/env bash
# The SM clock under load: the timer's GPU tests, two points sampled 600 times (checks.py clock:
# latency against the clock of each batch of samples), and the fa-bench A/A twice, with the default
# sampling and with $ATTNPROF_AA_SAMPLING.
# Usage: bash scripts/device/clock.sh   (results in $OUT/clock.tgz)
source "$(dirname "$0")/lib.sh"
phase_begin clock
log "timer GPU tests"
timeout 120 "$bin/test_gpu_measure" "timer*" > "$out/test_gpu_measure.log" 2>&1
echo "exit $? test_gpu_measure timer*"; grep -E "^MEASURE|FAILED|passed|failed" "$out/test_gpu_measure.log" | tail -n 8
log "two points, 600 samples each"
long=(--backend cuda --no-counters --min-samples 600 --max-samples 600 --max-seconds 60)
"$bin/attnprof" sweep --axes "batch=1;heads=16;seq=16384;hdim=128;dtype=bf16" --kernels fused-sm90 "${long[@]}" \
    --out "$out/long-sm90" 2>&1 | tail -n 1
"$bin/attnprof" sweep --axes "batch=4;heads=32;seq=4096;hdim=64;dtype=bf16" --kernels fused "${long[@]}" \
    --out "$out/long-fused" 2>&1 | tail -n 1
$checks clock "$out/long-sm90/results.json"; $checks clock "$out/long-fused/results.json"
log "fa-bench A/A, default sampling"
fa_bench_aa default
if [ -n "${ATTNPROF_AA_SAMPLING:-}" ]; then
  log "fa-bench A/A, $ATTNPROF_AA_SAMPLING"
  # shellcheck disable=SC2086  # the sampling options are words
  fa_bench_aa timed $ATTNPROF_AA_SAMPLING
fi
