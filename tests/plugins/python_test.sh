#!/usr/bin/env bash
# attnprof's Python bridge on the CPU backend with numpy callables (tests/plugins/python/): a correct
# attention beside a built-in kernel, verified against float64 with GQA and the causal mask, at a value
# head dim of its own, on a quantized KV cache (the bytes and their scales), and backward points
# through a callable's own .backward; then a
# module that does not import, a function that raises, returns the wrong shape, the wrong dtype or
# wrong numbers: each a reason on its own points while the sweep goes on. Skips (77) when the bridge
# was not built (no embeddable Python) or numpy is missing for the Python it embeds.
# Usage: python_test.sh ATTNPROF BRIDGE_DIR
source "$(dirname "$0")/../run/lib.sh"
bridge="$2/attnprof_python.so"
[[ -f "$bridge" ]] || { echo "no Python bridge: skipped"; exit 77; }
attnprof="$(realpath "$attnprof")"
here="$(cd "$(dirname "$0")/python" && pwd)"
cd "$here"
axes="batch=1;heads=4;kv_heads=2;seq=32,48;hdim=32;causal=0,1;dtype=fp32"
run() {
  local out="$1"
  shift
  "$attnprof" sweep --axes "$axes" "${fast[@]}" --out "$scratch/$out" "$@" >"$scratch/$out.log" 2>&1 ||
    fail "sweep $*: $(tail -n 5 "$scratch/$out.log")"
}
run good --kernels py:np_attention:attention,fused
python3 - "$scratch/good/results.json" <<'PY' || fail "the numpy callable's points"
import json, sys
res = json.load(open(sys.argv[1]))
mine = [r for r in res["records"] if r["kernel"] == "py:np_attention:attention"]
assert len(mine) == 4 and len(res["records"]) == 8
for r in mine:
    assert r["status"] == "ok", (r["key"], r["status"], r["reason"])
    assert r["verification"]["passed"] and not r["verification"]["lse_checked"], r["verification"]
    assert r["latency"]["n"] > 0 and r["diagnosis"]
p = res["context"]["plugins"][0]
assert p["name"] == "attnprof-python" and "py:np_attention:attention" in p["kernels"], p
PY
# A value head dim of its own: the bridge hands the callable V and O hdim_v wide (their strides say
# it), and the callable's O is verified at that width.
"$attnprof" sweep --axes "batch=1;heads=4;kv_heads=2;seq=33;hdim=32;hdim_v=16,48;causal=1;dtype=fp32" "${fast[@]}" \
  --kernels py:np_attention:attention,fused --out "$scratch/dv" >"$scratch/dv.log" 2>&1 ||
  fail "hdim_v sweep: $(tail -n 5 "$scratch/dv.log")"
python3 - "$scratch/dv/results.json" <<'PY' || fail "the numpy callable's hdim_v points"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 4, [(r["key"], r["status"]) for r in recs]
for r in recs:
    assert f"d32v{r['shape']['hdim_v']}" in r["key"], r["key"]
    assert r["status"] == "ok" and r["verification"]["passed"], (r["key"], r["status"], r["reason"])
PY
"$attnprof" sweep --axes "batch=1;heads=4;kv_heads=2;seq=33;hdim=32;hdim_v=16;dtype=fp32" "${fast[@]}" \
  --kernels py:np_attention:wrong_shape,fused --out "$scratch/dv_shape" >"$scratch/dv_shape.log" 2>&1 ||
  fail "hdim_v wrong_shape sweep: $(tail -n 5 "$scratch/dv_shape.log")"
