#!/usr/bin/env bash
# attnprof's counters against Nsight Compute on one build:
#   1. agreement: DRAM bytes, duration and tensor operations of the one verification call of each point
#      (the NVTX range "attnprof verify", the call whose counters attnprof collects), three fused
#      fa-bench shapes, a reference and a fused-sm90 shape, side by side (checks.py ncu-agreement);
#   2. overhead: a 24-point sweep with counters batched, with a session per point, without counters,
#      and under Nsight Compute collecting attnprof's metric set on the same kernels (checks.py
#      overhead), then the three runs' P50 agreement and batched against per-point counters.
# Usage: bash scripts/device/ncu_agreement.sh   (results in $OUT/ncu-agreement.tgz)
source "$(dirname "$0")/lib.sh"
phase_begin ncu-agreement
status=0
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum
i=0
for spec in "fused|batch=8;heads=16;seq=2048;hdim=128;dtype=bf16" "fused|batch=2;heads=32;seq=8192;hdim=64;dtype=bf16" \
            "fused|batch=4;heads=16;seq=4096;hdim=128;causal=1;dtype=fp16" "reference|batch=4;heads=16;seq=2048;hdim=64;dtype=bf16" \
            "fused-sm90|batch=8;heads=16;seq=2048;hdim=128;dtype=bf16"; do
  i=$((i + 1)); kernel=${spec%%|*}; shape=${spec#*|}
  log "agreement $i: $kernel $shape"
  attnprof_counters "$kernel" "$shape" "$i"
  ncu_verify_call "$kernel" "$shape" "$metrics" "$i"
  $checks ncu-agreement "$out/attnprof-$i/results.json" "$out/ncu-$i.csv" | tee -a "$out/agreement.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done

log "overhead: 24-point sweep with counters against Nsight Compute on the same kernels"
axes="batch=4;heads=16;seq=1024,2048,4096;hdim=64,128;causal=0,1;dtype=bf16"
# Sampling pinned (10 samples, no timed warm-up) for both tools.
two=(--axes "$axes" --kernels reference,fused --backend cuda --min-samples 10 --max-samples 10 --warmup-seconds 0 --min-seconds 0)
t0=$(now); "$bin/attnprof" sweep "${two[@]}" --out "$out/overhead" 2>&1 | tail -n 2; batched=$(since "$t0")
t0=$(now); "$bin/attnprof" sweep "${two[@]}" --out "$out/overhead-batch1" --counter-batch 1 >/dev/null 2>&1; single=$(since "$t0")
t0=$(now); "$bin/attnprof" sweep "${two[@]}" --out "$out/overhead-nocounters" --no-counters >/dev/null 2>&1; none=$(since "$t0")
allmetrics=$($checks metric-names "$out/overhead/results.json")
echo "Nsight Compute collects attnprof's metrics: $allmetrics"
t0=$(now)
timeout 400 ncu --clock-control none --nvtx --nvtx-include "attnprof verify/" \
    -k regex:'fused_attention|fused_sm90|softmax|gemm|nvjet|xmma|cutlass' --metrics "$allmetrics" --csv \
    "$bin/attnprof" sweep "${two[@]}" --out "$out/overhead-ncu" --no-counters >"$out/overhead-ncu.csv" 2>"$out/overhead-ncu.err"
echo "ncu exit $?"; ncu_s=$(since "$t0")
$checks overhead "$batched" "$single" "$none" "$ncu_s" | tee "$out/overhead.txt"
log "the three runs' P50s; counters batched against a session per point"
$checks p50-pairs "$out/overhead/results.json" "$out/overhead-batch1/results.json" "$out/overhead-nocounters/results.json" \
    | tee "$out/p50-pairs.txt"
$checks counters-batched "$out/overhead-batch1/results.json" "$out/overhead/results.json" | tee "$out/batch-vs-single.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit "$status"
