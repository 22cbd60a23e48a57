#!/usr/bin/env bash
# Several GPUs (a machine with two or more): quick and fa-bench with --devices all against --devices 0
# (checks.py devices: every point once, the same set, per-point P50 agreement; then the regression
# gate on the pair and the wall-time speed-up), and two shards on two GPUs at once, merged.
# Usage: bash scripts/device/multi_gpu.sh   (results in $OUT/multi-gpu.tgz)
source "$(dirname "$0")/lib.sh"
phase_begin multi-gpu
# No NCCL is used here; the multicast switches stay off anyway, as on every shared multi-GPU host.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
status=0
nvidia-smi -L | tee "$out/gpus.txt"
"$bin/attnprof" devices --backend cuda 2>&1 | tee "$out/devices.txt"
for preset in quick fa-bench; do
  for devs in all 0; do
    log "$preset --devices $devs"
    t0=$(now)
    timeout -s TERM 280 "$bin/attnprof" sweep --preset "$preset" --backend cuda --devices "$devs" \
        --out "$out/$preset-$devs" 2>&1 | tail -n 4
    echo "$preset $devs wall_s $(since "$t0")" | tee -a "$out/wall.txt"
  done
  $checks devices "$out/$preset-all/results.json" "$out/$preset-0/results.json" --label "$preset" \
      | tee "$out/$preset-compare.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  "$bin/attnprof" compare "$out/$preset-0/results.json" "$out/$preset-all/results.json" --md "$out/$preset-gate.md" \
      2>&1 | tail -n 6
  echo "$preset gate exit ${PIPESTATUS[0]}" | tee -a "$out/wall.txt"
done
log "two shards, one per GPU, at the same time; then merge"
t0=$(now)
CUDA_VISIBLE_DEVICES=0 "$bin/attnprof" sweep --preset fa-bench --backend cuda --shard 1/2 --out "$out/shard1" > "$out/shard1.log" 2>&1 &
CUDA_VISIBLE_DEVICES=1 "$bin/attnprof" sweep --preset fa-bench --backend cuda --shard 2/2 --out "$out/shard2" > "$out/shard2.log" 2>&1 &
wait
echo "shards wall_s $(since "$t0")" | tee -a "$out/wall.txt"
"$bin/attnprof" merge "$out/shard1/results.json" "$out/shard2/results.json" -o "$out/merged.json" 2>&1 | tail -n 3
merge=${PIPESTATUS[0]}; echo "merge exit $merge" | tee -a "$out/wall.txt"
[ "$merge" -eq 0 ] || status=1
exit "$status"
