#!/usr/bin/env bash
# One call on a GPU machine: verifies, measures and writes everything under $OUT.
# Expects prebuilt binaries in .devcarry/bin (attnprof and the GPU test binaries) and the PyTorch
# anchor script in .devcarry/shared/sdpa_anchor.py. Phases (one per call, each well under 10 min):
#   tests-and-sweep : device ceilings, fa-bench sweep of both kernels with counters, and the PyTorch
#                     SDPA anchors before and after it (PyTorch moves more between runs than the
#                     kernels do), side by side; the GPU's SM clock, temperature and power logged
#                     every 200 ms throughout (clocks.csv)
#   check           : GPU tests, the reference's stages at fa-bench shapes (per-launch counters),
#                     Nsight Compute DRAM read/write agreement on two fused and one reference shape
#   agreement       : GPU tests, Nsight Compute agreement (DRAM bytes, duration, tensor ops) on three fa-bench
#                     shapes, profiling overhead vs Nsight Compute, A/A and a planted slowdown for
#                     the regression gate
#   gpu-tests       : the GPU test binaries only
#   tail            : the L2 tail of a call's writes (test_gpu_measure [tail]) and Nsight Compute's one-pass DRAM
#                     bytes of the same fused shape with its cache control on and off; where a batched counter
#                     session's time goes (test_gpu_measure [batch])
#   clock           : the SM clock under load: the timer's GPU tests, two points sampled 600 times
#                     (latency against the clock of each batch), and the fa-bench A/A (144 points, no
#                     counters) twice with the default sampling and twice with $ATTNPROF_AA_SAMPLING
#   fused-tiles     : the fused kernel's tile variants at fa-bench seq >= 1024 (hdim 128, or
#                     $ATTNPROF_TILE_HDIMS): the kernel GPU tests, then sweeps of each variant (and of a
#                     baseline binary in $ATTNPROF_BASE_BIN, if set) in alternating order, twice, beside
#                     PyTorch's FlashAttention-2 (flash only; ATTNPROF_TILE_FLASH=0 skips it), and each run's
#                     ratio to the first; $ATTNPROF_TILE_KERNEL sweeps other kernels ("fused,fused-sm90")
#   flash-pair      : `fused` against PyTorch's FlashAttention-2 at fa-bench seq >= 1024 (hdim 128, or
#                     $ATTNPROF_TILE_HDIMS) in two interleaved rounds (flash then fused, fused then flash),
#                     each side sampled as sdpa_anchor.py does (5 calls, median of 30) and at steady
#                     state (attnprof's default sampling; flash_pair.py's steady timer), flash also on
#                     attnprof's input grid, fused also with L2 kept warm (as flash runs); SM clock of
#                     every figure, clocks.csv throughout
#   ncu-compare     : `fused` and PyTorch's FlashAttention-2 under Nsight Compute (full set, per-SASS-opcode
#                     instructions and stall samples) at bf16 hdim 128 seq 1024 and 4096, on the same inputs,
#                     side by side (ncu_compare.py)
#   aa              : the fa-bench A/A alone (sampling options in $ATTNPROF_AA_SAMPLING)
#   ncu-writes      : one fused call's DRAM bytes under Nsight Compute's kernel and application replay, with
#                     its cache control on and off, beside attnprof's counters of the same call
#   ncu-floor       : Nsight Compute's in-range DRAM writes for a fused call that writes 16.9 KB and a mid-size
#                     one, cache control on and off, beside attnprof's counters of the same calls
#   ncu-state       : where Nsight Compute's extra in-range DRAM writes come from: the fused call and attnprof's
#                     L2 flush inside attnprof's cold sampling loop (L2 empty before each call), under
#                     application and kernel replay, cache control on and off, beside attnprof's counters
#   done-when       : `attnprof sweep --preset fa-bench` with every default (counters on), then a check that
#                     every point's JSON has its latency statistics, raw samples, SM clock, verification,
#                     counters (with passes, profiling time and L2 tail), occupancy, the reference's
#                     three-stage breakdown and a diagnosis; the report's HTML, Markdown and CSV beside it
#   targets         : the measurement targets against Nsight Compute on one build: the three agreement shapes
#                     (DRAM bytes, duration, tensor operations, side by side) and the 24-point overhead sweep
#   multi-gpu       : (a machine with two or more GPUs) quick and fa-bench with --devices all against
#                     --devices 0, every point once, per-device shares, per-point P50 agreement through
#                     the regression gate, wall-time speed-up; two shards on two GPUs merged
set -uo pipefail
phase="${1:?usage: h200.sh tests-and-sweep|gpu-tests|tail|check|agreement|clock|aa|fused-tiles|flash-pair|ncu-compare|ncu-writes|ncu-floor|ncu-state|done-when|targets|multi-gpu}"
bin="${ATTNPROF_DEVICE_BIN:-.devcarry/bin}"
# Everything is written to a work folder and packed into $OUT/<phase>.tgz at the end: only a few files
# come back from such a call.
out=/tmp/attnprof-$phase
rm -rf "$out"; mkdir -p "$out"
clock_log_pid=
pack() {
  [ -n "$clock_log_pid" ] && kill "$clock_log_pid" 2>/dev/null
  tar czf "${OUT:-/tmp}/$phase.tgz" -C "$out" .
}
trap pack EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNPROF_CACHE_DIR="$out/cache"
log() { echo "== $(date -u +%H:%M:%S) $*"; }
# The GPU's SM clock, temperature and power every 200 ms into clocks.csv until the phase ends, to set
# each measurement beside the GPU's state.
start_clock_log() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,nounits \
      -lms 200 > "$out/clocks.csv" 2>/dev/null &
  clock_log_pid=$!
}
# Every GPU test binary, its whole log kept in the work folder, its verdict lines printed.
run_gpu_tests() {
  log "GPU tests"
  for t in "$bin"/test_gpu_*; do
    [ -x "$t" ] || continue
    timeout 240 "$t" > "$out/$(basename "$t").log" 2>&1
    echo "exit $? $t" | tee -a "$out/gpu-tests.log"
    grep -E "^MEASURE|FAILED|REQUIRE|CHECK|with expansion|^  |test cases|assertions|cases, " "$out/$(basename "$t").log" | tail -n 60
  done
}

