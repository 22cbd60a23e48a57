#!/usr/bin/env bash
# One call on a GPU machine: verifies, measures and writes everything under $OUT.
# Expects prebuilt binaries in .devcarry/bin (attnprof and the GPU test binaries) and the PyTorch
# anchor script in .devcarry/shared/sdpa_anchor.py. Phases (one per call, each well under 10 min):
#   tests-and-sweep : device ceilings, fa-bench sweep of both kernels with counters,
#                     and the PyTorch SDPA anchors, side by side
#   check           : GPU tests, the reference's stages at fa-bench shapes (per-launch counters),
#                     Nsight Compute DRAM read/write agreement on two fused and one reference shape
#   agreement       : GPU tests, Nsight Compute agreement (DRAM bytes, duration, tensor ops) on three fa-bench
#                     shapes, profiling overhead vs Nsight Compute, A/A and a planted slowdown for
#                     the regression gate
set -uo pipefail
phase="${1:?usage: h200.sh tests-and-sweep|check|agreement}"
bin="${ATTNPROF_DEVICE_BIN:-.devcarry/bin}"
# Everything is written to a work folder and packed into $OUT/<phase>.tgz at the end: only a few files
# come back from such a call.
out=/tmp/attnprof-$phase
rm -rf "$out"; mkdir -p "$out"
pack() { tar czf "${OUT:-/tmp}/$phase.tgz" -C "$out" . ; }
trap pack EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNPROF_CACHE_DIR="$out/cache"
log() { echo "== $(date -u +%H:%M:%S) $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.csv"

case "$phase" in
tests-and-sweep)
  log "SASS of the fused kernel (tensor-core instructions)"
  cuobjdump --dump-sass "$bin/attnprof" 2>/dev/null | grep -oE "\b(HMMA|HGMMA|LDSM|LDGSTS)[.A-Z0-9]*" | sort | uniq -c | tee "$out/sass-summary.txt"
  log "devices"
  "$bin/attnprof" devices --backend cuda 2>&1 | tee "$out/devices.txt"
  log "PyTorch SDPA anchors (same call, same GPU)"
  PYTHONUNBUFFERED=1 timeout 200 python3 .devcarry/shared/sdpa_anchor.py --out "$out/sdpa_anchor.json" > "$out/sdpa_anchor.log" 2>&1
  echo "anchor exit $?"; tail -n 3 "$out/sdpa_anchor.log"
  log "fa-bench sweep (SIGTERM at 360 s keeps every finished point)"
  start=$(date +%s)
  timeout -s TERM 360 "$bin/attnprof" sweep --preset fa-bench --backend cuda --out "$out/fa-bench" \
      --html "$out/fa-bench/report.html" --md "$out/fa-bench/summary.md" --csv "$out/fa-bench/points.csv" \
      2>&1 | tail -n 120
  echo "sweep wall $(( $(date +%s) - start )) s" | tee "$out/sweep-wall.txt"
  ;;
check)
  log "GPU tests"
  for t in "$bin"/test_gpu_*; do
    [ -x "$t" ] || continue
    timeout 240 "$t" 2>&1 | tail -n 12 | tee -a "$out/gpu-tests.log"
    echo "exit ${PIPESTATUS[0]} $t" | tee -a "$out/gpu-tests.log"
  done
  log "reference at fa-bench shapes: stages and per-launch counters"
  ref_axes="batch=4;heads=32;seq=4096;hdim=64;causal=0,1;dtype=bf16|batch=16;heads=16;seq=1024;hdim=128;dtype=bf16|batch=2;heads=16;seq=8192;hdim=128;dtype=fp16"
  "$bin/attnprof" sweep --axes "$ref_axes" --backend cuda --out "$out/ref" --min-samples 10 --max-samples 20 \
      --md "$out/ref/summary.md" 2>&1 | tail -n 12
  python3 - "$out/ref/results.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["records"]:
    d = r.get("diagnosis") or {}
    sh = r["shape"]
    print(r["kernel"], "b{batch} h{heads} s{seq_q} d{hdim} causal={causal} {dtype}".format(**sh), r["status"], "p50", r["latency"].get("p50_us"), "TF", r.get("tflops"), d.get("verdict"))
    for l in d.get("launches", []):
        print("   ", l["name"], round(l["time_share"] * 100), "%", round((l["dram_bytes_per_s"] or 0) / 1e12, 2), "TB/s", l["compute_sol_pct"], l["memory_sol_pct"], l["verdict"])
