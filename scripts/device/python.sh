#!/usr/bin/env bash
# One GPU-machine call for the Python bridge (docs/python.md), everything written under $OUT:
#   1. the bridge built there, against the python3 that holds torch, with the one command of
#      docs/python.md;
#   2. semantics: every torch: backend beside fused-sm90 on small shapes with GQA, bottom-right causal
#      masks with seq_q != seq_k and decode rows, every point verified (statuses and reasons listed);
#   3. the side-by-side sweep: fa-bench's bf16 shapes and decode shapes (32 query heads over 8 KV heads),
#      attnprof's fused kernels and PyTorch's flash, cuDNN and efficient backends, counters and
#      verification for all; the gap table computed from it (scripts/gap_table.py), with PyTorch's
#      own timing of flash on the same shapes (sdpa_shapes.py, same call) as a cross-check.
# Expects .devcarry/bin/attnprof (built on the CPU machine) and .devcarry/shared/sdpa_shapes.py.
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
python3 - "$work/semantics/results.json" <<'PY'
import collections, json, sys
recs = json.load(open(sys.argv[1]))["records"]
by = collections.Counter((r["kernel"], r["status"]) for r in recs)
for (k, s), n in sorted(by.items()):
    print(f"{k:16} {s:12} {n}")
bad = [r for r in recs if r["status"] == "ok" and not r["verification"]["passed"]]
print("verified ok points failing verification:", len(bad))
reasons = collections.Counter((r["kernel"], r["reason"][:150]) for r in recs if r["status"] not in ("ok",))
for (k, why), n in reasons.most_common(12):
    print(f"  {k}: {n}x {why}")
PY

log "side by side: fa-bench bf16 + decode, counters on"
python3 - "$work/shapes.json" <<'PY'
import json, sys
shapes = []
for hdim in (64, 128):
    for causal in (0, 1):
        for seq in (512, 1024, 2048, 4096, 8192, 16384):
            shapes.append({"batch": 16384 // seq, "heads": 2048 // hdim, "seq_q": seq, "seq_k": seq,
                           "hdim": hdim, "causal": causal, "dtype": "bf16"})
for batch, kv in ((1, 4096), (1, 16384), (1, 65536), (16, 4096), (16, 16384), (16, 65536), (64, 4096), (64, 16384)):
    shapes.append({"batch": batch, "heads": 32, "kv_heads": 8, "seq_q": 1, "seq_k": kv, "hdim": 128,
                   "causal": 0, "dtype": "bf16"})
json.dump({"shapes": shapes}, open(sys.argv[1], "w"))
print(len(shapes), "shapes")
PY
start=$(date +%s)
"$bin/attnprof" sweep --kernels fused,fused-sm90,torch:flash,torch:cudnn,torch:efficient --spec-file "$work/shapes.json" \
  --out "$work/side" --html "$work/side/report.html" --md "$work/side/summary.md" >"$work/side.txt" 2>"$work/side.log"
echo "exit $? after $(($(date +%s) - start)) s"
tail -n 3 "$work/side.log"
log "PyTorch's own timing of the same shapes (sdpa_shapes.py)"
timeout 200 python3 .devcarry/shared/sdpa_shapes.py "$work/side/results.json" "$work/sdpa_shapes.json" >"$work/sdpa.log" 2>&1
echo "exit $?"
python3 scripts/gap_table.py "$work/side/results.json" "$work/sdpa_shapes.json" | tee "$work/gap_table.md"
python3 - "$work/side/results.json" <<'PY'
import collections, json, sys
recs = json.load(open(sys.argv[1]))["records"]
print("statuses:", dict(collections.Counter((r["kernel"], r["status"]) for r in recs)))
print("counters:", dict(collections.Counter((r["kernel"], r["counters"]["status"]) for r in recs)))
print("verified:", sum(r["verification"]["passed"] for r in recs if r["status"] == "ok"), "of",
      sum(r["status"] == "ok" for r in recs))
for r in recs:
    if r["status"] != "ok":
        print("  ", r["key"], r["status"], r["reason"][:160])
for r in recs:
    if r["kernel"].startswith("torch:") and r["shape"]["seq_q"] == 4096 and r["shape"]["hdim"] == 128 and not r["shape"]["causal"]:
        d = r["diagnosis"] or {}
        print(r["key"], "verdict", d.get("verdict"), "launches", [(l["name"][:50], l["grid"], l["registers_per_thread"]) for l in r["launches"]])
PY
cp "$work/side/results.json" "$out/side-results.json" 2>/dev/null
log "done"
