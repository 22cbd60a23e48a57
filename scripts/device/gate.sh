#!/usr/bin/env bash
# The regression gate on real results: an 8-point sweep of `fused` three times (30 samples each, no
# counters), the third with the small tile configuration (a planted slowdown); `attnprof compare`
# must read the A/A as PASS (exit 0) and the slowdown as FAIL (exit 1). Then the fa-bench A/A with
# the default sampling (checks.py aa and the gate on it).
# Usage: bash scripts/device/gate.sh   (results in $OUT/gate.tgz)
source "$(dirname "$0")/lib.sh"
phase_begin gate
axes="batch=4;heads=16;seq=2048,4096;hdim=64,128;causal=0,1;dtype=bf16"
pin=(--axes "$axes" --kernels fused --backend cuda --no-counters --min-samples 30 --max-samples 30)
"$bin/attnprof" sweep "${pin[@]}" --out "$out/gate-a" >/dev/null 2>&1
"$bin/attnprof" sweep "${pin[@]}" --out "$out/gate-b" >/dev/null 2>&1
ATTNPROF_FUSED_CONFIG=small "$bin/attnprof" sweep "${pin[@]}" --out "$out/gate-slow" >/dev/null 2>&1
"$bin/attnprof" compare "$out/gate-a/results.json" "$out/gate-b/results.json" --md "$out/gate-aa.md" 2>&1 | tail -n 12
aa=${PIPESTATUS[0]}; echo "A/A exit $aa (expected 0)"
"$bin/attnprof" compare "$out/gate-a/results.json" "$out/gate-slow/results.json" --md "$out/gate-slow.md" 2>&1 | tail -n 12
slow=${PIPESTATUS[0]}; echo "planted-slowdown exit $slow (expected 1)"
log "A/A: the fa-bench sweep (144 points, default sampling, no counters) twice"
fa_bench_aa fa-bench
[ "$aa" -eq 0 ] && [ "$slow" -eq 1 ]