# The fa-bench sweep (144 points, no counters) twice with the same sampling; $1: label, rest: sampling
# options. Prints each run's wall time and samples per point, how many P50s agree within 0.5/1/2%, the
# largest differences beside the two runs' median SM clocks, and the regression gate's verdict on the pair.
fa_bench_aa() {
  local label=$1; shift
  # The GPU's clock, power, temperature and clock-event reasons every 200 ms while the two sweeps run.
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
      --format=csv,noheader -lms 200 > "$out/aa-$label-smi.csv" 2>/dev/null &
  local smi=$!
  for run in 1 2; do
    t0=$(date +%s.%N)
    "$bin/attnprof" sweep --preset fa-bench --backend cuda --no-counters "$@" --out "$out/aa-$label-$run" >/dev/null 2>&1
    echo "fa-bench $label run $run exit $? in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
  done
  kill "$smi" 2>/dev/null
  python3 - "$out/aa-$label-1/results.json" "$out/aa-$label-2/results.json" "$label" <<'PY' | tee "$out/aa-$label.txt"
import json, sys
for f in sys.argv[1:3]:
    recs = [r for r in json.load(open(f))["records"] if r["status"] == "ok"]
    n = sorted(len(r["samples_us"]) for r in recs)
    stops = {}
    for r in recs: stops[r.get("sampling_stop") or "?"] = stops.get(r.get("sampling_stop") or "?", 0) + 1
    print(f"{f}: samples per point {n[0]}-{n[-1]} (median {n[len(n) // 2]}), "
          f"{sum(sum(r['samples_us']) for r in recs) / 1e6:.1f} s of sampled GPU time, "
          f"{sum(r['wall_s'] for r in recs):.1f} s of point wall time, stops {stops}")
a, b = ({r["key"]: r for r in json.load(open(f))["records"]} for f in sys.argv[1:3])
rows = []
for k, r in a.items():
    o = b.get(k)
    if not o or r["status"] != "ok" or o["status"] != "ok": continue
    d = r["latency"]["p50_us"] / o["latency"]["p50_us"] - 1
    ca, cb = r["clock"].get("sm_mhz_median") or 0, o["clock"].get("sm_mhz_median") or 0
    dc = (ca / cb - 1) if ca and cb else float("nan")
    rows.append((abs(d), d, dc, k, r["latency"]["n"], o["latency"]["n"]))
rows.sort()
n = len(rows)
print(sys.argv[3], "points", n)
for lim in (0.005, 0.01, 0.02):
    w = sum(x[0] <= lim for x in rows)
    print(f"  P50 within {lim:.1%}: {w}/{n} ({100 * w / max(n, 1):.1f}%)")
print("  median |diff| %.3f%%" % (100 * rows[n // 2][0]))
for x in rows[-8:]:
    print(f"  {100 * x[1]:+.2f}% P50, clock median {100 * x[2]:+.2f}%  {x[3]}  samples {x[4]}/{x[5]}")
PY
  "$bin/attnprof" compare "$out/aa-$label-1/results.json" "$out/aa-$label-2/results.json" --md "$out/aa-$label-gate.md" 2>&1 \
      | tail -n 4; echo "$label A/A gate exit ${PIPESTATUS[0]}"
}

# Nsight Compute on the one fused call in the "attnprof verify" range of a sweep of shape $1 (seed 7):
# replay mode $2, cache control $3, metrics $4, label $5 (optional). Writes $out/ncu-$2-$3[-$5].csv and
# prints its DRAM, duration and tensor lines.
ncu_fused_call() {
  local shape=$1 replay=$2 cc=$3 metrics=$4 tag="ncu-$2-$3${5:+-$5}" t0
  t0=$(date +%s.%N)
  ncu --clock-control none --replay-mode "$replay" --cache-control "$cc" --nvtx --nvtx-include "attnprof verify/" \
      -k regex:fused_attention --metrics "$metrics" --csv \
      "$bin/attnprof" sweep --axes "$shape" --kernels fused --backend cuda --seed 7 --out "$out/$tag" --no-counters \
      --min-samples 3 --max-samples 3 > "$out/$tag.csv" 2>"$out/$tag.err"
  echo "ncu --replay-mode $replay --cache-control $cc${5:+ ($5)}: exit $? in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
  grep -E "dram__bytes|gpu__time|tensor" "$out/$tag.csv" | awk -F'","' '{print "   ", $(NF-2), $(NF-1), $NF}'
}

# attnprof's own counters of one fused call of shape $1 (results in $2; further arguments go to the
# sweep): duration, DRAM bytes, the L2 tail, the analytic write and the counter session.
attnprof_fused_counters() {
  local shape=$1 dir=$2; shift 2
  "$bin/attnprof" sweep --axes "$shape" --kernels fused --backend cuda --out "$dir" --min-samples 5 --max-samples 5 \
      "$@" 2>&1 | tail -n 1
  python3 -c "
import json
r = json.load(open('$dir/results.json'))['records'][0]
c = r['counters']
print('  attnprof', {k: c['total'].get(k) for k in ('gpu__time_duration.sum', 'dram__bytes_read.sum', 'dram__bytes_write.sum')},
      'L2 tail', c.get('dram_write_tail_bytes'), 'analytic write', r['cost']['min_bytes_write'], 'session', c.get('session'))"
}

# Nsight Compute against attnprof on the fused kernel at three fa-bench shapes: DRAM bytes, duration and
# tensor operations of the one verification call of each point (the NVTX range "attnprof verify"), the
# same single call whose counters attnprof collects; prints both, side by side.
ncu_filter=(--clock-control none --nvtx --nvtx-include "attnprof verify/")
agreement_shapes() {
  local shapes=("batch=8;heads=16;seq=2048;hdim=128;dtype=bf16" "batch=2;heads=32;seq=8192;hdim=64;dtype=bf16" "batch=4;heads=16;seq=4096;hdim=128;causal=1;dtype=fp16")
  local metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__inst_executed_pipe_tensor_op_hmma.sum
  local i=0 s
  for s in "${shapes[@]}"; do
    i=$((i+1))
    log "agreement shape $i: $s"
    "$bin/attnprof" sweep --axes "$s" --kernels fused --backend cuda --out "$out/agree$i" --min-samples 10 --max-samples 10 2>&1 | tail -n 3
    ncu "${ncu_filter[@]}" -k regex:fused_attention --metrics "$metrics" --csv \
        "$bin/attnprof" sweep --axes "$s" --kernels fused --backend cuda --out "$out/ncu$i" --no-counters --min-samples 3 --max-samples 3 \
        > "$out/ncu$i.csv" 2>"$out/ncu$i.err"; echo "ncu exit $?"
    python3 - "$out/agree$i/results.json" "$out/ncu$i.csv" <<'PY' | tee -a "$out/agreement.txt"
import csv, json, sys
r = json.load(open(sys.argv[1]))["records"][0]
c = r["counters"]; t = c["total"]
# The CSV shares stdout with Nsight Compute's ==PROF== lines and attnprof's own output: start at its header.
rows = list(csv.reader(open(sys.argv[2])))
at = next(i for i, x in enumerate(rows) if "Metric Name" in x)
head = rows[at]; name, value = head.index("Metric Name"), head.index("Metric Value")
ncu = {x[name]: float(x[value].replace(",", "")) for x in rows[at + 1:] if len(x) == len(head)}
print(r["key"])
for m in sorted(ncu):
    a = t.get(m)
    if isinstance(a, (int, float)) and ncu[m]:
        print(f"  {m:45s} attnprof {a:16.6g}  ncu {ncu[m]:16.6g}  {100 * (a / ncu[m] - 1):+6.2f}%")
rw = t["dram__bytes_read.sum"] + t["dram__bytes_write.sum"]
nrw = ncu["dram__bytes_read.sum"] + ncu["dram__bytes_write.sum"]
print(f"  read + write in range: {100 * (rw / nrw - 1):+.2f}%; attnprof write + L2 tail vs analytic: "
      f"{100 * ((t['dram__bytes_write.sum'] + c['dram_write_tail_bytes']) / r['cost']['min_bytes_write'] - 1):+.2f}%; "
      f"tensor ops vs the dense FLOPs: {100 * (max(t.get('sm__ops_path_tensor_src_bf16_dst_fp32.sum', 0), t.get('sm__ops_path_tensor_src_fp16.sum', 0)) / r['cost']['flops_dense'] - 1):+.2f}%"
      + (" (causal: half of it is masked; the diagonal tiles are computed whole)" if r["shape"]["causal"] else ""))
PY
  done
}

# The 24-point sweep of both kernels with counters (batched, and a session per point), without counters,
# and under Nsight Compute collecting attnprof's metric set (read from the batched run's results) on the
# same kernels of one call per point; wall times and ratios in $out/overhead.txt.
overhead_vs_ncu() {
  log "overhead: 24-point sweep with counters vs Nsight Compute on the same kernels"
  local axes="batch=4;heads=16;seq=1024,2048,4096;hdim=64,128;causal=0,1;dtype=bf16" allmetrics t0 t1 t2 t3 n0 n1
  # Sampling pinned (10 samples, no timed warm-up) for both tools, as in every earlier overhead figure.
  local two=(--kernels reference,fused --backend cuda --min-samples 10 --max-samples 10 --warmup-seconds 0 --min-seconds 0)
  t0=$(date +%s.%N)
  "$bin/attnprof" sweep --axes "$axes" "${two[@]}" --out "$out/overhead" 2>&1 | tail -n 2
  t1=$(date +%s.%N)
  "$bin/attnprof" sweep --axes "$axes" "${two[@]}" --out "$out/overhead-batch1" --counter-batch 1 >/dev/null 2>&1
  t2=$(date +%s.%N)
  "$bin/attnprof" sweep --axes "$axes" "${two[@]}" --out "$out/overhead-nocounters" --no-counters >/dev/null 2>&1
  t3=$(date +%s.%N)
  allmetrics=$(python3 -c "import json; print(','.join(sorted(json.load(open('$out/overhead/results.json'))['records'][0]['counters']['total'])))")
  echo "Nsight Compute collects attnprof's $(echo "$allmetrics" | tr ',' '\n' | wc -l) metrics: $allmetrics"
  n0=$(date +%s.%N)
  timeout 400 ncu "${ncu_filter[@]}" -k regex:'fused_attention|fused_sm90|softmax|gemm|nvjet|xmma|cutlass' --metrics "$allmetrics" --csv \
      "$bin/attnprof" sweep --axes "$axes" "${two[@]}" --out "$out/overhead-ncu" --no-counters >"$out/overhead-ncu.csv" 2>"$out/overhead-ncu.err"
  echo "ncu exit $?"
  n1=$(date +%s.%N)
  echo "kernels profiled by ncu: $(grep gpu__time_duration "$out/overhead-ncu.csv" | wc -l)"
  python3 -c "
batched, single, none, ncu = $t1 - $t0, $t2 - $t1, $t3 - $t2, $n1 - $n0
print(f'with_counters_batched_s {batched:.1f} with_counters_per_point_s {single:.1f} no_counters_s {none:.1f} ncu_s {ncu:.1f}')
print(f'whole-run ratio ncu/batched {ncu/batched:.2f}  ncu/per-point {ncu/single:.2f}  (at most ncu/none = {ncu/none:.2f} with free counters)')
print(f'counter-phase ratio (ncu - none)/(batched - none) {(ncu-none)/max(batched-none,1e-9):.2f}  per-point {(ncu-none)/max(single-none,1e-9):.2f}')" | tee "$out/overhead.txt"
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.csv"

case "$phase" in
gpu-tests)
  run_gpu_tests
  ;;
tail)
  log "the L2 tail: writes in the call's range, during idle spins after it, and in the flush after it"
  timeout 120 "$bin/test_gpu_measure" "[tail]" > "$out/tail.log" 2>&1
  echo "exit $? test_gpu_measure [tail]"; grep -E "MEASURE|passed|failed" "$out/tail.log"
  log "where a batched counter session's time goes (test_gpu_measure [batch])"
  timeout 180 "$bin/test_gpu_measure" "[batch]" > "$out/batch.log" 2>&1
  echo "exit $? test_gpu_measure [batch]"; grep -E "session|points in|passed|failed" "$out/batch.log"
  timeout 120 "$bin/test_gpu_measure" "[session-size]" > "$out/session-size.log" 2>&1
  echo "exit $? test_gpu_measure [session-size]"; grep -E "MEASURE|passed|failed" "$out/session-size.log"
  log "24-point sweep with counters (the overhead sweep's points): where its sessions' time went"
  axes="batch=4;heads=16;seq=1024,2048,4096;hdim=64,128;causal=0,1;dtype=bf16"
  t0=$(date +%s.%N)
  "$bin/attnprof" sweep --axes "$axes" --kernels reference,fused --backend cuda --min-samples 10 --max-samples 10 \
      --warmup-seconds 0 --min-seconds 0 --out "$out/overhead" 2>&1 | tail -n 1
  echo "wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  python3 - "$out/overhead/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
seen = set()
for r in recs:
    c = r["counters"]
    s = c.get("session")
    if s and json.dumps(s, sort_keys=True) not in seen:
        seen.add(json.dumps(s, sort_keys=True))
        print("  session:", s, "passes", c["passes"])
tails = [(r["kernel"], r["shape"]["seq_q"], r["shape"]["hdim"], r["shape"]["causal"], r["counters"]["total"].get("dram__bytes_write.sum"),
          r["counters"].get("dram_write_tail_bytes"), r["cost"]["min_bytes_write"]) for r in recs]
for k, s, d, c, w, t, m in tails:
    print(f"  {k:9s} s{s} d{d} c{int(c)}: write {w / 1e6:9.2f} MB + tail {(t or 0) / 1e6:7.2f} MB = {(w + (t or 0)) / m:6.3f} x min write {m / 1e6:9.2f} MB")
PY
  log "the same fused shape: attnprof's counters against Nsight Compute's (one pass: DRAM bytes, duration)"
  s="batch=8;heads=16;seq=2048;hdim=128;dtype=bf16"
  attnprof_fused_counters "$s" "$out/agree"
  for cc in all none; do
    ncu_fused_call "$s" kernel "$cc" gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
  done
  log "Nsight Compute on the sampling loop (attnprof's flush, then the call): each kernel's DRAM writes, cache control all and none"
  for cc in all none; do
    ncu --clock-control none --cache-control "$cc" -k regex:'fused_attention|attnprof_l2_flush' --launch-count 40 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
        "$bin/attnprof" sweep --axes "$s" --kernels fused --backend cuda --out "$out/seq-$cc" --no-counters \
        --warmup 1 --warmup-seconds 0 --min-seconds 0 --min-samples 8 --max-samples 8 > "$out/seq-$cc.csv" 2>"$out/seq-$cc.err"
    echo "ncu --cache-control $cc on the sequence: exit $?"
    python3 - "$out/seq-$cc.csv" "$cc" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr, body = rows[0], rows[1:]
ii, ki, mi, vi, ui = (hdr.index(x) for x in ("ID", "Kernel Name", "Metric Name", "Metric Value", "Metric Unit"))
seq = {}
for r in body:
    seq.setdefault(int(r[ii]), {"k": "flush" if "l2_flush" in r[ki] else "fused"})[r[mi]] = float(r[vi].replace(",", "")) * {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(r[ui], 1)
line = []
for i in sorted(seq):
    e = seq[i]
    line.append(f"{e['k']}:{e.get('dram__bytes_write.sum', 0) / 1e6:.2f}")
print(f"  ncu {sys.argv[2]} writes [MB] in launch order:", " ".join(line))
PY
  done
  ;;
aa)
  log "fa-bench A/A, ${ATTNPROF_AA_SAMPLING:-default sampling}"
  fa_bench_aa "${ATTNPROF_AA_LABEL:-aa}" ${ATTNPROF_AA_SAMPLING:-}
  ;;
ncu-writes)
  # Does Nsight Compute's extra in-range DRAM write (4-6% above attnprof at fa-bench shapes) come from its
  # kernel replay? The same single call (the "attnprof verify" range, fixed seed) under each replay mode
  # and cache control, beside attnprof's own counters of that call.
  s="batch=8;heads=16;seq=2048;hdim=128;dtype=bf16"
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
  attnprof_fused_counters "$s" "$out/attnprof" --seed 7
  for mode in kernel:all kernel:none application:all application:none; do
    ncu_fused_call "$s" "${mode%%:*}" "${mode#*:}" "$metrics"
  done
  # The agreement phase's metric set (several passes: tensor operations too) under application replay.
  ncu_fused_call "$s" application all "$metrics,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__inst_executed_pipe_tensor_op_hmma.sum" \
      agreement-set
  tail -n 3 "$out"/ncu-*.err
  ;;
ncu-floor)
  # Does Nsight Compute count DRAM writes that are not the kernel's? One fused call that writes almost
  # nothing (O and LSE: 16.9 KB) and one mid-size call, each under ncu with its cache control on and off,
  # beside attnprof's own counters of the same call (seed 7).
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
  for s in "batch=1;heads=1;seq=128;hdim=64;dtype=bf16" "batch=1;heads=16;seq=1024;hdim=64;dtype=bf16"; do
    tag=$(echo "$s" | tr -cd '[:alnum:]')
    log "$s"
    attnprof_fused_counters "$s" "$out/attnprof-$tag" --seed 7
    for cc in all none; do ncu_fused_call "$s" kernel "$cc" "$metrics" "$tag"; done
  done
  ;;
