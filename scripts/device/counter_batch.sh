#!/usr/bin/env bash
# Batched counter sessions (--counter-batch) on a GPU machine: one sweep timed three ways — without
# counters, with a CUPTI session per point (--counter-batch 1) and batched (the default) — and the
# counters of the last two side by side per point (DRAM bytes, tensor ops, range names).
# Usage: scripts/device/counter_batch.sh [ATTNPROF] [OUT_DIR]
#   ATTNPROF defaults to build/attnprof; logs and results go to OUT_DIR (default $OUT, else
#   ./counter-batch-out). AXES and KERNELS override the 24-point sweep.
set -uo pipefail
bin=${1:-build/attnprof}
out=${2:-${OUT:-counter-batch-out}}
axes=${AXES:-"batch=4;heads=16;seq=1024,2048,4096;hdim=64,128;causal=0,1;dtype=bf16"}
kernels=${KERNELS:-reference,fused}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
status=0

# The first sweep on a machine measures the ceilings (cached after): not part of any timing below.
"$bin" sweep --backend cuda --axes "batch=1;heads=1;seq=128;hdim=64;dtype=bf16" --no-counters \
  --out "$out/warmup" >"$out/warmup.log" 2>&1

sweep() {
  local name=$1
  shift
  local start end rc=0
  start=$(date +%s.%N)
  "$bin" sweep --backend cuda --axes "$axes" --kernels "$kernels" --out "$out/$name" "$@" >"$out/$name.log" 2>&1 || rc=$?
  end=$(date +%s.%N)
  [ "$rc" -eq 0 ] || status=1
  python3 -c "import sys; print(f'{sys.argv[1]}: exit {sys.argv[2]}, {float(sys.argv[4]) - float(sys.argv[3]):.1f} s')" \
    "$name" "$rc" "$start" "$end" | tee -a "$out/times.txt"
}
sweep no-counters --no-counters
sweep per-point --counter-batch 1
sweep batched
grep -h "^attnprof: counters" "$out/batched.log" | tee -a "$out/times.txt"

python3 - "$out/per-point/results.json" "$out/batched/results.json" <<'PY' | tee "$out/compare.txt" || status=1
import json, sys
single = {r["key"]: r for r in json.load(open(sys.argv[1]))["records"]}
batched = {r["key"]: r for r in json.load(open(sys.argv[2]))["records"]}
metrics = ["dram__bytes_read.sum", "dram__bytes_write.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum",
           "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "gpu__time_duration.sum"]
worst = {m: (0.0, "") for m in metrics}
bad = 0
for key, s in single.items():
    b = batched.get(key)
    if b is None or s["counters"]["status"] != "ok" or b["counters"]["status"] != "ok":
        print(f"not compared: {key}: per point {s['counters']['status']}, batched "
              f"{b and b['counters']['status']} {b and b['counters']['reason']}")
        continue
    if "batched session not used" in b["counters"]["reason"]:
        print(f"fell back to a session per point: {key}: {b['counters']['reason']}")
        bad += 1
    names_s = [k["kernel"] for k in s["counters"]["per_kernel"]]
    names_b = [k["kernel"] for k in b["counters"]["per_kernel"]]
    if names_s != names_b:
        print(f"range names differ: {key}: {names_s} vs {names_b}")
        bad += 1
    for m in metrics:
        u, v = s["counters"]["total"].get(m, 0.0), b["counters"]["total"].get(m, 0.0)
        d = abs(v / u - 1) if u else (0.0 if v == 0 else 1.0)
        if d > worst[m][0]:
            worst[m] = (d, key)
for m, (d, key) in worst.items():
    print(f"{m}: worst batched vs per point {100 * d:.2f}% ({key})")
    if m != "gpu__time_duration.sum" and d > 0.02:
        bad += 1
ms = lambda rs: sum(r["counters"]["profiling_ms"] for r in rs.values()) / 1e3
print(f"counter time: per point {ms(single):.1f} s, batched {ms(batched):.1f} s")
sys.exit(1 if bad else 0)
PY
exit $status
