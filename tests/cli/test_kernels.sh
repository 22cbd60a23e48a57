#!/usr/bin/env bash
# `attnprof kernels` (src/cli/kernels.cpp): the CPU kernels listed as text and as JSON with what they
# support (and no CUDA graph flag); a plugin that is not there is exit 2 and one line. Usage: test_kernels.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"

"$attnprof" kernels >"$scratch/text" 2>"$scratch/err" || fail "kernels: $(cat "$scratch/err")"
for name in reference fused; do
  grep -q "$name" "$scratch/text" || fail "the text does not list '$name'"
done

"$attnprof" kernels --json >"$scratch/json" 2>"$scratch/err" || fail "kernels --json: $(cat "$scratch/err")"
python3 - "$scratch/json" <<'PY' || fail "kernels --json"
import json, sys
d = json.load(open(sys.argv[1]))
entries = d if isinstance(d, list) else d["kernels"]
cpu = {e["name"]: e for e in entries if e["backend"] == "cpu"}
assert {"reference", "fused"} <= set(cpu), sorted(cpu)
for e in cpu.values():
    assert e["origin"] == "built-in" and e["causal"] and e["window"] and e["varlen"], e
    assert "fp32" in e["dtypes"] and 128 in e["hdims"], e
    assert "graph" not in e["flags"], e  # graph capture is the CUDA backend's
PY

got=0
"$attnprof" kernels --plugin "$scratch/missing.so" >/dev/null 2>"$scratch/err" || got=$?
[[ "$got" == 2 ]] || fail "--plugin missing.so: exit $got, want 2"
[[ "$(wc -l <"$scratch/err")" == 1 ]] || fail "--plugin missing.so: $(cat "$scratch/err")"
echo "test_kernels: ok"