ncu-state)
  # Nsight Compute counts ~3 MB more DRAM writes than attnprof in a large fused call's range. Profile the
  # 3rd-5th fused calls of attnprof's own cold sampling loop, where attnprof's flush has left L2 empty
  # and clean (the state Nsight Compute's cache control makes): application replay saves and restores
  # no memory, kernel replay does; with cache control on, Nsight Compute flushes again first. Then
  # attnprof's read-only flush kernel under the same settings (before it: the previous call's dirty lines).
  s="batch=8;heads=16;seq=2048;hdim=128;dtype=bf16"
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
  pin=(--min-samples 8 --max-samples 8 --warmup-seconds 0 --min-seconds 0)
  log "$s: attnprof's own counters"
  attnprof_fused_counters "$s" "$out/attnprof" --seed 7
  for k in fused_attention attnprof_l2_flush; do
    for replay in application kernel; do
      for cc in none all; do
        tag="ncu-$k-$replay-$cc"; t0=$(date +%s.%N)
        ncu --clock-control none --replay-mode "$replay" --cache-control "$cc" -k regex:"$k" --launch-skip 2 --launch-count 3 \
            --metrics "$metrics" --csv "$bin/attnprof" sweep --axes "$s" --kernels fused --backend cuda --seed 7 \
            --out "$out/$tag" --no-counters "${pin[@]}" > "$out/$tag.csv" 2>"$out/$tag.err"
        echo "$k --replay-mode $replay --cache-control $cc: exit $? in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
        grep -E "dram__bytes|gpu__time" "$out/$tag.csv" | awk -F'","' '{print "   ", $(NF-2), $(NF-1), $NF}'
      done
    done
  done
  ;;
