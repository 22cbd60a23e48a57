#!/usr/bin/env bash
# `attnprof explain` end to end: a good shape prints both kernels' analysis (table and JSON) and exits
# 0; every bad input exits 2 with exactly one line on stderr. Usage: test_explain.sh <attnprof>
set -u
bin="$1"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

good='batch=8,heads=16,seq=2048,hdim=128,dtype=bf16'
if "$bin" explain --gpu h200 --shape "$good" >"$tmp/out" 2>"$tmp/err"; then
  for want in 'NVIDIA H200' 'reference' 'fused' 'in HBM' 'on chip' 'FLOPs (exact)' \
              'FLOPs (FA convention)' 'min bytes read' 'workspace' 'ridge point' 'floor latency' \
              '274.878 GFLOP' '3.221 GB' 'memory' 'compute' '206.1' '1020.0' '41.0' '277.82' '1398.32'; do
    grep -qF -- "$want" "$tmp/out" || fail "table lacks '$want'"
  done
  [ -s "$tmp/err" ] && fail "stderr not empty: $(cat "$tmp/err")"
else
  fail "explain exited $? on a good shape: $(cat "$tmp/err")"
fi

# A backward shape: the backward's cost (docs/cost-model.md's worked example) and its score tensors.
if "$bin" explain --gpu h200 --shape "$good,pass=bwd" >"$tmp/bwd" 2>"$tmp/err"; then
  for want in 'bwd on NVIDIA H200' 'S, P, dP, dS' '687.195 GFLOP' '336.593 MB' '15.032 GB' '1277.5' '43.4'; do
    grep -qF -- "$want" "$tmp/bwd" || fail "backward table lacks '$want'"
  done
else
  fail "explain exited $? on a backward shape: $(cat "$tmp/err")"
fi

# A CUDA device name works as well as a key, and --json is JSON with both kernels.
if "$bin" explain --gpu "NVIDIA H100 80GB HBM3" --shape "$good,causal=1" --json >"$tmp/json" 2>"$tmp/err"; then
  python3 - "$tmp/json" <<'PY' || fail "JSON output wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["gpu"]["key"] == "h100-sxm", d["gpu"]
ks = {k["kernel"]: k for k in d["kernels"]}
assert set(ks) == {"reference", "fused"}, ks.keys()
ref, fused = ks["reference"], ks["fused"]
assert ref["kind"] == "materialized" and fused["kind"] == "fused"
# Causal square 2048: 2048 * 2049 / 2 unmasked scores per head; the FA convention is dense / 2.
assert fused["cost"]["flops"] == 2**38 // 4096 * 2049 and fused["cost"]["flops_dense"] == 2**38
assert fused["cost"]["flops_fa_convention"] == 2**37 and ref["cost"]["flops"] == fused["cost"]["flops"]
assert fused["cost"]["workspace_bytes"] == 0 and ref["cost"]["workspace_bytes"] == 2**29 * 6
assert ref["bound"] == "memory" and fused["bound"] == "compute", (ref["bound"], fused["bound"])
assert abs(fused["ridge_flops_per_byte"] - 989.4 / 3.35) < 1e-6
assert fused["floor_latency_us"] > 0 and ref["floor_latency_us"] > fused["floor_latency_us"]
assert d["shape"]["causal"] is True
PY
else
  fail "explain --json exited $?: $(cat "$tmp/err")"
fi

# Each bad input: exit 2, exactly one line on stderr naming the problem.
bad_cases=(
  "--gpu h200 --shape batch=8,sequence=2048"               # unknown axis
  "--gpu h200 --shape batch=8,seq=2048,batch=4"            # duplicate axis
  "--gpu h200 --shape batch=,seq=2048"                     # empty value
  "--gpu h200 --shape batch=8,seq=20x48"                   # not an integer
  "--gpu h200 --shape batch=0,seq=2048"                    # zero
  "--gpu h200 --shape batch=-8,seq=2048"                   # negative
  "--gpu h200 --shape seq=512:2048:x2"                     # a range in a single shape
  "--gpu h200 --shape heads=16,kv_heads=3,seq=2048"        # kv_heads not dividing heads
  "--gpu h200 --shape tokens=1000,seq=512"                 # tokens not divisible by seq
  "--gpu h200 --shape dim=1000,hdim=128,seq=512"           # dim not divisible by hdim
  "--gpu h200 --shape tokens=4096,batch=2,seq=512"         # tokens with batch
  "--gpu h200 --shape dim=2048,heads=16,seq=512"           # dim with heads
  "--gpu h200 --shape batch=8,heads=16"                    # no seq
  "--gpu h200 --shape seq=2048,dtype=fp8_e5m2"             # unknown dtype
  "--gpu a100-80gb --shape seq=2048,dtype=fp8"             # no fp8 tensor cores: no fp8 roof
  "--gpu h200 --shape seq=2048,causal=maybe"               # bad boolean
  "--gpu h200 --shape batch=65536,heads=1024,seq=65536,hdim=128" # tensor past 2^48 elements
  "--gpu h999 --shape seq=2048"                            # unknown GPU
  "--gpu h200"                                             # missing --shape
  "--shape seq=2048"                                       # missing --gpu
  "--gpu h200 --shape seq=2048 --bogus"                    # unknown option
)
for args in "${bad_cases[@]}"; do
  # shellcheck disable=SC2086  # the cases are split into arguments on purpose
  "$bin" explain $args >"$tmp/out" 2>"$tmp/err"
  rc=$?
  lines=$(wc -l <"$tmp/err")
  [ "$rc" -eq 2 ] || fail "'$args' exited $rc, expected 2"
  [ "$lines" -eq 1 ] || fail "'$args' wrote $lines lines on stderr: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "'$args' wrote to stdout: $(head -c 200 "$tmp/out")"
done
"$bin" explain --gpu h999 --shape seq=2048 2>&1 | grep -q "h200" || fail "unknown GPU does not list known keys"
"$bin" explain --gpu h200 --shape batch=8,sequence=2048 2>&1 | grep -q "'sequence'" || fail "bad axis not named"

echo "explain CLI: ${#bad_cases[@]} bad inputs checked, $failures failure(s)"
[ "$failures" -eq 0 ]