PY
  log "Nsight Compute DRAM agreement after the read-based L2 flush"
  ncu_filter=(--clock-control none --nvtx --nvtx-include "attnprof verify/")
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
  i=0
  for spec in "fused|batch=8;heads=16;seq=2048;hdim=128;dtype=bf16" "fused|batch=2;heads=32;seq=8192;hdim=64;dtype=bf16" \
              "reference|batch=4;heads=16;seq=2048;hdim=64;dtype=bf16"; do
    i=$((i+1)); k="${spec%%|*}"; s="${spec#*|}"
    "$bin/attnprof" sweep --axes "$s" --kernels "$k" --backend cuda --out "$out/agree$i" --min-samples 5 --max-samples 5 >/dev/null 2>&1
    ncu "${ncu_filter[@]}" --metrics "$metrics" --csv "$bin/attnprof" sweep --axes "$s" --kernels "$k" --backend cuda \
        --out "$out/ncu$i" --no-counters --min-samples 3 --max-samples 3 > "$out/ncu$i.csv" 2>"$out/ncu$i.err"
    python3 - "$out/agree$i/results.json" "$out/ncu$i.csv" "$k $s" <<'PY'
import csv, json, sys
rec = json.load(open(sys.argv[1]))["records"][0]
ours = {}
for kc in rec["counters"]["per_kernel"]:
    for m, v in kc["metrics"].items():
        ours[m] = ours.get(m, 0) + v
rows = [r for r in csv.reader(l for l in open(sys.argv[2]) if l.startswith('"'))]
hdr, body = rows[0], rows[1:]
mi, vi = hdr.index("Metric Name"), hdr.index("Metric Value")
theirs = {}
unit = {r[mi]: r[hdr.index("Metric Unit")] for r in body}
for r in body:
    theirs[r[mi]] = theirs.get(r[mi], 0) + float(r[vi].replace(",", ""))
