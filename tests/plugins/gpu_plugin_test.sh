#!/usr/bin/env bash
# On a GPU: attnprof's CUDA example plugins beside its built-in kernels, with counters on. Every
# point verified; every launch of a call recorded by CUPTI with its grid, block, registers and shared
# memory, the cuBLAS launches of the reference and of the cuBLAS plugin included; occupancy of
# plugin kernels from those records; per-launch counters named after them; a diagnosis for each.
# The BSHD twin covers the kernel-layout path, kernel replay (not pure) and event timing (no graph).
# Both run sliding windows and packed variable-length batches (plugin ABI version 2) and read a
# quantized KV cache (version 4).
# Usage: gpu_plugin_test.sh ATTNPROF EXAMPLE_PLUGIN_DIR TEST_PLUGIN_DIR. Skips (77) without a GPU.
set -euo pipefail
attnprof="$1"
examples="$2"
tests="$3"
nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
out="${ATTNPROF_GPU_TEST_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/attnprof-gpu-plugin.XXXXXX")}"
mkdir -p "$out"
"$attnprof" sweep --backend cuda --plugin "$examples/cuda_attention.so" --plugin "$examples/cublas_attention.so" \
  --plugin "$tests/cuda_attention_bshd.so" \
  --kernels example-cuda,example-cuda-bshd,example-cublas,fused,reference \
  --axes "batch=2;heads=8;kv_heads=2;seq=256,1024;hdim=64,128;causal=0,1;dtype=bf16" \
  --max-seconds 0.3 --warmup-seconds 0.1 --out "$out/sweep" >"$out/sweep.log" 2>&1 ||
  { echo "FAIL: sweep: $(tail -n 20 "$out/sweep.log")" >&2; exit 1; }
python3 - "$out/sweep/results.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))
recs = res["records"]
assert len(recs) == 5 * 8, len(recs)
problems = []
def check(cond, what, r):
    if not cond:
        problems.append(f"{r['kernel']} {r['shape']}: {what}")
for r in recs:
    check(r["status"] == "ok", f"status {r['status']}: {r['reason']}", r)
    check(r["verification"]["passed"] and r["verification"]["rows_checked"] > 0, "not verified", r)
    check(r["counters"]["status"] == "ok", f"counters {r['counters']['status']}: {r['counters']['reason']}", r)
    check(r["diagnosis"] is not None and r["diagnosis"].get("verdict"), "no diagnosis", r)
    L = r["launches"]
    check(len(L) >= 1, "no launch records", r)
    for l in L:
        check(all(x > 0 for x in l["grid"]) and all(x > 0 for x in l["block"]), f"launch {l['name']}: no grid/block", r)
        check(l["registers_per_thread"] > 0 and l["duration_us"] > 0, f"launch {l['name']}: no registers/duration", r)
        check(l["occupancy"]["theoretical_pct"] > 0 and l["occupancy"]["limiter"], f"launch {l['name']}: no occupancy", r)
    k = r["kernel"]
    if k.startswith("example-cuda"):
        check(len(L) == 1 and "attention_rows" in L[0]["name"], f"launches {[l['name'] for l in L]}", r)
        check(r["occupancy"]["theoretical_pct"] > 0 and r["occupancy"]["achieved_pct"] is not None, "no occupancy", r)
        check(r["counters"]["per_kernel"][0]["kernel"] == L[0]["name"], "per-launch counters not named by the record", r)
    if k == "example-cuda-bshd":
        check(r["layout"] == "bshd" and "graph" not in r["timing_mode"], f"layout {r['layout']} timing {r['timing_mode']}", r)
        check("kernel replay" in r["counters"]["reason"], f"counters reason {r['counters']['reason']!r}", r)
    if k == "example-cublas":
        check(len(L) == 3 and "softmax_rows" in L[1]["name"], f"launches {[l['name'] for l in L]}", r)
        check(len(r["counters"]["per_kernel"]) == 3, "per-launch counters", r)
    if k == "reference":
        lib = [l for l in L if "attnprof" not in l["name"] and "reference" not in l["name"]]
        check(len(L) == 3 and len(lib) >= 2, f"reference launches {[l['name'] for l in L]}", r)
        check(all(l["registers_per_thread"] > 0 for l in lib), "cuBLAS launches without registers", r)
for p in problems[:30]:
    print("FAIL:", p)
assert not problems, f"{len(problems)} problems"
# One line per kernel for the log.
for k in ["example-cuda", "example-cuda-bshd", "example-cublas", "fused", "reference"]:
    r = next(x for x in recs if x["kernel"] == k and x["shape"]["seq_q"] == 1024 and x["shape"]["hdim"] == 128 and not x["shape"]["causal"])
    print(f"{k}: p50 {r['latency']['p50_us']:.1f} us, {r['tflops']:.1f} TFLOP/s, verdict {r['diagnosis']['verdict']}, "
          f"occupancy {r['occupancy']['theoretical_pct']:.0f}% ({r['occupancy']['limiter']}), launches: " +
          "; ".join(f"{l['name'][:60]} grid {l['grid']} block {l['block']} regs {l['registers_per_thread']}" for l in r["launches"]))
