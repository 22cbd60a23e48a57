#!/usr/bin/env bash
# One GPU-machine call for the head dims (and, where the build has them, sliding windows), everything
# packed into $OUT/hdims.tgz:
#   1. the GPU correctness tests (every head dim of fused and fused-sm90 against float64);
#   2. the Python bridge built there (docs/python.md), so that PyTorch's flash and cuDNN run in the sweep;
#   3. the side-by-side sweep: hdim 32-256, causal and not, 16k tokens per batch, attnprof's kernels
#      beside torch:flash and torch:cudnn, every point verified; the gap table computed from it.
# ATTNPROF_HDIM_SECONDS bounds the sweep (default 420; every finished point is kept);
# ATTNPROF_HDIM_TESTS=0 skips step 1. ATTNPROF_HDIM_AXES replaces the sweep's axes.
# Expects .devcarry/bin/attnprof and the GPU test binaries (built on the CPU machine).
source "$(dirname "$0")/lib.sh"
phase_begin hdims

if [ "${ATTNPROF_HDIM_TESTS:-1}" = 1 ]; then run_gpu_tests; fi

log "build the bridge (docs/python.md)"
mkdir -p "$out/python"
g++ -std=c++20 -shared -fPIC -O2 -Iinclude $(python3-config --includes) kernels/python/bridge.cpp \
    -o "$out/python/attnprof_python.so" $(python3-config --ldflags --embed) \
    -DATTNPROF_PYTHON_EXECUTABLE="\"$(command -v python3)\"" 2>&1 | grep -v "deprecated" | head -n 20
cp kernels/python/attnprof_py.py "$out/python/"
plugin=(--python-bridge "$out/python/attnprof_python.so")

log "side by side: head dims"
axes="${ATTNPROF_HDIM_AXES:-tokens=16384;heads=16;seq=1024:8192:x2;hdim=32,64,96,128,192,256;causal=0,1;dtype=bf16}"
t0=$(now)
timeout -s TERM "${ATTNPROF_HDIM_SECONDS:-420}" "$bin/attnprof" sweep "${plugin[@]}" \
  --kernels fused,fused-sm90,torch:flash,torch:cudnn --axes "$axes" --no-counters --max-seconds 0.3 \
  --out "$out/side" --md "$out/side/summary.md" >"$out/side.txt" 2>"$out/side.log"
echo "sweep exit $? in $(since "$t0") s"
tail -n 3 "$out/side.log"
python3 scripts/gap_table.py "$out/side/results.json" | tee "$out/gap_table.md"
$checks statuses "$out/side/results.json"
echo "statuses check exit $?"
