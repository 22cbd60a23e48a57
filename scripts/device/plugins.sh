#!/usr/bin/env bash
# One GPU-machine call for the plugin interface (docs/plugins.md), everything written under $OUT:
#   1. the GPU test binaries (built-in kernels verified through the testbed, the measurement engine);
#   2. tests/plugins/gpu_plugin_test.sh: the example plugins beside built-in kernels with counters,
#      CUPTI launch records, occupancy and verification;
#   3. docs/plugins.md's own plugin copied out of the page into a folder outside the repository, built
#      there with the page's command, swept beside fused-sm90 with counters, and a candidate build
#      (-DWARPS_PER_BLOCK=8, the page's gate example) gated against it with `attnprof compare`.
# Expects .devcarry/bin (attnprof, test_gpu_*) and .devcarry/plugins (the example and test plugins),
# built on the CPU machine for sm_90.
set -uo pipefail
repo="$(pwd)"
bin="$repo/.devcarry/bin"
plugins="$repo/.devcarry/plugins"
out="${OUT:-/tmp/attnprof-plugins-out}"
work=/tmp/attnprof-plugins
rm -rf "$work"; mkdir -p "$work" "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNPROF_CACHE_DIR="$work/cache"
log() { echo "== $(date -u +%H:%M:%S) $*"; }
pack() { tar czf "$out/plugins.tgz" -C "$work" . 2>/dev/null; }
trap pack EXIT

log "device"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
log "revision $("$bin/attnprof" --version)"

for t in test_gpu_kernels test_gpu_measure; do
  log "$t"
  start=$(date +%s)
  timeout 300 "$bin/$t" >"$work/$t.log" 2>&1
  echo "exit $? after $(($(date +%s) - start)) s: $(grep -E "^(All tests passed|test cases:)" "$work/$t.log" | tail -n 1)"
  grep -E "FAILED|failed" "$work/$t.log" | head -n 20
done

log "tests/plugins/gpu_plugin_test.sh"
ATTNPROF_GPU_TEST_OUT="$work/gpu-plugin" timeout 400 bash tests/plugins/gpu_plugin_test.sh "$bin/attnprof" "$plugins" "$plugins"
echo "exit $?"

log "docs/plugins.md's plugin, built outside the repository"
outside="$work/outside"
python3 scripts/device/docs_plugin.py docs/plugins.md "$outside" >/dev/null
cd "$outside"
cat build.sh
ATTNPROF="$repo" bash build.sh || echo "the page's build command failed"
nvcc -shared -Xcompiler -fPIC -O2 -arch=sm_90 -I"$repo/include" -DWARPS_PER_BLOCK=8 my_attention.cu -o candidate.so ||
  echo "the candidate build failed"
"$bin/attnprof" kernels --plugin ./my_attention.so | grep -A3 "^my-attention"
axes="batch=4;heads=16;seq=1024,2048;hdim=64,128;causal=0,1;dtype=bf16"
log "sweep: my-attention beside fused-sm90, counters on"
"$bin/attnprof" sweep --plugin ./my_attention.so --kernels my-attention,fused-sm90 --axes "$axes" \
  --out runs/base --html runs/base/report.html --md runs/base/summary.md 2>"$work/base.log" | tail -n 40
echo "exit $?"
log "the page's gate: baseline and candidate (8 warps per block) builds, my-attention alone"
"$bin/attnprof" sweep --plugin ./my_attention.so --kernels my-attention --axes "$axes" --out runs/gate-base 2>"$work/gate-base.log" | tail -n 3
"$bin/attnprof" sweep --plugin ./candidate.so --kernels my-attention --axes "$axes" --out runs/cand 2>"$work/cand.log" | tail -n 3
log "compare baseline -> candidate"
"$bin/attnprof" compare runs/gate-base/results.json runs/cand/results.json --md gate.md --junit gate.xml >"$work/gate.txt" 2>&1
echo "compare exit $?"
head -n 40 "$work/gate.txt"
cp -r runs gate.md gate.xml my_attention.cu build.sh "$work/" 2>/dev/null
python3 "$repo/scripts/device/checks.py" plugin runs/base/results.json --kernel my-attention
echo "plugin check exit $?"
cd "$repo"
log "prefill check: fa-bench hdim 128 seq 1024/4096, built-in fused kernels, no counters"
"$bin/attnprof" sweep --kernels fused,fused-sm90 --axes "tokens=16384;dim=2048;seq=1024,4096;hdim=128;causal=0,1;dtype=bf16" \
  --no-counters --out "$work/prefill" 2>/dev/null | tail -n 12
cp "$outside/runs/base/results.json" "$out/plugin-results.json" 2>/dev/null
log "done"
