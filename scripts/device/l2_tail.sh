#!/usr/bin/env bash
# The L2 tail and the counter sessions: test_gpu_measure's [tail] and [batch] cases (a call's writes in
# its range, during idle spins and in the flush after it; batched against per-point sessions),
# bench_counter_session (a session's cost per range capacity), the 24-point sweep's sessions and each
# point's writes + L2 tail against the analytic bytes (checks.py sessions), and Nsight Compute on
# attnprof's own sampling loop (flush, call, flush, ...) with its cache control on and off.
# Usage: bash scripts/device/l2_tail.sh   (results in $OUT/l2-tail.tgz)
source "$(dirname "$0")/lib.sh"
phase_begin l2-tail
for tag in tail batch; do
  log "test_gpu_measure [$tag]"
  timeout 180 "$bin/test_gpu_measure" "[$tag]" > "$out/$tag.log" 2>&1
  echo "exit $? test_gpu_measure [$tag]"; grep -E "MEASURE|passed|failed" "$out/$tag.log"
done
log "bench_counter_session"
timeout 120 "$bin/bench_counter_session" 2>&1 | tee "$out/session-size.txt"
log "24-point sweep with counters: its sessions, and writes + L2 tail against analytic"
"$bin/attnprof" sweep --axes "batch=4;heads=16;seq=1024,2048,4096;hdim=64,128;causal=0,1;dtype=bf16" \
    --kernels reference,fused --backend cuda --min-samples 10 --max-samples 10 --warmup-seconds 0 --min-seconds 0 \
    --out "$out/overhead" 2>&1 | tail -n 1
$checks sessions "$out/overhead/results.json"
log "Nsight Compute on the sampling loop (attnprof's flush, then the call), cache control all and none"
s="batch=8;heads=16;seq=2048;hdim=128;dtype=bf16"
for cc in all none; do
  ncu --clock-control none --cache-control "$cc" -k regex:'fused_attention|attnprof_l2_flush' --launch-count 40 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
      "$bin/attnprof" sweep --axes "$s" --kernels fused --backend cuda --out "$out/seq-$cc" --no-counters \
      --warmup 1 --warmup-seconds 0 --min-seconds 0 --min-samples 8 --max-samples 8 > "$out/seq-$cc.csv" 2>"$out/seq-$cc.err"
  echo "ncu --cache-control $cc on the sequence: exit $?"
  $checks ncu-launches "$out/seq-$cc.csv" --label "cache control $cc"
done
