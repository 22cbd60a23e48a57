#!/usr/bin/env bash
# docs/plugins.md's CPU plugin, as a reader would take it: the C source and the build command copied out
# of the page into a folder outside this tree, built with that one command (cc -O2 -shared -fPIC), listed
# by attnprof, then swept on the CPU backend beside the built-in fused kernel: every point of the
# plugin's kernel (causal or not, grouped-query heads, both dtypes the CPU backend takes) runs and passes
# the float64 verification. Skips (77) without a C compiler.
# Usage: docs_cpu_example_test.sh ATTNPROF SOURCE_DIR
set -euo pipefail
attnprof="$(realpath "$1")"
source_dir="$2"
command -v cc >/dev/null || { echo "no cc: skipped"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/attnprof-docs-cpu-plugin.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 "$source_dir/scripts/device/docs_plugin.py" "$source_dir/docs/plugins.md" "$work" cpu- >/dev/null
cd "$work"
[[ -f my_cpu_attention.c ]] || fail "the page's CPU plugin source is not my_cpu_attention.c: $(ls)"
grep -q "^cc -O2 -shared -fPIC " build.sh || fail "the page's CPU build command: $(cat build.sh)"
ATTNPROF="$source_dir" bash build.sh
[[ -f my_cpu_attention.so ]] || fail "the page's command built no my_cpu_attention.so"

"$attnprof" kernels --plugin ./my_cpu_attention.so >kernels.txt
grep -q "^my-cpu-attention  \[cpu\]" kernels.txt || fail "my-cpu-attention not listed: $(cat kernels.txt)"

export ATTNPROF_CACHE_DIR="$work/cache"
"$attnprof" sweep --backend cpu --plugin ./my_cpu_attention.so --kernels my-cpu-attention,fused \
  --axes "batch=1;heads=4;kv_heads=2;seq_q=64,96;seq_k=96;hdim=32,64;causal=0,1;dtype=fp32,bf16" \
  --max-seconds 0.05 --min-samples 3 --max-samples 5 --warmup 1 --out run >sweep.log 2>&1 ||
  fail "sweep: $(tail -n 5 sweep.log)"
python3 - run/results.json <<'PY' || fail "results.json"
import json, sys
records = [r for r in json.load(open(sys.argv[1]))["records"] if r["kernel"] == "my-cpu-attention"]
assert len(records) == 16, len(records)
for r in records:
    v = r["verification"]
    assert r["status"] == "ok", (r["key"], r["status"], r["reason"])
    assert v["checked"] and v["passed"] and v["lse_checked"] and v["unwritten"] == 0, (r["key"], v)
    assert r["backend"] == "cpu" and r["latency"]["n"] >= 1, r["key"]
# seq_q 64 < seq_k 96, causal: bottom-right rows see 33..96 keys; both layouts' strides read right.
assert {(r["shape"]["seq_q"], r["shape"]["causal"]) for r in records} == {(64, False), (64, True), (96, False), (96, True)}
PY
echo "docs CPU example: ok"