targets)
  agreement_shapes
  overhead_vs_ncu
  ;;
done-when)
  log "fa-bench with the defaults, counters on (SIGTERM at 480 s keeps every finished point)"
  start_clock_log
  t0=$(date +%s.%N)
  timeout -s TERM 480 "$bin/attnprof" sweep --preset fa-bench --backend cuda --out "$out/fa-bench" \
      --html "$out/fa-bench/report.html" --md "$out/fa-bench/summary.md" --csv "$out/fa-bench/points.csv" 2>&1 | tail -n 4
  echo "sweep exit ${PIPESTATUS[0]} in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
  python3 - "$out/fa-bench/results.json" <<'PY' | tee "$out/done-when.txt"
import json, math, sys
doc = json.load(open(sys.argv[1]))
recs = doc["records"]
def num(x): return isinstance(x, (int, float)) and math.isfinite(x)
need_total = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "lts__t_bytes.sum",
              "lts__t_sector_hit_rate.pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
              "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "sm__warps_active.avg.pct_of_peak_sustained_active",
              "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum")
problems, kernels = [], {}
for r in recs:
    k = r["key"]; kernels[r["kernel"]] = kernels.get(r["kernel"], 0) + 1
    lat, c, occ, v = r.get("latency", {}), r.get("counters", {}), r.get("occupancy") or {}, r.get("verification", {})
    checks = {
        "status ok": r.get("status") == "ok",
        "verified": v.get("checked") and v.get("passed"),
        "latency": all(num(lat.get(f)) for f in ("p50_us", "p90_us", "p99_us", "p50_ci_low_us", "p50_ci_high_us", "stddev_us")),
        "raw samples": len(r.get("samples_us", [])) == lat.get("n", -1) >= 10,
        "sampling stop": r.get("sampling_stop") in ("converged", "time_budget", "max_samples"),
        "clock": num((r.get("clock") or {}).get("sm_mhz_median")),
        "counters ok": c.get("status") == "ok" and c.get("passes", 0) > 0 and num(c.get("profiling_ms")),
        "counter totals": all(num((c.get("total") or {}).get(m)) for m in need_total),
        "per-kernel counters": len(c.get("per_kernel", [])) == (3 if r["kernel"] == "reference" else 1),
        "L2 tail": num(c.get("dram_write_tail_bytes")),
        "occupancy": all(num(occ.get(f)) for f in ("theoretical_pct", "achieved_pct", "waves")) and bool(occ.get("limiter")),
        "stages": (len(r.get("stages", [])) == 3 and all(num(s.get("share_of_p50")) and num(s.get("share_of_p99")) for s in r["stages"]))
                  if r["kernel"] == "reference" else True,
        "diagnosis": bool((r.get("diagnosis") or {}).get("verdict")),
        "tflops": num(r.get("tflops")),
    }
    bad = [name for name, ok in checks.items() if not ok]
    if bad: problems.append((k, bad, r.get("reason", "")))