grep -q "expected (1, 4, 33, 16) (\[batch, heads, seq_q, hdim_v\])" "$scratch/dv_shape/results.json" ||
  fail "a wrong O shape at hdim_v 16: $(grep -o '"reason": "[^"]*"' "$scratch/dv_shape/results.json")"
# A quantized KV cache (plugin ABI version 4), fp8 and int8 at each scale granularity: a callable that
# takes k_scale and v_scale is given attnprof's bytes (uint8 E4M3 bits, int8) and scales that broadcast
# against them, and is verified against float64; one that reads the bytes but not their scales is
# incorrect there; one without the parameters gets those points unsupported with the reason. All three
# run the unquantized point.
"$attnprof" sweep --axes "batch=2;heads=4;kv_heads=2;seq=33;hdim=32;causal=1;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=tensor,head,token" \
  "${fast[@]}" --kernels py:np_attention:quantized,py:np_attention:ignores_scales,py:np_attention:attention \
  --out "$scratch/quant" >"$scratch/quant.log" 2>&1 || fail "quantized sweep: $(tail -n 5 "$scratch/quant.log")"
python3 - "$scratch/quant/results.json" <<'PY' || fail "the numpy callables' quantized points"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 3 * 7, [(r["key"], r["status"]) for r in recs]
for r in recs:
    kv, kernel, what = r["shape"].get("kv_dtype", "none"), r["kernel"], (r["key"], r["status"], r["reason"])
    if kv == "none" or kernel == "py:np_attention:quantized":
        assert r["status"] == "ok" and r["verification"]["passed"] and r["verification"]["rows_checked"] > 0, what
    elif kernel == "py:np_attention:ignores_scales":
        assert r["status"] == "incorrect" and not r["verification"]["passed"], what
    else:
        assert r["status"] == "unsupported" and r["reason"] == (
            "py:np_attention:attention takes no k_scale and v_scale keyword parameters: it does not read a "
            f"quantized KV cache (kv_dtype {kv}; docs/python.md)"), what
PY
# The backward pass: a callable with a .backward (numpy's, returning dQ, dK and dV) runs bwd and fwd_bwd
# points, grouped-query heads and the bottom-right causal mask included, each gradient verified against
# float64 (the check's LSE from the float64 forward: a callable writes none); one whose dV is wrong is
# incorrect with dV named; one returning dQ of the wrong shape fails naming dq; one without a backward
# runs its forward points and gets its backward points unsupported with the reason.
bwd_kernels=py:np_attention:attention,py:np_attention:wrong_dv,py:np_attention:short_dq,py:np_attention:quantized
"$attnprof" sweep --axes "batch=2;heads=4;kv_heads=2;seq_q=24;seq_k=24,37;hdim=32;causal=0,1;dtype=fp32;pass=fwd,bwd,fwd_bwd" \
  "${fast[@]}" --kernels "$bwd_kernels" --out "$scratch/bwd" >"$scratch/bwd.log" 2>&1 ||
  fail "backward sweep: $(tail -n 5 "$scratch/bwd.log")"
python3 - "$scratch/bwd/results.json" <<'PY' || fail "the numpy callables' backward points"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 4 * 12, [(r["key"], r["status"]) for r in recs]
for r in recs:
    kernel, what = r["kernel"].split(":")[-1], (r["key"], r["status"], r["reason"][:300])
    v = r["verification"]
    if r["shape"].get("pass", "fwd") == "fwd":
        assert r["status"] == "ok" and v["passed"], what
    elif kernel == "attention":
        assert r["status"] == "ok" and v["passed"] and not v["lse_checked"], what
        assert sorted(v["grads"]) == ["dk", "dq", "dv"] and all(g["passed"] for g in v["grads"].values()), what
    elif kernel == "wrong_dv":
        assert r["status"] == "incorrect" and not v["grads"]["dv"]["passed"], what
        assert v["grads"]["dq"]["passed"] and v["grads"]["dk"]["passed"], what
        assert r["reason"].startswith("verification failed: max |dv - dv_f64| "), what
    elif kernel == "short_dq":
        assert r["status"] == "failed" and "the backward returned shape (2, 4, 1, 32), expected (2, 4, 24, 32) (dq, as q)" in r["reason"], what
    else:
        assert r["status"] == "unsupported" and r["reason"] == (
            "py:np_attention:quantized has no backward: give the function a .backward(q, k, v, o, d_o, *, causal, "
            "scale) returning (dq, dk, dv) (docs/python.md)"), what
PY
check() {
  local name="$1" status="$2" text="$3"
  run "$name" --kernels "py:$name,fused"
  python3 - "$scratch/$name/results.json" "py:$name" "$status" "$text" <<'PY' || fail "py:$name: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
mine = [r for r in recs if r["kernel"] == sys.argv[2]]
assert len(mine) == 4, len(mine)
for r in mine:
    assert r["status"] == sys.argv[3] and sys.argv[4] in r["reason"], (r["key"], r["status"], r["reason"])
assert all(r["status"] == "ok" for r in recs if r["kernel"] == "fused")
PY
}
check np_broken:attention failed "cannot load np_broken.attention: ModuleNotFoundError"
check np_nosuch:attention failed "cannot load np_nosuch.attention: ModuleNotFoundError"
check np_attention:raises failed "ValueError: the callable raised on purpose"
check np_attention:wrong_shape failed "returned shape (1, 4, 1, 32)"
check np_attention:wrong_dtype failed "returned float64, expected float32"
check np_attention:wrong_numbers incorrect "verification failed"

# PyTorch's entries are CUDA kernels: asked for on the CPU backend, one line and exit 2.
rc=0
"$attnprof" sweep --backend cpu --kernels torch:flash --axes "$axes" --out "$scratch/torch" >"$scratch/torch.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "'torch:flash' is a cuda kernel" "$scratch/torch.log" ||
  fail "torch:flash on the CPU backend: exit $rc: $(cat "$scratch/torch.log")"
echo "python bridge: ok"
