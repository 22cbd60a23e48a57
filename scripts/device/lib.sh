# shellcheck shell=bash
# Sourced by the GPU-machine phases (scripts/device/*.sh): one phase per call, run from the repository
# root, writing everything under a work folder that is packed into $OUT/<phase>.tgz at the end (only a
# few files come back from such a call). Expects prebuilt binaries in $ATTNPROF_DEVICE_BIN (default
# .devcarry/bin: attnprof, the GPU test and bench binaries).
#   phase_begin NAME   sets $bin, $out (the work folder), $checks, logs the GPU; packs on exit
set -uo pipefail
# The GPU tests print the figures they measure ("MEASURE ..." lines, tests/gpu/figures.hpp) for the
# phases' logs and checks.
export ATTNPROF_TEST_FIGURES=1
phase_begin() {
  phase=$1
  bin="${ATTNPROF_DEVICE_BIN:-.devcarry/bin}"
  out=/tmp/attnprof-$phase
  checks="python3 scripts/device/checks.py"
  rm -rf "$out"; mkdir -p "$out" "${OUT:-/tmp}"
  clock_log_pid=
  trap phase_end EXIT
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export ATTNPROF_CACHE_DIR="$out/cache"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
      --format=csv | tee "$out/gpu.csv"
}
phase_end() {
  [ -n "$clock_log_pid" ] && kill "$clock_log_pid" 2>/dev/null
  tar czf "${OUT:-/tmp}/$phase.tgz" -C "$out" .
  log "done"
}
log() { echo "== $(date -u +%H:%M:%S) $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The GPU's SM clock, temperature and power every 200 ms into $out/clocks.csv until the phase ends.
start_clock_log() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active \
      --format=csv,nounits -lms 200 > "$out/clocks.csv" 2>/dev/null &
  clock_log_pid=$!
}

# Every GPU test binary, its whole log kept, its verdict lines printed.
run_gpu_tests() {
  log "GPU tests"
  local t
  for t in "$bin"/test_gpu_*; do
    [ -x "$t" ] || continue
    timeout 300 "$t" > "$out/$(basename "$t").log" 2>&1
    echo "exit $? $t" | tee -a "$out/gpu-tests.log"
    grep -E "FAILED|with expansion|^  |test cases|assertions" "$out/$(basename "$t").log" | tail -n 40
  done
}

# The fa-bench sweep (144 points, no counters) twice with the same sampling; $1: label, the rest:
# sampling options. The two runs' agreement (checks.py aa) and the regression gate's verdict on them.
fa_bench_aa() {
  local label=$1 run t0; shift
  for run in 1 2; do
    t0=$(now)
    "$bin/attnprof" sweep --preset fa-bench --backend cuda --no-counters "$@" --out "$out/aa-$label-$run" >/dev/null 2>&1
    echo "fa-bench $label run $run exit $? in $(since "$t0") s"
  done
  $checks aa "$out/aa-$label-1/results.json" "$out/aa-$label-2/results.json" --label "$label" | tee "$out/aa-$label.txt"
  "$bin/attnprof" compare "$out/aa-$label-1/results.json" "$out/aa-$label-2/results.json" --md "$out/aa-$label-gate.md" \
      2>&1 | tail -n 4
  echo "$label A/A gate exit ${PIPESTATUS[0]}"
}

# Nsight Compute on the one call in the "attnprof verify" range of a sweep of one point. $1: kernel,
# $2: shape, $3: metrics, $4: tag (output $out/ncu-TAG.csv); further arguments go to ncu.
ncu_verify_call() {
  local kernel=$1 shape=$2 metrics=$3 tag=$4 t0; shift 4
  t0=$(now)
  ncu --clock-control none --nvtx --nvtx-include "attnprof verify/" \
      -k regex:'fused_attention|fused_sm90|softmax|gemm|nvjet|xmma|cutlass' --metrics "$metrics" --csv "$@" \
      "$bin/attnprof" sweep --axes "$shape" --kernels "$kernel" --backend cuda --seed 7 --out "$out/ncu-$tag" \
      --no-counters --min-samples 3 --max-samples 3 > "$out/ncu-$tag.csv" 2>"$out/ncu-$tag.err"
  echo "ncu $tag: exit $? in $(since "$t0") s"
}

# attnprof's own counters of the same point (seed 7), into $out/attnprof-TAG. $1: kernel, $2: shape, $3: tag.
attnprof_counters() {
  "$bin/attnprof" sweep --axes "$2" --kernels "$1" --backend cuda --seed 7 --out "$out/attnprof-$3" \
      --min-samples 5 --max-samples 5 2>&1 | tail -n 1
}

# The Python bridge (docs/python.md) built here, against the python3 that holds torch, into $1 (with
# attnprof_py.py beside it).
build_bridge() {
  local dir=$1
  log "build the bridge (docs/python.md)"
  mkdir -p "$dir"
  g++ -std=c++20 -shared -fPIC -O2 -Iinclude $(python3-config --includes) kernels/python/bridge.cpp \
      -o "$dir/attnprof_python.so" $(python3-config --ldflags --embed) \
      -DATTNPROF_PYTHON_EXECUTABLE="\"$(command -v python3)\"" 2>&1 | grep -v "deprecated" | head -n 20
  cp kernels/python/attnprof_py.py "$dir/"
}