print(f"schema {doc.get('schema_version')}, {len(recs)} points {kernels}, git {doc['context'].get('git_revision')}")
print(f"points with every field: {len(recs) - len(problems)} of {len(recs)}")
for k, bad, why in problems[:20]: print("  MISSING", k, bad, why)
ratios = sorted((r["counters"]["dram_write_tail_bytes"] + r["counters"]["total"]["dram__bytes_write.sum"]) / r["cost"]["min_bytes_write"]
                for r in recs if r.get("counters", {}).get("status") == "ok")
if ratios: print(f"DRAM written + L2 tail / analytic: {ratios[0]:.4f}-{ratios[-1]:.4f} (median {ratios[len(ratios) // 2]:.4f})")
stops = {}
for r in recs: stops[r.get("sampling_stop")] = stops.get(r.get("sampling_stop"), 0) + 1
print("sampling stops", stops, "| counter sessions", len({json.dumps(r["counters"].get("session"), sort_keys=True) for r in recs}))
PY
  ls -la "$out/fa-bench"
  ;;
clock)
  log "timer GPU tests"
  timeout 120 "$bin/test_gpu_measure" "timer*" > "$out/test_gpu_measure.log" 2>&1
  echo "exit $? test_gpu_measure timer*"; grep -E "^MEASURE|FAILED|passed|failed" "$out/test_gpu_measure.log" | tail -n 8
  log "two points, 600 samples each"
  "$bin/attnprof" sweep --axes "batch=1;heads=16;seq=16384;hdim=128;dtype=bf16" --kernels fused-sm90 --backend cuda \
      --no-counters --min-samples 600 --max-samples 600 --max-seconds 60 --out "$out/long-sm90" 2>&1 | tail -n 1
  "$bin/attnprof" sweep --axes "batch=4;heads=32;seq=4096;hdim=64;dtype=bf16" --kernels fused --backend cuda \
      --no-counters --min-samples 600 --max-samples 600 --max-seconds 60 --out "$out/long-fused" 2>&1 | tail -n 1
  python3 - "$out/long-sm90/results.json" "$out/long-fused/results.json" <<'PY'
import json, statistics, sys
for f in sys.argv[1:]:
    r = json.load(open(f))["records"][0]
    s, c = r["samples_us"], r["clock"]
    per = c["samples_per_reading"] or 10
    mhz = c["sm_mhz_batches"]
    print(r["key"], "p50", round(r["latency"]["p50_us"], 1), "clock min/median/max", [round(c[k]) for k in ("sm_mhz_min", "sm_mhz_median", "sm_mhz_max")])
    # batch medians of latency against the batch's clock: latency x clock is constant if the clock explains it
    rows = []
    for b in range(min(len(mhz), len(s) // per)):
        lat = statistics.median(s[b * per:(b + 1) * per])
        rows.append((lat, mhz[b], lat * mhz[b]))
    lat = [x[0] for x in rows]; cyc = [x[2] for x in rows]
    print("  batch-median latency spread %.2f%% (max/min-1), latency x clock spread %.2f%%" % (100 * (max(lat) / min(lat) - 1), 100 * (max(cyc) / min(cyc) - 1)))
    print("  first 12 batches (us @ MHz):", [(round(a), round(b)) for a, b, _ in rows[:12]])
    for w in (10, 50, 200):
        if len(s) >= 2 * w:
            meds = [statistics.median(s[i:i + w]) for i in range(0, len(s) - w + 1, w)]
            print(f"  P50 of consecutive windows of {w} samples: spread {100 * (max(meds) / min(meds) - 1):.2f}%")
PY
  log "fa-bench A/A, default sampling"
  fa_bench_aa default
  log "fa-bench A/A, ${ATTNPROF_AA_SAMPLING:-}"
  fa_bench_aa timed ${ATTNPROF_AA_SAMPLING:-}
  ;;
fused-tiles)
  kernels=${ATTNPROF_TILE_KERNEL:-fused}
  log "GPU tests of the kernels"
  timeout 300 "$bin/test_gpu_kernels" > "$out/test_gpu_kernels.log" 2>&1
  echo "exit $? test_gpu_kernels"; grep -E "cases, " "$out/test_gpu_kernels.log"; tail -n 3 "$out/test_gpu_kernels.log"
  hdims=${ATTNPROF_TILE_HDIMS:-128}
  axes="tokens=16384;dim=2048;dtype=bf16,fp16;hdim=$hdims;causal=0,1;seq=1024:16384:x2"
  runs=(${ATTNPROF_TILE_VARIANTS:-fast})
  [ -n "${ATTNPROF_BASE_BIN:-}" ] && runs=(base "${runs[@]}")
  for rep in 1 2; do
    for v in "${runs[@]}"; do
      log "sweep $v (round $rep)"
      # VARIANT@DIR: that variant of the binary in DIR (an experimental build carried beside the lead one).
      if [ "$v" = base ]; then exe="$ATTNPROF_BASE_BIN/attnprof"; cfg=fast
      elif [[ "$v" == *@* ]]; then exe="${v#*@}/attnprof"; cfg=${v%%@*}
      else exe="$bin/attnprof"; cfg=$v; fi
      ATTNPROF_FUSED_CONFIG=$cfg "$exe" sweep --axes "$axes" --kernels "$kernels" --backend cuda --no-counters \
          --out "$out/tiles-${v//[@\/.]/_}-$rep" 2>&1 | tail -n 1
    done
  done
  if [ "${ATTNPROF_TILE_FLASH:-1}" = 1 ]; then
    log "PyTorch FlashAttention-2 at the same shapes (median of 30 calls, as sdpa_anchor.py)"
    PYTHONUNBUFFERED=1 timeout 120 python3 scripts/device/flash_pair.py "$out/flash.json" "$hdims" anchor > "$out/flash.log" 2>&1
    echo "flash exit $?"
  else
    echo "[]" > "$out/flash.json"
  fi
  python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/tiles.txt"
import json, sys
out, runs = sys.argv[1], sys.argv[2:]
flash = {(r["dtype"], r["hdim"], r["seq"], r["causal"]): r["anchor_tflops"] for r in json.load(open(out + "/flash.json"))}
res = {}
for v in runs:
    for rep in (1, 2):
        for r in json.load(open(f"{out}/tiles-{v.replace('@', '_').replace('/', '_').replace('.', '_')}-{rep}/results.json"))["records"]:
            s = r["shape"]
            key = (r["kernel"], s["dtype"], s["hdim"], s["seq_q"], s["causal"])
            res.setdefault(key, {}).setdefault(v, []).append((r["tflops"] or 0, r["status"]))
print("kernel dtype hdim causal seq  flash  " + "  ".join(f"{v:>13s}" for v in runs) + "   ratio to flash (best of 2 rounds)")
for key in sorted(res):
    f = flash.get(key[1:], float("nan"))
    cells = "  ".join("/".join(f"{t:.0f}" for t, _ in res[key].get(v, [])).rjust(13) for v in runs)
    ratios = "  ".join(f"{max(t for t, _ in res[key].get(v, [(0, '')])) / f:.3f}" for v in runs)
    bad = [st for v in runs for _, st in res[key].get(v, []) if st != "ok"]
    print(f"{key[0]} {key[1]} {key[2]:3d} {int(key[4])} {key[3]:5d} {f:6.1f}  {cells}   {ratios} {' '.join(bad)}")
if len(runs) > 1:
    # Each later run against the first, per kernel: the median and range of the per-point ratios of the
    # best-of-2 TFLOP/s (an A/B of two builds or variants).
    for v in runs[1:]:
        for kern in sorted({k[0] for k in res}):
            rs = sorted(max(t for t, _ in res[k][v]) / max(t for t, _ in res[k][runs[0]])
                        for k in res if k[0] == kern and v in res[k] and runs[0] in res[k])
            if rs:
                print(f"{v} / {runs[0]} {kern}: median {rs[len(rs) // 2]:.4f} range {rs[0]:.4f}-{rs[-1]:.4f} over {len(rs)} points")
PY
  ;;
flash-pair)
  start_clock_log
  hdims=${ATTNPROF_TILE_HDIMS:-128}
  axes="tokens=16384;dim=2048;dtype=bf16,fp16;hdim=$hdims;causal=0,1;seq=1024:16384:x2"
  anchor_sampling=(--warmup 5 --warmup-seconds 0 --min-samples 30 --max-samples 30 --min-seconds 0)
  flash() {
    log "flash (round $1)"
    # One JSON line per point in the log: a timeout still leaves every finished point.
    PYTHONUNBUFFERED=1 timeout 300 python3 scripts/device/flash_pair.py "$out/flash-$1.json" "$hdims" > "$out/flash-$1.log" 2>&1
    echo "flash exit $?"
  }
  fused() {
    log "fused: anchor sampling, default sampling, default sampling with L2 warm (round $1)"
    "$bin/attnprof" sweep --axes "$axes" --kernels fused --backend cuda --no-counters "${anchor_sampling[@]}" \
        --out "$out/fused-anchor-$1" 2>&1 | tail -n 1
    "$bin/attnprof" sweep --axes "$axes" --kernels fused --backend cuda --no-counters --out "$out/fused-default-$1" 2>&1 | tail -n 1
    "$bin/attnprof" sweep --axes "$axes" --kernels fused --backend cuda --no-counters --warm --out "$out/fused-warm-$1" 2>&1 | tail -n 1
  }
  flash 1; fused 1; fused 2; flash 2
  python3 - "$out" <<'PY' | tee "$out/pair.txt"
