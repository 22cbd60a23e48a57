#!/usr/bin/env bash
# Where Nsight Compute's DRAM writes differ from attnprof's (docs/PERFORMANCE.md): one fused call under
# each Nsight Compute replay mode and cache control, beside attnprof's own counters of the same call
# (seed 7): a large call, one that writes 16.9 KB and a mid-size one; then the 3rd-5th fused calls and
# flushes of attnprof's own cold sampling loop (L2 empty before each call) under the same settings.
# Usage: bash scripts/device/ncu_writes.sh   (results in $OUT/ncu-writes.tgz)
source "$(dirname "$0")/lib.sh"
phase_begin ncu-writes
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
i=0
for s in "batch=8;heads=16;seq=2048;hdim=128;dtype=bf16" "batch=1;heads=1;seq=128;hdim=64;dtype=bf16" \
         "batch=1;heads=16;seq=1024;hdim=64;dtype=bf16"; do
  i=$((i + 1))
  log "$s"
  attnprof_counters fused "$s" "$i"
  for mode in kernel:all kernel:none application:all application:none; do
    tag="$i-${mode%%:*}-${mode#*:}"
    ncu_verify_call fused "$s" "$metrics" "$tag" --replay-mode "${mode%%:*}" --cache-control "${mode#*:}"
    $checks ncu-agreement "$out/attnprof-$i/results.json" "$out/ncu-$tag.csv" | grep -E "dram__|gpu__time|L2 tail"
  done
done
log "the sampling loop's calls and flushes"
s="batch=8;heads=16;seq=2048;hdim=128;dtype=bf16"
for k in fused_attention attnprof_l2_flush; do
  for replay in application kernel; do
    for cc in none all; do
      tag="loop-$k-$replay-$cc"
      ncu --clock-control none --replay-mode "$replay" --cache-control "$cc" -k regex:"$k" --launch-skip 2 --launch-count 3 \
          --metrics "$metrics" --csv "$bin/attnprof" sweep --axes "$s" --kernels fused --backend cuda --seed 7 \
          --out "$out/$tag" --no-counters --min-samples 8 --max-samples 8 --warmup-seconds 0 --min-seconds 0 \
          > "$out/$tag.csv" 2>"$out/$tag.err"
      echo "$k --replay-mode $replay --cache-control $cc: exit $?"
      $checks ncu-launches "$out/$tag.csv" --label "$k $replay $cc"
    done
  done
done
