#!/usr/bin/env bash
# On a GPU with PyTorch: the Python bridge's py: callables (tests/plugins/python/torch_misbehave.py):
# a correct one is measured and verified; one that synchronises inside the timed call and one that
# allocates new device memory in every call fail their points with the reason; the sweep goes on. Then
# torch: kernels at a value head dim of its own (hdim_v), a quantized KV cache, and PyTorch's backward,
# also through a py: callable's autograd graph.
# Usage: python_gpu_test.sh ATTNPROF. Skips (77) without a GPU, PyTorch or the bridge.
set -euo pipefail
attnprof="$(realpath "$1")"
nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
python3 -c "import torch" 2>/dev/null || { echo "no PyTorch: skipped"; exit 77; }
out="${ATTNPROF_GPU_TEST_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/attnprof-python-gpu.XXXXXX")}"
mkdir -p "$out"
cd "$(dirname "$0")/python"
"$attnprof" sweep --backend cuda \
  --kernels py:torch_misbehave:attention,py:torch_misbehave:synchronizes,py:torch_misbehave:allocates,fused \
  --axes "batch=2;heads=8;kv_heads=2;seq=256;hdim=64;causal=0,1;dtype=bf16" --max-seconds 0.2 --no-counters \
  --out "$out/misbehave" >"$out/misbehave.log" 2>&1 || { echo "FAIL: $(tail -n 20 "$out/misbehave.log")" >&2; exit 1; }
python3 - "$out/misbehave/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
def of(name):
    return [r for r in recs if r["kernel"] == name]
for r in of("py:torch_misbehave:attention") + of("fused"):
    assert r["status"] == "ok" and r["verification"]["passed"], (r["key"], r["status"], r["reason"])
for r in of("py:torch_misbehave:synchronizes"):
    assert r["status"] == "failed" and "waited for the GPU inside launch()" in r["reason"], (r["key"], r["reason"])
for r in of("py:torch_misbehave:allocates"):
    assert r["status"] == "failed" and "allocated new device memory" in r["reason"], (r["key"], r["reason"])
for name in ("py:torch_misbehave:synchronizes", "py:torch_misbehave:allocates"):
    print(name, "->", of(name)[0]["reason"][:150])
PY
# A value head dim of its own (hdim 192 / hdim_v 128, and 64 / 128): torch:math computes it from V and O
# as wide as attnprof allocated them and is verified; torch:flash takes one head dim and its refusal is
# the point's "unsupported" with PyTorch's reason; the reference runs it too.
"$attnprof" sweep --backend cuda --kernels torch:math,torch:flash,torch:efficient,torch:cudnn,reference \
  --axes "batch=1;heads=4;seq=512;hdim=192;hdim_v=128;causal=0,1;dtype=bf16 | batch=1;heads=4;seq=512;hdim=64;hdim_v=128;causal=1;dtype=bf16" \
  --max-seconds 0.2 --no-counters --out "$out/hdim_v" >"$out/hdim_v.log" 2>&1 ||
  { echo "FAIL: $(tail -n 20 "$out/hdim_v.log")" >&2; exit 1; }
python3 - "$out/hdim_v/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 15, [(r["key"], r["status"]) for r in recs]
for r in recs:
    assert "v128" in r["key"], r["key"]
    if r["kernel"] in ("torch:math", "reference"):
        assert r["status"] == "ok" and r["verification"]["passed"], (r["key"], r["status"], r["reason"])
    elif r["kernel"] == "torch:flash":
        assert r["status"] == "unsupported" and r["reason"].startswith("PyTorch:"), (r["key"], r["status"], r["reason"])
    else:
        assert r["status"] in ("ok", "unsupported", "failed"), (r["key"], r["status"], r["reason"])  # never wrong
        assert r["status"] != "ok" or r["verification"]["passed"], r["key"]
    print(r["key"], "->", r["status"], r["reason"][:120])
PY
# A quantized KV cache (plugin ABI version 4): a torch callable that takes k_scale and v_scale is given
# float8_e4m3fn and int8 tensors over attnprof's bytes with their scales, at each granularity, and is
# verified against float64; PyTorch's SDPA backends take no quantized input: those points are
# unsupported with the reason, and their unquantized points run as before.
"$attnprof" sweep --backend cuda --kernels py:torch_quant:attention,torch:math,torch:flash \
  --axes "batch=2;heads=8;kv_heads=2;seq=256;hdim=64;causal=0,1;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=tensor,head,token" \
  --max-seconds 0.2 --no-counters --out "$out/quant" >"$out/quant.log" 2>&1 ||
  { echo "FAIL: $(tail -n 20 "$out/quant.log")" >&2; exit 1; }
