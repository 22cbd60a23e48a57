#!/usr/bin/env bash
# `attnprof devices` (src/cli/devices.cpp) on the CPU backend: the table (in the CPU's words) and the
# JSON name device 0 with its ceilings (measured into a scratch cache); without a GPU the notice says why
# (the missing driver, where it is missing); an unknown backend is exit 2 and one line.
# Usage: test_devices.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"
export ATTNPROF_CACHE_DIR="$scratch/cache"

"$attnprof" devices --backend cpu >"$scratch/table" 2>"$scratch/err" || fail "devices: $(cat "$scratch/err")"
grep -qE '^id +kind +name' "$scratch/table" || fail "no table header: $(cat "$scratch/table")"
grep -qE '^0 +cpu +CPU: ' "$scratch/table" || fail "no CPU device 0: $(cat "$scratch/table")"
# The CPU in its own words: cores, LLC, its clock, DRAM GB/s and GFLOP/s; none of a GPU's columns.
grep -qE '^id +kind +name +cores +memory +LLC +max MHz +DRAM GB/s +fp32 GFLOP/s +ceilings$' "$scratch/table" ||
  fail "CPU columns: $(head -n 1 "$scratch/table")"
! grep -qE 'SMs|SM MHz| L2 | cc |TF' "$scratch/table" || fail "a GPU's column for the CPU: $(cat "$scratch/table")"

# --backend auto on a machine without a GPU: the notice says why; without the NVIDIA driver, that it is
# missing (in a build with CUDA and in one without).
if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
  "$attnprof" devices >"$scratch/auto" 2>"$scratch/err" || fail "devices: $(cat "$scratch/err")"
  grep -q "^notice: no GPU found (.*): running the CPU backend$" "$scratch/auto" || fail "no notice: $(cat "$scratch/auto")"
  if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
    grep -qF "no NVIDIA driver (libcuda.so.1 is not installed)" "$scratch/auto" ||
      fail "the missing driver is not named: $(head -n 1 "$scratch/auto")"
  fi
fi

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