PY

# Plugin ABI version 2 on the GPU: sliding windows and packed variable-length batches reach both CUDA
# example kernels (head-major BHSD and token-major BSHD, cu_seqlens in device memory); every point runs
# and passes verification against float64, as fused's beside them.
wv_axes="batch=2;heads=8;kv_heads=2;seq_q=200;seq_k=200,333;hdim=64;causal=0,1;window=0,1,64,4096;dtype=bf16"
wv_axes+=" | heads=8;kv_heads=2;hdim=128;causal=0,1;window=0,48;dtype=fp16;lengths=list:1/300/77/512"
wv_axes+=" | batch=6;heads=4;hdim=64;causal=1;window=0,100;dtype=bf16;lengths=uniform:1:700;lengths_seed=1,2"
"$attnprof" sweep --backend cuda --plugin "$examples/cuda_attention.so" --plugin "$tests/cuda_attention_bshd.so" \
  --kernels example-cuda,example-cuda-bshd,fused --axes "$wv_axes" --no-counters --max-seconds 0.05 \
  --out "$out/window_varlen" >"$out/window_varlen.log" 2>&1 ||
  { echo "FAIL: window/varlen sweep: $(tail -n 20 "$out/window_varlen.log")" >&2; exit 1; }
python3 - "$out/window_varlen/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 3 * (16 + 4 + 4), len(recs)
bad = [(r["key"], r["kernel"], r["status"], r["reason"][:160]) for r in recs
       if r["status"] != "ok" or not r["verification"]["passed"] or r["verification"]["rows_checked"] == 0]
for b in bad[:20]:
    print("FAIL:", *b)
assert not bad, f"{len(bad)} window/varlen points not ok and verified"
assert sum(bool(r["shape"].get("seq_lens")) for r in recs) == 3 * 8, "packed points missing"
assert sum(r["shape"].get("window", 0) > 0 for r in recs) == 3 * (12 + 2 + 2), "windowed points missing"
assert all(r["layout"] == "bshd" for r in recs if r["kernel"] == "example-cuda-bshd")
print(f"window/varlen: {len(recs)} points ok and verified")
PY

# Plugin ABI version 4 on the GPU: a quantized KV cache (fp8 and int8 at each scale granularity, decode
# and prefill rows, and a packed batch's per-token scales) reaches both CUDA example kernels (BHSD, and
# token-major BSHD, where a token's scale sits at its row's own place); every point runs and passes
# verification against float64.
q_axes="batch=2;heads=8;kv_heads=2;seq_q=1,64;seq_k=300;hdim=64,128;causal=1;dtype=bf16"
q_axes+=";kv_dtype=bf16,fp8_e4m3,int8;kv_scale=tensor,head,token"
q_axes+=" | heads=8;kv_heads=2;hdim=64;causal=1;dtype=fp16;kv_dtype=fp8_e4m3,int8;kv_scale=token;lengths=list:1/300/77"
"$attnprof" sweep --backend cuda --plugin "$examples/cuda_attention.so" --plugin "$tests/cuda_attention_bshd.so" \
  --kernels example-cuda,example-cuda-bshd --axes "$q_axes" --no-counters --max-seconds 0.05 \
  --out "$out/quant" >"$out/quant.log" 2>&1 || { echo "FAIL: quantized sweep: $(tail -n 20 "$out/quant.log")" >&2; exit 1; }
python3 - "$out/quant/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 2 * (2 * 2 * 7 + 2), len(recs)
bad = [(r["key"], r["kernel"], r["status"], r["reason"][:160]) for r in recs
       if r["status"] != "ok" or not r["verification"]["passed"] or r["verification"]["rows_checked"] == 0]
for b in bad[:20]:
    print("FAIL:", *b)
assert not bad, f"{len(bad)} quantized points not ok and verified"
assert sum("kv_dtype" in r["shape"] for r in recs) == 2 * (2 * 2 * 6 + 2), "quantized points missing"
print(f"quantized KV: {len(recs)} points ok and verified")
PY

# A plugin that leaves a sticky CUDA error fails its points; the restarted workers measure the rest.
"$attnprof" sweep --backend cuda --plugin "$tests/sticky_plugin.so" --kernels plugin-sticky,fused \
  --axes "batch=1;heads=4;seq=128,256;hdim=64;dtype=bf16" --max-seconds 0.1 --out "$out/sticky" >"$out/sticky.log" 2>&1 ||
  { echo "FAIL: sticky sweep: $(tail -n 20 "$out/sticky.log")" >&2; exit 1; }
python3 - "$out/sticky/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
bad = [r for r in recs if r["kernel"] == "plugin-sticky"]
assert len(bad) == 2 and all(r["status"] == "failed" and "sticky" in r["reason"] for r in bad), [(r["status"], r["reason"]) for r in bad]
assert all(r["status"] == "ok" and r["verification"]["passed"] for r in recs if r["kernel"] == "fused"), [(r["key"], r["status"]) for r in recs]
print("sticky: plugin points failed with", bad[0]["reason"][:120])
PY
echo "gpu plugins: ok"
