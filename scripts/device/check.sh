#!/usr/bin/env bash
# One short GPU-machine call that checks a build end to end: the GPU test binaries, the example and
# test plugins (tests/plugins/gpu_plugin_test.sh, a sticky CUDA error included), and the Python bridge
# built there with PyTorch callables that break the timed region's rules (python_gpu_test.sh).
# Expects .devcarry/bin (attnprof, test_gpu_*) and .devcarry/plugins, built on the CPU machine.
set -uo pipefail
repo="$(pwd)"
bin="$repo/.devcarry/bin"
work=/tmp/attnprof-check
rm -rf "$work"; mkdir -p "$work"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNPROF_TEST_FIGURES=1  # the GPU tests' "MEASURE ..." lines (tests/gpu/figures.hpp)
export ATTNPROF_CACHE_DIR="$work/cache"
log() { echo "== $(date -u +%H:%M:%S) $*"; }
log "revision $("$bin/attnprof" --version)"
for t in test_gpu_kernels test_gpu_measure; do
  start=$(date +%s)
  timeout 300 "$bin/$t" >"$work/$t.log" 2>&1
  echo "$t: exit $? after $(($(date +%s) - start)) s: $(grep -E "^(All tests passed|test cases:)" "$work/$t.log" | tail -n 1)"
done
log "gpu_plugin_test.sh"
ATTNPROF_GPU_TEST_OUT="$work/gpu-plugin" timeout 300 bash tests/plugins/gpu_plugin_test.sh "$bin/attnprof" .devcarry/plugins .devcarry/plugins
echo "exit $?"
log "the Python bridge, built here"
mkdir -p "$bin/python"
g++ -std=c++20 -shared -fPIC -O2 -Iinclude $(python3-config --includes) kernels/python/bridge.cpp \
    -o "$bin/python/attnprof_python.so" $(python3-config --ldflags --embed) \
    -DATTNPROF_PYTHON_EXECUTABLE="\"$(command -v python3)\"" 2>&1 | grep -v deprecated | head -n 5
cp kernels/python/attnprof_py.py "$bin/python/"
ATTNPROF_GPU_TEST_OUT="$work/python-gpu" timeout 200 bash tests/plugins/python_gpu_test.sh "$bin/attnprof"
echo "exit $?"
log "done"