import json, os, sys
out = sys.argv[1]
flash, fused = {}, {}
for rnd in (1, 2):
    for line in open(f"{out}/flash-{rnd}.log"):
        if line.startswith("{"):
            r = json.loads(line)
            for style in ("anchor", "steady", "grid"):
                flash.setdefault((r["dtype"], r["hdim"], r["causal"], r["seq"]), {}).setdefault(style, []).append(
                    (r[style + "_tflops"], r[style + "_sm_mhz"]))
    for style in ("anchor", "default", "warm"):
        path = f"{out}/fused-{style}-{rnd}/results.json"
        for r in json.load(open(path))["records"] if os.path.exists(path) else []:
            s = r["shape"]
            fused.setdefault((s["dtype"], s["hdim"], bool(s["causal"]), s["seq_q"]), {}).setdefault(style, []).append(
                (r["tflops"] or 0, (r.get("clock") or {}).get("sm_mhz_median")))
def cell(values):
    return " / ".join(f"{t:.0f}@{c:.0f}" if c else f"{t:.0f}" for t, c in values)
def best(values):
    return max(t for t, _ in values)
# (fused sampling, flash sampling): like for like, each side's best round.
pairs = (("anchor", "anchor"), ("default", "steady"), ("default", "grid"), ("warm", "grid"))
print("TFLOP/s@MHz per round (fused: median SM clock from its own stamps; flash: NVML right after timing)")
print("ratios, best fused round over best flash round: " + ", ".join(f"fused {a}/flash {b}" for a, b in pairs))
met = [0] * len(pairs)
for key in sorted(fused):
    fu, fl = fused[key], flash.get(key, {})
    name = f"{key[0]} d{key[1]} {'c' if key[2] else 'n'} s{key[3]}"
    if not fl:
        print(f"{name:18s} flash not measured"); continue
    ratios = [best(fu[a]) / best(fl[b]) for a, b in pairs]
    met = [m + (r >= 1) for m, r in zip(met, ratios)]
    cols = [f"flash {s} {cell(fl[s])}" for s in ("anchor", "steady", "grid")] + [f"fused {s} {cell(fu[s])}" for s in ("anchor", "default", "warm")]
    print(f"{name:18s} " + " | ".join(cols) + " | " + " ".join(f"{r:.3f}" for r in ratios))
measured = sum(1 for k in fused if k in flash)
print("points where fused >= flash, of " + str(measured) + ": " + ", ".join(f"{a}/{b} {m}" for (a, b), m in zip(pairs, met)))
PY
  ;;
