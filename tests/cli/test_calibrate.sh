#!/usr/bin/env bash
# attnprof calibrate end to end. Without a GPU (or in a build without CUDA): exit 4 with one line on
# stderr saying calibrate needs an NVIDIA GPU and why (no driver named as such), then this test
# reports skipped (77). With one: exit 0, every probe row "ok", and the
# written results hold each probe diagnosed as its expected verdict, with the new ceilings.
set -uo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export ATTNPROF_CACHE_DIR="$work/cache"
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$work/out" 2>/dev/null; echo "--- stderr"; cat "$work/err" 2>/dev/null; exit 1; }

"$bin" calibrate -o "$work/probes.json" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 4 ] && grep -q "attnprof calibrate needs an NVIDIA GPU: " "$work/err"; then
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "the no-GPU message is not one line"
  # No driver at all is said as such, not as the runtime's "driver version is insufficient".
  if ! ldconfig -p 2>/dev/null | grep -q "libcuda.so.1"; then
    grep -qE "no NVIDIA driver|built without CUDA" "$work/err" || fail "the missing driver is not named"
  fi
  [ ! -e "$work/probes.json" ] || fail "no GPU, yet a results file was written"
  echo "calibrate: no GPU here ($(cat "$work/err")): skipped"
  exit 77
fi
cat "$work/out"
[ "$rc" -eq 0 ] || fail "calibrate exited $rc (1: a verdict differs from the expected one)"
for probe in hbm-copy l2-copy mma-loop fma-loop empty-kernel pointer-chase register-heavy; do
  grep -qE "^$probe .* ok$" "$work/out" || fail "no ok row for $probe"
done
grep -q "^7 of 7 probes diagnosed as expected$" "$work/out" || fail "summary line"
python3 - "$work/probes.json" <<'PY' || fail "results file"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema_version"] == "1.14", r["schema_version"]
expected = {"hbm-copy": "memory-bound", "l2-copy": "memory-bound", "mma-loop": "compute-bound",
            "fma-loop": "compute-bound", "empty-kernel": "launch-bound", "pointer-chase": "latency-bound",
            "register-heavy": "occupancy-bound"}
got = {p["kernel"]: p["diagnosis"]["verdict"] for p in r["records"]}
assert got == expected, got
c = r["context"]["ceilings"]
assert c["launch_latency_us"] > 0, c
assert c["l2_bw_bytes_per_s"] > c["peak_bw_bytes_per_s"], c
assert c["flops_per_s_per_mhz"]["bf16"] == c["flops_per_s_per_mhz"]["fp16"], c
for d in ("bf16", "fp16", "fp32"):
    assert 100 < c["probe_sm_mhz"][d] < 2500, c
    assert abs(c["flops_per_s_per_mhz"][d] * c["probe_sm_mhz"][d] / c["peak_flops_per_s"][d] - 1) < 1e-9, c
by = {p["kernel"]: p for p in r["records"]}
# The HBM copy streams at most the HBM roof (a little over, within noise), the L2 copy beats it.
hbm = by["hbm-copy"]
copy_bw = (hbm["cost"]["min_bytes_read"] + hbm["cost"]["min_bytes_write"]) / (hbm["latency"]["p50_us"] * 1e-6)
assert copy_bw < 1.03 * c["peak_bw_bytes_per_s"], (copy_bw, c["peak_bw_bytes_per_s"])
l2 = by["l2-copy"]
l2_bw = (l2["cost"]["min_bytes_read"] + l2["cost"]["min_bytes_write"]) / (l2["latency"]["p50_us"] * 1e-6)
assert l2_bw > c["peak_bw_bytes_per_s"], (l2_bw, c["peak_bw_bytes_per_s"])
# The FMA probe's % of roof is at its own clock: near 100%, never far above.
m = by["fma-loop"]["diagnosis"]["metrics"]
assert m["roof_sm_mhz"] is not None and 80 < m["pct_of_roof"] < 105, m
assert by["register-heavy"]["occupancy"]["limiter"] == "registers", by["register-heavy"]["occupancy"]
print("probes.json: 7 probes as expected; launch latency %.2f us, L2 %.0f GB/s, HBM %.0f GB/s, bf16 %.3f TFLOP/s per GHz" %
      (c["launch_latency_us"], c["l2_bw_bytes_per_s"] / 1e9, c["peak_bw_bytes_per_s"] / 1e9,
       c["flops_per_s_per_mhz"]["bf16"] * 1e3 / 1e12))
PY
echo "calibrate: ok"
