#!/usr/bin/env bash
# One GPU-machine call for the Python bridge (docs/python.md), everything written under $OUT:
#   1. the bridge built there, against the python3 that holds torch, with the one command of
#      docs/python.md;
#   2. semantics: every torch: backend beside fused-sm90 on small shapes with GQA, bottom-right causal
#      masks with seq_q != seq_k and decode rows, every point verified (statuses and reasons listed);
#   3. the side-by-side sweep: fa-bench's bf16 shapes and decode shapes (32 query heads over 8 KV heads),
#      attnprof's fused kernels and PyTorch's flash, cuDNN and efficient backends, counters and
#      verification for all; the gap table computed from it (scripts/gap_table.py), with PyTorch's
#      own timing of flash and cuDNN on the same shapes (scripts/device/anchor.py, same call) as a
#      cross-check.
# Expects .devcarry/bin/attnprof (built on the CPU machine).
set -uo pipefail
repo="$(pwd)"
bin="$repo/.devcarry/bin"
out="${OUT:-/tmp/attnprof-python-out}"
work=/tmp/attnprof-python
rm -rf "$work"; mkdir -p "$work" "$out" "$bin/python"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNPROF_CACHE_DIR="$work/cache"
log() { echo "== $(date -u +%H:%M:%S) $*"; }
pack() { tar czf "$out/python.tgz" -C "$work" . 2>/dev/null; }
trap pack EXIT

log "python $(python3 --version 2>&1), torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1)"
log "build the bridge (docs/python.md)"
g++ -std=c++20 -shared -fPIC -O2 -Iinclude $(python3-config --includes) kernels/python/bridge.cpp \
    -o "$bin/python/attnprof_python.so" $(python3-config --ldflags --embed) \
    -DATTNPROF_PYTHON_EXECUTABLE="\"$(command -v python3)\"" 2>&1 | grep -v "deprecated" | head -n 20
cp kernels/python/attnprof_py.py "$bin/python/"
ls -la "$bin/python"
"$bin/attnprof" kernels --plugin "$bin/python/attnprof_python.so" | grep -A2 "^torch:" | head -n 12

log "semantics: small shapes, every torch: backend"
"$bin/attnprof" sweep --kernels torch:flash,torch:cudnn,torch:efficient,torch:math,fused-sm90 \
  --axes "batch=2;heads=8;kv_heads=8,2;seq_q=1,128,256;seq_k=256,1024;hdim=64,128;causal=0,1;dtype=bf16" \
  --max-seconds 0.05 --warmup-seconds 0.05 --min-seconds 0.02 --no-counters --out "$work/semantics" >"$work/semantics.txt" 2>"$work/semantics.log"
echo "exit $?"
python3 scripts/device/checks.py statuses "$work/semantics/results.json"
echo "semantics check exit $?"

log "side by side: fa-bench bf16 + decode, counters on"
# fa-bench's bf16 shapes, then decode: one query row, 32 query heads over 8 KV heads, 4k-64k tokens of KV.
side_axes="tokens=16384;dim=2048;seq=512:16384:x2;hdim=64,128;causal=0,1;dtype=bf16"
side_axes+=" | batch=1,16;heads=32;kv_heads=8;seq_q=1;seq_k=4096,16384,65536;hdim=128;dtype=bf16"
side_axes+=" | batch=64;heads=32;kv_heads=8;seq_q=1;seq_k=4096,16384;hdim=128;dtype=bf16"
start=$(date +%s)
"$bin/attnprof" sweep --kernels fused,fused-sm90,torch:flash,torch:cudnn,torch:efficient --axes "$side_axes" \
  --out "$work/side" --html "$work/side/report.html" --md "$work/side/summary.md" >"$work/side.txt" 2>"$work/side.log"
echo "exit $? after $(($(date +%s) - start)) s"
tail -n 3 "$work/side.log"
log "PyTorch's backends timed on their own at the same shapes (anchor.py)"
timeout 280 python3 scripts/device/anchor.py shapes "$work/side/results.json" --backends flash,cudnn \
  --out "$work/sdpa_shapes.json" >"$work/sdpa.log" 2>&1
echo "exit $?"
python3 scripts/gap_table.py "$work/side/results.json" "$work/sdpa_shapes.json" | tee "$work/gap_table.md"
python3 scripts/device/checks.py statuses "$work/side/results.json"
echo "side-by-side check exit $?"
cp "$work/side/results.json" "$out/side-results.json" 2>/dev/null
log "done"