tests-and-sweep)
  log "SASS of the fused kernel (tensor-core instructions)"
  cuobjdump --dump-sass "$bin/attnprof" 2>/dev/null | grep -oE "\b(HMMA|HGMMA|LDSM|LDGSTS)[.A-Z0-9]*" | sort | uniq -c | tee "$out/sass-summary.txt"
  log "devices"
  "$bin/attnprof" devices --backend cuda 2>&1 | tee "$out/devices.txt"
  start_clock_log
  log "PyTorch SDPA anchors (same call, same GPU), before the sweep"
  PYTHONUNBUFFERED=1 timeout 200 python3 .devcarry/shared/sdpa_anchor.py --out "$out/sdpa_anchor.json" > "$out/sdpa_anchor.log" 2>&1
  echo "anchor exit $?"; tail -n 3 "$out/sdpa_anchor.log"
  log "fa-bench sweep (SIGTERM at 360 s keeps every finished point)"
  start=$(date +%s)
  # ATTNPROF_SWEEP_ARGS: extra sweep options, e.g. the anchor's own sampling (5 warm-up calls, the
  # median of 30) for a like-for-like table: "--warmup 5 --warmup-seconds 0 --min-samples 30
  # --max-samples 30 --min-seconds 0".
  echo "sweep options: ${ATTNPROF_SWEEP_ARGS:-(defaults)}" | tee "$out/sweep-args.txt"
  timeout -s TERM 360 "$bin/attnprof" sweep --preset fa-bench --backend cuda --out "$out/fa-bench" ${ATTNPROF_SWEEP_ARGS:-} \
      --html "$out/fa-bench/report.html" --md "$out/fa-bench/summary.md" --csv "$out/fa-bench/points.csv" \
      2>&1 | tail -n 120
  echo "sweep wall $(( $(date +%s) - start )) s" | tee "$out/sweep-wall.txt"
  log "PyTorch SDPA anchors again, after the sweep"
  PYTHONUNBUFFERED=1 timeout 200 python3 .devcarry/shared/sdpa_anchor.py --out "$out/sdpa_anchor_after.json" > "$out/sdpa_anchor_after.log" 2>&1
  echo "anchor exit $?"
  ;;
check)
  if [ -n "${ATTNPROF_SKIP_GPU_TESTS:-}" ]; then echo "GPU tests skipped (ATTNPROF_SKIP_GPU_TESTS)"; else run_gpu_tests; fi
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
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum
  i=0
  for spec in "fused|batch=8;heads=16;seq=2048;hdim=128;dtype=bf16" "fused|batch=2;heads=32;seq=8192;hdim=64;dtype=bf16" \
              "reference|batch=4;heads=16;seq=2048;hdim=64;dtype=bf16" "fused-sm90|batch=8;heads=16;seq=2048;hdim=128;dtype=bf16"; do
    i=$((i+1)); k="${spec%%|*}"; s="${spec#*|}"
    "$bin/attnprof" sweep --axes "$s" --kernels "$k" --backend cuda --out "$out/agree$i" --min-samples 5 --max-samples 5 >/dev/null 2>&1
    ncu "${ncu_filter[@]}" -k regex:'fused_attention|fused_sm90|softmax|gemm|nvjet|xmma|cutlass' --metrics "$metrics" --csv "$bin/attnprof" sweep --axes "$s" --kernels "$k" --backend cuda \
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
scale = {"Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "byte": 1, "nsecond": 1, "usecond": 1e3, "msecond": 1e6, "Kinst": 1e3, "Minst": 1e6, "Ginst": 1e9}
for m in ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
          "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"):
    t = theirs.get(m, 0) * scale.get(unit.get(m, ""), 1)
    o = ours.get(m, 0)
    print(f"{sys.argv[3]:60s} {m:26s} attnprof {o:.4g} ncu {t:.4g} diff {100 * (o - t) / t if t else float('nan'):+.2f}%")
tail = rec["counters"].get("dram_write_tail_bytes")
if tail is not None:
    w, mw = ours.get("dram__bytes_write.sum", 0), rec["cost"]["min_bytes_write"]
    print(f"{sys.argv[3]:60s} attnprof write {w:.4g} + L2 tail {tail:.4g} = {w + tail:.4g}, {100 * ((w + tail) / mw - 1):+.2f}% of the analytic {mw:.4g}")
PY
  done
  ;;
agreement)
  if [ -n "${ATTNPROF_SKIP_GPU_TESTS:-}" ]; then
    echo "GPU tests skipped (ATTNPROF_SKIP_GPU_TESTS: run by the check phase of the same call)"
  else
    run_gpu_tests
  fi
  agreement_shapes
  overhead_vs_ncu
  log "A/A: P50 of the same 24-point sweep in three runs (batched counters, per-point counters, none)"
  python3 - "$out/overhead/results.json" "$out/overhead-batch1/results.json" "$out/overhead-nocounters/results.json" <<'PY' | tee "$out/aa-p50.txt"
import json, sys
runs = [{r["key"]: r for r in json.load(open(f))["records"]} for f in sys.argv[1:]]
for i, j in ((0, 1), (0, 2), (1, 2)):
    diffs = []
    for key, r in runs[i].items():
        o = runs[j].get(key)
        if o and r["status"] == "ok" and o["status"] == "ok":
            diffs.append(abs(r["latency"]["p50_us"] / o["latency"]["p50_us"] - 1))
    within = sum(d <= 0.01 for d in diffs)
    print(f"runs {i} vs {j}: {within}/{len(diffs)} P50s within 1% ({100 * within / max(len(diffs), 1):.0f}%), worst {100 * max(diffs, default=0):.2f}%")
PY
  log "counters batched vs per point (same 24 points)"
  python3 - "$out/overhead/results.json" "$out/overhead-batch1/results.json" <<'PY' | tee "$out/batch-vs-single.txt"
import json, sys
a, b = ({r["key"]: r for r in json.load(open(f))["records"]} for f in sys.argv[1:])
worst = {}
for key, r in a.items():
    o = b.get(key)
    if not o or r["counters"]["status"] != "ok" or o["counters"]["status"] != "ok":
        print("not comparable:", key, r["counters"]["status"], o and o["counters"]["status"]); continue
    for m in ("dram__bytes_read.sum", "dram__bytes_write.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum", "gpu__time_duration.sum"):
        x, y = r["counters"]["total"].get(m), o["counters"]["total"].get(m)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and y:
            worst[m] = max(worst.get(m, 0), abs(x / y - 1))
    if len(r["counters"]["per_kernel"]) != len(o["counters"]["per_kernel"]):
        print("range count differs:", key, len(r["counters"]["per_kernel"]), len(o["counters"]["per_kernel"]))
for m, w in worst.items():
    print(f"{m}: worst batched/per-point difference {100 * w:.2f}%")
print("passes / profiling_ms of one point:", [(r["counters"].get("passes"), round(r["counters"].get("profiling_ms") or 0)) for r in list(a.values())[:2]])
PY
  log "A/A and planted slowdown"
  gate_axes="batch=4;heads=16;seq=2048,4096;hdim=64,128;causal=0,1;dtype=bf16"
  "$bin/attnprof" sweep --axes "$gate_axes" --kernels fused --backend cuda --no-counters --out "$out/gate-a" --min-samples 30 --max-samples 30 >/dev/null 2>&1
  "$bin/attnprof" sweep --axes "$gate_axes" --kernels fused --backend cuda --no-counters --out "$out/gate-b" --min-samples 30 --max-samples 30 >/dev/null 2>&1
  ATTNPROF_FUSED_CONFIG=small "$bin/attnprof" sweep --axes "$gate_axes" --kernels fused --backend cuda --no-counters --out "$out/gate-slow" --min-samples 30 --max-samples 30 >/dev/null 2>&1
  "$bin/attnprof" compare "$out/gate-a/results.json" "$out/gate-b/results.json" --md "$out/gate-aa.md" 2>&1 | tail -n 12; echo "A/A exit ${PIPESTATUS[0]}"
  "$bin/attnprof" compare "$out/gate-a/results.json" "$out/gate-slow/results.json" --md "$out/gate-slow.md" 2>&1 | tail -n 12; echo "planted-slowdown exit ${PIPESTATUS[0]}"
  log "A/A: the fa-bench sweep (144 points, default sampling, no counters) twice"
  fa_bench_aa fa-bench
  ;;
