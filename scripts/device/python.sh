#!/usr/bin/env bash
# One GPU-machine call for the Python bridge (docs/python.md), everything written under $OUT:
#   1. the bridge built there, against the python3 that holds torch, with the one command of
#      docs/python.md;
#   2. semantics: every torch: backend beside fused-sm90 on small shapes with GQA, bottom-right causal
#      masks with seq_q != seq_k and decode rows, every point verified (statuses and reasons listed);
#   3. the side-by-side sweep: fa-bench (bf16 and fp16) and decode shapes (32 query heads over 8 KV
#      heads), attnprof's kernels and PyTorch's flash, cuDNN and efficient backends, counters and
#      verification for all; the gap table computed from it (scripts/gap_table.py).
# The sweep stops (SIGTERM, every finished point kept) after ATTNPROF_SIDE_SECONDS (default 1500);
# ATTNPROF_RESUME=1 continues the sweep of the previous call (kept in /tmp, or unpacked from
# .devcarry/side.tgz, the side.tgz a previous call returned). ATTNPROF_ANCHOR=1 also times flash and
# cuDNN with PyTorch's own timing at the same shapes (scripts/device/anchor.py) as a cross-check.
# Expects .devcarry/bin/attnprof (built on the CPU machine).
set -uo pipefail
repo="$(pwd)"
bin="$repo/.devcarry/bin"
out="${OUT:-/tmp/attnprof-python-out}"
work=/tmp/attnprof-python
side=/tmp/attnprof-side
resume=${ATTNPROF_RESUME:-0}
rm -rf "$work"; mkdir -p "$work" "$out" "$bin/python"
if [ "$resume" = 1 ] && [ ! -d "$side" ] && [ -f .devcarry/side.tgz ]; then
  mkdir -p "$side" && tar xzf .devcarry/side.tgz -C "$side"
fi
[ "$resume" = 1 ] || rm -rf "$side"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNPROF_CACHE_DIR="$work/cache"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"  # log, build_bridge
pack() { tar czf "$out/python.tgz" -C "$work" . 2>/dev/null; [ -d "$side" ] && tar czf "$out/side.tgz" -C "$side" .; }
trap pack EXIT

log "python $(python3 --version 2>&1), torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1)"
build_bridge "$bin/python"
ls -la "$bin/python"
"$bin/attnprof" kernels --plugin "$bin/python/attnprof_python.so" | grep -A2 "^torch:" | head -n 12

log "semantics: small shapes, every torch: backend"
"$bin/attnprof" sweep --kernels torch:flash,torch:cudnn,torch:efficient,torch:math,fused-sm90 \
  --axes "batch=2;heads=8;kv_heads=8,2;seq_q=1,128,256;seq_k=256,1024;hdim=64,128;causal=0,1;dtype=bf16" \
  --max-seconds 0.05 --warmup-seconds 0.05 --min-seconds 0.02 --no-counters --out "$work/semantics" >"$work/semantics.txt" 2>"$work/semantics.log"
echo "exit $?"
python3 scripts/device/checks.py statuses "$work/semantics/results.json"
echo "semantics check exit $?"

log "side by side: fa-bench + decode, counters on (resume=$resume)"
# fa-bench (bf16 and fp16), then decode: one query row, 32 query heads over 8 KV heads, 1k-32k tokens of KV.
side_axes="tokens=16384;dim=2048;seq=512:16384:x2;hdim=64,128;causal=0,1;dtype=bf16,fp16"
side_axes+=" | batch=1,16,64;heads=32;kv_heads=8;seq_q=1;seq_k=1024,8192,32768;hdim=128;dtype=bf16"
side_kernels=fused,fused-sm90,decode,reference,torch:flash,torch:cudnn,torch:efficient
resume_flag=(); [ "$resume" = 1 ] && [ -f "$side/results.journal.jsonl" ] && resume_flag=(--resume)
start=$(date +%s)
timeout -s TERM "${ATTNPROF_SIDE_SECONDS:-1500}" "$bin/attnprof" sweep --kernels "$side_kernels" --axes "$side_axes" \
  --max-seconds 0.5 "${resume_flag[@]}" --out "$side" --html "$side/report.html" --md "$side/summary.md" \
  --csv "$side/points.csv" >"$work/side.txt" 2>>"$work/side.log"
echo "exit $? after $(($(date +%s) - start)) s"
tail -n 3 "$work/side.log"
sdpa=()
if [ "${ATTNPROF_ANCHOR:-0}" = 1 ]; then
  log "PyTorch's backends timed on their own at the same shapes (anchor.py)"
  timeout 280 python3 scripts/device/anchor.py shapes "$side/results.json" --backends flash,cudnn \
    --out "$work/sdpa_shapes.json" >"$work/sdpa.log" 2>&1
  echo "exit $?"; sdpa=("$work/sdpa_shapes.json")
fi
python3 scripts/gap_table.py "$side/results.json" "${sdpa[@]}" | tee "$work/gap_table.md"
python3 scripts/device/checks.py statuses "$side/results.json"
echo "side-by-side check exit $?"
log "done"
