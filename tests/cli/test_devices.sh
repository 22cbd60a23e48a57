#!/usr/bin/env bash
# `attnprof devices` (src/cli/devices.cpp) on the CPU backend: the table and the JSON name device 0
# with its ceilings (measured into a scratch cache); an unknown backend is exit 2 and one line.
# Usage: test_devices.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"
export ATTNPROF_CACHE_DIR="$scratch/cache"

"$attnprof" devices --backend cpu >"$scratch/table" 2>"$scratch/err" || fail "devices: $(cat "$scratch/err")"
grep -qE '^id +kind +name' "$scratch/table" || fail "no table header: $(cat "$scratch/table")"
grep -qE '^0 +cpu +CPU: ' "$scratch/table" || fail "no CPU device 0: $(cat "$scratch/table")"

"$attnprof" devices --backend cpu --json >"$scratch/json" 2>"$scratch/err" || fail "devices --json: $(cat "$scratch/err")"
python3 - "$scratch/json" <<'PY' || fail "devices --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["devices"]) == 1, d
dev = d["devices"][0]
assert dev["id"] == 0 and dev["backend"] == "cpu", dev
assert dev["device"]["name"].startswith("CPU: "), dev["device"]
assert dev["ceilings"]["peak_bw_bytes_per_s"] > 0 and dev["ceilings"]["source"] == "measured", dev["ceilings"]
PY
ls "$scratch/cache"/*.json >/dev/null 2>&1 || fail "the CPU ceilings were not cached"

got=0
"$attnprof" devices --backend tpu >/dev/null 2>"$scratch/err" || got=$?
[[ "$got" == 2 ]] || fail "--backend tpu: exit $got, want 2"
[[ "$(wc -l <"$scratch/err")" == 1 ]] || fail "--backend tpu: $(cat "$scratch/err")"
echo "test_devices: ok"