scale = {"Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "byte": 1, "nsecond": 1, "usecond": 1e3, "msecond": 1e6}
for m in ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"):
    t = theirs.get(m, 0) * scale.get(unit.get(m, ""), 1)
    o = ours.get(m, 0)
    print(f"{sys.argv[3]:60s} {m:26s} attnprof {o:.4g} ncu {t:.4g} diff {100 * (o - t) / t if t else float('nan'):+.2f}%")
PY
  done
  ;;
agreement)
  log "GPU tests"
  for t in "$bin"/test_gpu_*; do
    [ -x "$t" ] || continue
    log "$t"
    timeout 200 "$t" 2>&1 | tail -n 25 | tee -a "$out/gpu-tests.log"
    echo "exit ${PIPESTATUS[0]} $t" | tee -a "$out/gpu-tests.log"
  done
  # Nsight Compute profiles only the kernels of the one verification call of each point (the NVTX
  # range "attnprof verify"), the same single call whose counters attnprof collects.
  ncu_filter=(--clock-control none --nvtx --nvtx-include "attnprof verify/")
  shapes=("batch=8;heads=16;seq=2048;hdim=128;dtype=bf16" "batch=2;heads=32;seq=8192;hdim=64;dtype=bf16" "batch=4;heads=16;seq=4096;hdim=128;causal=1;dtype=fp16")
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__inst_executed_pipe_tensor_op_hmma.sum
  i=0
  for s in "${shapes[@]}"; do
    i=$((i+1))
    log "agreement shape $i: $s"
    "$bin/attnprof" sweep --axes "$s" --kernels fused --backend cuda --out "$out/agree$i" --min-samples 10 --max-samples 10 2>&1 | tail -n 3
    ncu "${ncu_filter[@]}" -k regex:fused_attention --metrics "$metrics" --csv \
        "$bin/attnprof" sweep --axes "$s" --kernels fused --backend cuda --out "$out/ncu$i" --no-counters --min-samples 3 --max-samples 3 \
        > "$out/ncu$i.csv" 2>"$out/ncu$i.err"; echo "ncu exit $?"
    grep -c gpu__time_duration "$out/ncu$i.csv"
  done
  log "overhead: 24-point sweep with counters vs Nsight Compute on the same kernels"
  axes="batch=4;heads=16;seq=1024,2048,4096;hdim=64,128;causal=0,1;dtype=bf16"
  allmetrics=$(cat .devcarry/shared/attnprof-metrics.txt)
  t0=$(date +%s.%N)
  "$bin/attnprof" sweep --axes "$axes" --backend cuda --out "$out/overhead" --min-samples 10 --max-samples 10 2>&1 | tail -n 2
  t1=$(date +%s.%N)
  "$bin/attnprof" sweep --axes "$axes" --backend cuda --out "$out/overhead-nocounters" --no-counters --min-samples 10 --max-samples 10 >/dev/null 2>&1
  t2=$(date +%s.%N)
  timeout 400 ncu "${ncu_filter[@]}" -k regex:'fused_attention|softmax|gemm|nvjet|xmma|cutlass' --metrics "$allmetrics" --csv \
      "$bin/attnprof" sweep --axes "$axes" --backend cuda --out "$out/overhead-ncu" --no-counters --min-samples 10 --max-samples 10 >"$out/overhead-ncu.csv" 2>"$out/overhead-ncu.err"
  echo "ncu exit $?"
  t3=$(date +%s.%N)
  echo "kernels profiled by ncu: $(grep gpu__time_duration "$out/overhead-ncu.csv" | wc -l)"
  python3 -c "
t0,t1,t2,t3=$t0,$t1,$t2,$t3
a,b,c=t1-t0,t2-t1,t3-t2
print(f'with_counters_s {a:.1f} no_counters_s {b:.1f} ncu_s {c:.1f} whole_ratio {c/a:.2f} overhead_ratio {(c-b)/max(a-b,1e-9):.2f}')" | tee "$out/overhead.txt"
  log "A/A and planted slowdown"
  gate_axes="batch=4;heads=16;seq=2048,4096;hdim=64,128;causal=0,1;dtype=bf16"
  "$bin/attnprof" sweep --axes "$gate_axes" --kernels fused --backend cuda --no-counters --out "$out/gate-a" --min-samples 30 --max-samples 30 >/dev/null 2>&1
  "$bin/attnprof" sweep --axes "$gate_axes" --kernels fused --backend cuda --no-counters --out "$out/gate-b" --min-samples 30 --max-samples 30 >/dev/null 2>&1
  ATTNPROF_FUSED_CONFIG=small "$bin/attnprof" sweep --axes "$gate_axes" --kernels fused --backend cuda --no-counters --out "$out/gate-slow" --min-samples 30 --max-samples 30 >/dev/null 2>&1
  "$bin/attnprof" compare "$out/gate-a/results.json" "$out/gate-b/results.json" --md "$out/gate-aa.md" 2>&1 | tail -n 12; echo "A/A exit ${PIPESTATUS[0]}"
  "$bin/attnprof" compare "$out/gate-a/results.json" "$out/gate-slow/results.json" --md "$out/gate-slow.md" 2>&1 | tail -n 12; echo "planted-slowdown exit ${PIPESTATUS[0]}"
  ;;
esac
log "done"
