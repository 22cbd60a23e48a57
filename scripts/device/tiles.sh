#!/usr/bin/env bash
# The fused kernel's tile variants at fa-bench seq >= 1024 beside PyTorch's FlashAttention-2: the
# kernel GPU tests, then sweeps of each variant (and of a baseline binary in $ATTNPROF_BASE_BIN, if
# set) in alternating order, twice, and anchor.py's flash at the same shapes; checks.py tiles sets
# them side by side, with each run's ratio to the first.
# Usage: bash scripts/device/tiles.sh   (results in $OUT/tiles.tgz)
# ATTNPROF_TILE_VARIANTS (default "fast"; VARIANT@DIR: that variant of the binary in DIR),
# ATTNPROF_TILE_HDIMS (default 128), ATTNPROF_TILE_KERNEL (default fused; e.g. "fused,fused-sm90"),
# ATTNPROF_TILE_FLASH=0 skips PyTorch.
source "$(dirname "$0")/lib.sh"
phase_begin tiles
log "GPU tests of the kernels"
timeout 300 "$bin/test_gpu_kernels" > "$out/test_gpu_kernels.log" 2>&1
echo "exit $? test_gpu_kernels"; tail -n 3 "$out/test_gpu_kernels.log"
hdims=${ATTNPROF_TILE_HDIMS:-128}
axes="tokens=16384;dim=2048;dtype=bf16,fp16;hdim=$hdims;causal=0,1;seq=1024:16384:x2"
read -r -a runs <<< "${ATTNPROF_TILE_VARIANTS:-fast}"
[ -n "${ATTNPROF_BASE_BIN:-}" ] && runs=(base "${runs[@]}")
declare -A dirs
for rep in 1 2; do
  for v in "${runs[@]}"; do
    log "sweep $v (round $rep)"
    if [ "$v" = base ]; then exe="$ATTNPROF_BASE_BIN/attnprof"; cfg=fast
    elif [[ "$v" == *@* ]]; then exe="${v#*@}/attnprof"; cfg=${v%%@*}
    else exe="$bin/attnprof"; cfg=$v; fi
    dir="$out/tiles-${v//[@\/.]/_}-$rep"
    ATTNPROF_FUSED_CONFIG=$cfg "$exe" sweep --axes "$axes" --kernels "${ATTNPROF_TILE_KERNEL:-fused}" --backend cuda \
        --no-counters --out "$dir" 2>&1 | tail -n 1
    dirs[$v]="${dirs[$v]:+${dirs[$v]},}$dir"
  done
done
if [ "${ATTNPROF_TILE_FLASH:-1}" = 1 ]; then
  log "PyTorch FlashAttention-2 at the same shapes (anchor.py)"
  PYTHONUNBUFFERED=1 timeout 200 python3 scripts/device/anchor.py fa-bench --seqs 1024,2048,4096,8192,16384 \
      --hdims "$hdims" --backends flash --out "$out/flash.json" > "$out/flash.log" 2>&1
  echo "flash exit $?"
else
  echo "[]" > "$out/flash.json"
fi
specs=(); for v in "${runs[@]}"; do specs+=("$v=${dirs[$v]}"); done
$checks tiles "$out/flash.json" "${specs[@]}" | tee "$out/tiles.txt"
