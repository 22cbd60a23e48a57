#!/usr/bin/env bash
# `fused` against PyTorch's FlashAttention-2 at fa-bench seq >= 1024 in two interleaved rounds (flash,
# fused, fused, flash), each side sampled three ways:
#   flash (anchor.py): anchor - randn inputs, L2 warm, 5 calls then exactly 30 samples;
#                      steady - randn inputs, attnprof's cold sampling;
#                      grid   - attnprof's input values and cold sampling (anchor.py's defaults);
#   fused (attnprof):  anchor - 5 warm-up calls, 30 samples; default - the defaults; warm - --warm.
# checks.py flash-pair sets them side by side and counts the points where fused reaches flash.
# Usage: bash scripts/device/flash_pair.sh   (results in $OUT/flash-pair.tgz)
# ATTNPROF_TILE_HDIMS: head dims (default 128).
source "$(dirname "$0")/lib.sh"
phase_begin flash-pair
start_clock_log
hdims=${ATTNPROF_TILE_HDIMS:-128}
axes="tokens=16384;dim=2048;dtype=bf16,fp16;hdim=$hdims;causal=0,1;seq=1024:16384:x2"
flash() {
  log "flash (round $1)"
  mkdir -p "$out/flash-$1"
  local anchor=(fa-bench --seqs 1024,2048,4096,8192,16384 --hdims "$hdims" --backends flash)
  timeout 150 python3 scripts/device/anchor.py "${anchor[@]}" --inputs randn --warm --warmup-calls 5 --warmup-seconds 0 \
      --samples 30 --out "$out/flash-$1/anchor_anchor.json" > "$out/flash-$1/anchor.log" 2>&1; echo "anchor exit $?"
  timeout 150 python3 scripts/device/anchor.py "${anchor[@]}" --inputs randn --out "$out/flash-$1/anchor_steady.json" \
      > "$out/flash-$1/steady.log" 2>&1; echo "steady exit $?"
  timeout 150 python3 scripts/device/anchor.py "${anchor[@]}" --out "$out/flash-$1/anchor_grid.json" \
      > "$out/flash-$1/grid.log" 2>&1; echo "grid exit $?"
}
fused() {
  log "fused: anchor sampling, default sampling, default sampling with L2 warm (round $1)"
  local sweep=(--axes "$axes" --kernels fused --backend cuda --no-counters)
  "$bin/attnprof" sweep "${sweep[@]}" --warmup 5 --warmup-seconds 0 --min-samples 30 --max-samples 30 --min-seconds 0 \
      --out "$out/fused-$1/anchor" 2>&1 | tail -n 1
  "$bin/attnprof" sweep "${sweep[@]}" --out "$out/fused-$1/default" 2>&1 | tail -n 1
  "$bin/attnprof" sweep "${sweep[@]}" --warm --out "$out/fused-$1/warm" 2>&1 | tail -n 1
}
flash 1; fused 1; fused 2; flash 2
$checks flash-pair --flash "$out/flash-1" "$out/flash-2" --fused "$out/fused-1" "$out/fused-2" | tee "$out/pair.txt"