python3 - "$out/quant/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 3 * 2 * 7, [(r["key"], r["status"]) for r in recs]
for r in recs:
    kv, kernel, what = r["shape"].get("kv_dtype", "none"), r["kernel"], (r["key"], r["status"], r["reason"])
    if kernel == "py:torch_quant:attention" or (kernel == "torch:math" and kv == "none"):
        assert r["status"] == "ok" and r["verification"]["passed"], what
    elif kv != "none":
        assert r["status"] == "unsupported" and r["reason"] == (
            f"{kernel} does not declare ATTNPROF_KERNEL_READS_QUANTIZED_KV (it reads K and V in the dtype only) "
            f"(kv_dtype {kv})"), what
    else:
        assert r["status"] in ("ok", "unsupported") and (r["status"] != "ok" or r["verification"]["passed"]), what
    print(r["key"], r["kernel"], "->", r["status"], r["reason"][:100])
PY
# PyTorch's backward (pass bwd and fwd_bwd), grouped-query heads included: the bridge calls the autograd
# nodes itself on attnprof's thread, so dQ, dK and dV are verified against float64 and the counter
# session sees the kernels (counters "ok"). The causal point with seq_q < seq_k (bottom-right, a
# causal_lower_right bias) runs where the backend takes it and is "unsupported" with the reason elsewhere.
"$attnprof" sweep --backend cuda --kernels torch:flash,torch:cudnn,torch:efficient \
  --axes "batch=2;heads=8;kv_heads=8,2;seq=256;hdim=64;causal=0,1;dtype=bf16;pass=bwd,fwd_bwd | batch=1;heads=4;kv_heads=2;seq_q=128;seq_k=384;hdim=128;causal=1;dtype=bf16;pass=bwd" \
  --max-seconds 0.2 --out "$out/backward" >"$out/backward.log" 2>&1 ||
  { echo "FAIL: $(tail -n 20 "$out/backward.log")" >&2; exit 1; }
python3 - "$out/backward/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 3 * (2 * 2 * 2 + 1), [(r["key"], r["status"]) for r in recs]
ran = 0
for r in recs:
    what = (r["key"], r["status"], r["reason"][:200])
    assert r["status"] in ("ok", "unsupported"), what  # a backend may refuse a shape, never fail or err
    if r["status"] == "ok":
        ran += 1
        assert r["verification"]["passed"], what
        assert len(r["verification"]["grads"]) == 3, what
        assert r["counters"]["status"] == "ok", (r["key"], r["counters"]["status"], r["counters"]["reason"][:200])
    print(r["key"], "->", r["status"], r["counters"]["status"], r["reason"][:100])
square = [r for r in recs if r["kernel"] == "torch:flash" and r["shape"]["seq_q"] == r["shape"]["seq_k"]]
assert len(square) == 8 and all(r["status"] == "ok" for r in square), "flash runs every seq_q == seq_k point"
PY
# A py: callable without a .backward is differentiated through its output's autograd graph, as the
# torch: kernels are (verified gradients, counters ok); one whose output has no graph gets its backward
# points unsupported with the reason.
"$attnprof" sweep --backend cuda --kernels py:torch_misbehave:attention,py:torch_misbehave:no_graph \
  --axes "batch=2;heads=8;kv_heads=8,2;seq=256;hdim=64;causal=0,1;dtype=bf16;pass=bwd,fwd_bwd" \
  --max-seconds 0.2 --out "$out/py_backward" >"$out/py_backward.log" 2>&1 ||
  { echo "FAIL: $(tail -n 20 "$out/py_backward.log")" >&2; exit 1; }
python3 - "$out/py_backward/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 2 * 8, [(r["key"], r["status"]) for r in recs]
for r in recs:
    what = (r["key"], r["status"], r["reason"][:200])
    if r["kernel"] == "py:torch_misbehave:attention":
        assert r["status"] == "ok" and r["verification"]["passed"] and len(r["verification"]["grads"]) == 3, what
        assert r["counters"]["status"] == "ok", (r["key"], r["counters"]["status"], r["counters"]["reason"][:200])
    else:
        assert r["status"] == "unsupported" and "has no backward: its output has no autograd graph" in r["reason"], what
    print(r["key"], "->", r["status"], r["counters"]["status"], r["reason"][:100])
PY
echo "python bridge on the GPU: ok"
