#!/usr/bin/env bash
# On a GPU: attnprof's CUDA example plugins beside its built-in kernels, with counters on. Every
# point verified; every launch of a call recorded by CUPTI with its grid, block, registers and shared
# memory, the cuBLAS launches of the reference and of the cuBLAS plugin included; occupancy of
# plugin kernels from those records; per-launch counters named after them; a diagnosis for each.
# The BSHD twin covers the kernel-layout path, kernel replay (not pure) and event timing (no graph).
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
