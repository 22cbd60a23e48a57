#!/usr/bin/env bash
# Why `fused` and PyTorch's FlashAttention-2 differ at a shape: both profiled by Nsight Compute with the
# full section set and per-instruction source counters, on the same input values (attnprof's grid;
# anchor.py times flash on it), side by side per metric, warp-stall reason and SASS opcode
# (ncu_compare.py). bf16, heads 16.
# Usage: bash scripts/device/ncu_compare.sh   (results in $OUT/ncu-compare.tgz)
# ATTNPROF_NCU_SHAPES: BATCH:SEQ[:HDIM[:CAUSAL]] (default "16:1024 4:4096", hdim 128, non-causal).
source "$(dirname "$0")/lib.sh"
phase_begin ncu-compare
for spec in ${ATTNPROF_NCU_SHAPES:-16:1024 4:4096}; do
  IFS=: read -r b n d c <<< "$spec"; d=${d:-128}; c=${c:-0}; tag="b$b-s$n-d$d-c$c"
  log "Nsight Compute, bf16 hdim $d causal $c batch $b heads 16 seq $n"
  ncu --set full --import-source no --clock-control none --nvtx --nvtx-include "attnprof verify/" \
      -k regex:fused_attention -c 1 -f -o "$out/fused-$tag" "$bin/attnprof" sweep --kernels fused --backend cuda \
      --axes "batch=$b;heads=16;seq=$n;hdim=$d;causal=$c;dtype=bf16" --no-counters --min-samples 3 --max-samples 3 \
      --out "$out/fused-$tag-sweep" > "$out/ncu-fused-$tag.log" 2>&1
  echo "ncu fused exit $?"
  echo "[{\"batch\": $b, \"heads\": 16, \"seq\": $n, \"hdim\": $d, \"causal\": $([ "$c" = 1 ] && echo true || echo false), \"dtype\": \"bf16\"}]" > "$out/shape-$tag.json"
  ncu --set full --import-source no --clock-control none -k regex:flash_fwd --launch-skip 2 -c 1 -f -o "$out/flash-$tag" \
      python3 scripts/device/anchor.py shapes "$out/shape-$tag.json" --backends flash --warm --warmup-seconds 0 \
      --samples 2 --out "$out/flash-$tag-anchor.json" > "$out/ncu-flash-$tag.log" 2>&1
  echo "ncu flash exit $?"
  for kern in fused flash; do
    ncu -i "$out/$kern-$tag.ncu-rep" --page details --csv > "$out/$kern-$tag-details.csv" 2>&1
    ncu -i "$out/$kern-$tag.ncu-rep" --page source --csv --print-source sass > "$out/$kern-$tag-sass.csv" 2>&1
  done
  python3 scripts/device/ncu_compare.py fused "$out/fused-$tag-details.csv" "$out/fused-$tag-sass.csv" \
      flash "$out/flash-$tag-details.csv" "$out/flash-$tag-sass.csv" > "$out/compare-$tag.txt" 2>&1
  echo "compare exit $?"; head -c 5500 "$out/compare-$tag.txt"
done