ncu-compare)
  # Why `fused` and PyTorch's FlashAttention-2 differ at one shape: both profiled by Nsight Compute with
  # the full section set and per-instruction source counters, on the same input values (attnprof's grid).
  for spec in ${ATTNPROF_NCU_SHAPES:-16:1024 4:4096}; do
    b=${spec%%:*}; n=${spec#*:}; tag="b${b}-s${n}"
    log "Nsight Compute, bf16 hdim 128 non-causal batch $b heads 16 seq $n"
    ncu --set full --import-source no --clock-control none --nvtx --nvtx-include "attnprof verify/" \
        -k regex:fused_attention -c 1 -f -o "$out/fused-$tag" "$bin/attnprof" sweep --kernels fused --backend cuda \
        --axes "batch=$b;heads=16;seq=$n;hdim=128;dtype=bf16" --no-counters --min-samples 3 --max-samples 3 \
        --out "$out/fused-$tag-sweep" > "$out/ncu-fused-$tag.log" 2>&1
    echo "ncu fused exit $?"
    ncu --set full --import-source no --clock-control none -k regex:flash_fwd --launch-skip 2 -c 1 -f -o "$out/flash-$tag" \
        python3 - "$b" "$n" > "$out/ncu-flash-$tag.log" 2>&1 <<'PY'
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b, n = int(sys.argv[1]), int(sys.argv[2])
# attnprof's input grid (kernels/common/random.hpp): k / 128, k uniform in [-221, 221].
q, k, v = ((torch.randint(-221, 222, (b, 16, n, 128), device="cuda") / 128).to(torch.bfloat16) for _ in range(3))
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    for _ in range(4):
        F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
PY
    echo "ncu flash exit $?"
    for kern in fused flash; do
      ncu -i "$out/$kern-$tag.ncu-rep" --page details --csv > "$out/$kern-$tag-details.csv" 2>&1
      ncu -i "$out/$kern-$tag.ncu-rep" --page source --csv --print-source sass > "$out/$kern-$tag-sass.csv" 2>&1
    done
    python3 scripts/device/ncu_compare.py fused "$out/fused-$tag-details.csv" "$out/fused-$tag-sass.csv" \
        flash "$out/flash-$tag-details.csv" "$out/flash-$tag-sass.csv" > "$out/compare-$tag.txt" 2>&1
    echo "compare exit $?"; head -c 5500 "$out/compare-$tag.txt"
  done
  ;;
multi-gpu)
  # No NCCL is used here; the multicast switches stay off anyway, as on every shared multi-GPU host.
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  nvidia-smi -L | tee "$out/gpus.txt"
  "$bin/attnprof" devices --backend cuda 2>&1 | tee "$out/devices.txt"
  for preset in quick fa-bench; do
    for devs in all 0; do
      log "$preset --devices $devs"
      t0=$(date +%s.%N)
      timeout -s TERM 280 "$bin/attnprof" sweep --preset "$preset" --backend cuda --devices "$devs" \
          --out "$out/$preset-$devs" 2>&1 | tail -n 4
      echo "$preset $devs wall_s $(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" | tee -a "$out/wall.txt"
    done
    python3 - "$out/$preset-all/results.json" "$out/$preset-0/results.json" "$preset" <<'PY' | tee "$out/$preset-compare.txt"
import collections, json, sys
two, one = (json.load(open(f)) for f in sys.argv[1:3])
keys2 = [r["key"] for r in two["records"]]
keys1 = [r["key"] for r in one["records"]]
print(sys.argv[3], "points: two-GPU", len(keys2), "unique", len(set(keys2)), "single", len(keys1),
      "same set" if sorted(keys2) == sorted(keys1) else "DIFFERENT SETS", "same order" if keys2 == keys1 else "other order")
print("  status two-GPU:", dict(collections.Counter(r["status"] for r in two["records"])),
      "single:", dict(collections.Counter(r["status"] for r in one["records"])))
print("  points per device_id (two-GPU run):", dict(collections.Counter(r["device_id"] for r in two["records"])),
      "single:", dict(collections.Counter(r["device_id"] for r in one["records"])))
by1 = {r["key"]: r for r in one["records"]}
diffs = []
for r in two["records"]:
    o = by1.get(r["key"])
    if o and r["status"] == "ok" and o["status"] == "ok":
        diffs.append((abs(r["latency"]["p50_us"] / o["latency"]["p50_us"] - 1), r["key"], r["device_id"]))
diffs.sort()
n = len(diffs)
if n:
    for lim in (0.01, 0.02, 0.05):
        print(f"  P50 two-GPU vs single within {lim:.0%}: {sum(d <= lim for d, _, _ in diffs)}/{n}")
    print(f"  median |diff| {100 * diffs[n // 2][0]:.2f}%  worst {100 * diffs[-1][0]:.2f}% at {diffs[-1][1]} (device {diffs[-1][2]})")
    for dev in sorted({d for _, _, d in diffs}):
        ds = sorted(d for d, _, dd in diffs if dd == dev)
        print(f"  device {dev}: {len(ds)} points, median |diff| {100 * ds[len(ds) // 2]:.2f}%")
print("  wall_s in context: two-GPU", two["context"]["sweep"].get("wall_s"), "single", one["context"]["sweep"].get("wall_s"))
PY
    log "$preset: the regression gate, two-GPU run against the single-GPU run"
    "$bin/attnprof" compare "$out/$preset-0/results.json" "$out/$preset-all/results.json" --md "$out/$preset-gate.md" 2>&1 | tail -n 6
    echo "$preset gate exit ${PIPESTATUS[0]}" | tee -a "$out/wall.txt"
  done
  log "two shards, one per GPU, at the same time; then merge"
  t0=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=0 "$bin/attnprof" sweep --preset fa-bench --backend cuda --shard 1/2 --out "$out/shard1" > "$out/shard1.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=1 "$bin/attnprof" sweep --preset fa-bench --backend cuda --shard 2/2 --out "$out/shard2" > "$out/shard2.log" 2>&1 &
  wait
  echo "shards wall_s $(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" | tee -a "$out/wall.txt"
  tail -n 2 "$out/shard1.log" "$out/shard2.log"
  "$bin/attnprof" merge "$out/shard1/results.json" "$out/shard2/results.json" -o "$out/merged.json" 2>&1 | tail -n 3
  echo "merge exit ${PIPESTATUS[0]}" | tee -a "$out/wall.txt"
  ;;
esac
log "done"
