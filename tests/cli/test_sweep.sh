#!/usr/bin/env bash
# `attnprof sweep` (src/cli/sweep.cpp) on the CPU backend: the points of the axes for the kernels asked,
# results.json and the requested report files in --out; without --out a folder of the run's own under
# reports/runs/ with reports/latest pointing at the newest (--resume continues it; a folder at
# reports/latest is left alone); an option given where a value belongs is refused; bad option values
# are exit 2 with one line and write nothing; the machine's load is recorded, and warned about at the
# start when it exceeds the cores; --stalls and --timeline on the CPU backend mark each point unsupported;
# paged and quantized KV caches run on the CPU reference and are verified; fp8 prefill points run on the
# CPU reference, verified with their per-element bound and their quantization cost, beside their bf16
# twins in the Markdown summary.
# Usage: test_sweep.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"

"$attnprof" sweep --axes "$tiny_axes" --kernels reference "${fast[@]}" --out "$scratch/s" --csv "$scratch/s.csv" \
  >"$scratch/log" 2>&1 || fail "sweep: $(tail -n 5 "$scratch/log")"
python3 - "$scratch/s/results.json" <<'PY' || fail "results.json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["context"]["backend"] == "cpu", d["context"]["backend"]
assert {r["kernel"] for r in d["records"]} == {"reference"}, {r["kernel"] for r in d["records"]}
assert sorted(r["shape"]["seq_q"] for r in d["records"]) == [32, 48, 64, 96], [r["shape"] for r in d["records"]]
for r in d["records"]:
    assert r["status"] == "ok" and r["verification"]["passed"] and r["latency"]["n"] >= 1, (r["key"], r["status"], r["reason"], r["latency"]["n"])
PY
[[ "$(($(wc -l <"$scratch/s.csv") - 1))" == 4 ]] || fail "the CSV does not hold 4 points"
python3 -c "import json,sys; assert all('stalls' not in r for r in json.load(open(sys.argv[1]))['records'])" \
  "$scratch/s/results.json" || fail "a sweep without --stalls wrote stalls"

# The backward pass on the CPU backend: the reference's bwd and fwd_bwd points verified with their
# gradient checks, from both the reference and the fused kernel (its three backward stages).
bwd_axes="batch=1;heads=2;kv_heads=1;seq=64;hdim=32;causal=0,1;pass=fwd,bwd,fwd_bwd"
"$attnprof" sweep --axes "$bwd_axes" --kernels reference,fused "${fast[@]}" --out "$scratch/bwd" --md "$scratch/bwd.md" \
  >"$scratch/log" 2>&1 || fail "sweep of the backward: $(tail -n 5 "$scratch/log")"
python3 - "$scratch/bwd/results.json" <<'PY' || fail "backward points"
import json, sys
d = json.load(open(sys.argv[1]))
records = d["records"]
assert len(records) == 12, len(records)
for r in records:
    p = r["shape"].get("pass", "fwd")
    assert ("pass" in r["shape"]) == (p != "fwd"), r["shape"]
    v = r["verification"]
    assert r["status"] == "ok" and v["passed"] and r["latency"]["n"] >= 1, (r["key"], r["status"], r["reason"])
    if p == "fwd":
        assert "grads" not in v, r["key"]
        continue
    assert r["key"].split(" | ")[0].endswith(" " + p), r["key"]
    assert set(v["grads"]) == {"dq", "dk", "dv"}, v
    for name, g in v["grads"].items():
        assert g["passed"] and g["rows_checked"] > 0 and g["max_abs_err"] <= g["tolerance"], (r["key"], name, g)
    # The cost is the pass's: the backward's five products per score against the forward's two.
    fwd = next(f for f in records if f["kernel"] == r["kernel"] and f["shape"].get("pass", "fwd") == "fwd"
               and f["shape"]["causal"] == r["shape"]["causal"])
    factor = 2.5 if p == "bwd" else 3.5
    assert abs(r["cost"]["flops"] - factor * fwd["cost"]["flops"]) <= 1e-6 * r["cost"]["flops"], (r["key"], r["cost"])
    assert abs(r["tflops"] - r["cost"]["flops"] / r["latency"]["p50_us"] / 1e6) <= 1e-6 * r["tflops"], r["key"]
    stages = [s["name"] for s in r["stages"]]
    if r["kernel"] == "reference":
        assert stages[-1] == "bwd_dk_gemm" and (stages[0] == "qk_gemm") == (p == "fwd_bwd"), stages
    else:
        assert stages == (["fwd"] if p == "fwd_bwd" else []) + ["bwd_preprocess", "bwd_dk_dv", "bwd_dq"], stages
        assert r["plan"]["dq_atomic"] == 0, r["plan"]
PY
grep -q "s64x64 d32 causal bf16 bwd | reference | ok" "$scratch/bwd.md" || fail "the Markdown summary does not show the backward points"

# A KV cache in pages and quantized on the CPU backend: the reference reads every kind (gather_kv,
# dequant_kv first) and each point is verified, a quantized one with what the quantization costs; the
# fused kernel runs the contiguous bf16 point only and says why not the others.
kv_axes="batch=2;heads=4;kv_heads=2;seq_q=2;seq_k=80;hdim=32;causal=1;page_size=0,16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head,token"
"$attnprof" sweep --axes "$kv_axes" --kernels reference,fused "${fast[@]}" --out "$scratch/kv" \
  >"$scratch/log" 2>&1 || fail "sweep of a paged, quantized KV cache: $(tail -n 5 "$scratch/log")"
python3 - "$scratch/kv/results.json" <<'PY' || fail "paged and quantized points"
import json, sys
records = json.load(open(sys.argv[1]))["records"]
assert len(records) == 2 * (2 + 2 * 2 * 2), [r["key"] for r in records]  # bf16 once per page size
for r in records:
    shape, v = r["shape"], r["verification"]
    quantized, paged = "kv_dtype" in shape, shape.get("page_size", 0) > 0
    assert quantized == ("kv_scale" in shape), shape
    if quantized:
        assert shape["kv_dtype"] in ("fp8_e4m3", "int8") and shape["kv_scale"] in ("head", "token"), shape
        assert f" kv-{shape['kv_dtype']}/{shape['kv_scale']}" in r["key"], r["key"]
    if r["kernel"] == "fused" and (quantized or paged):
        assert r["status"] == "unsupported", (r["key"], r["status"])
        assert ("no quantized KV cache" if quantized else "no paged KV cache") in r["reason"], r["reason"]
        continue
    assert r["status"] == "ok" and v["passed"] and v["unwritten"] == 0 and r["latency"]["n"] >= 1, (r["key"], r["status"], r["reason"])
    assert v["o_max_abs_err"] <= v["tolerance"], (r["key"], v)
    stages = [s["name"] for s in r.get("stages", [])]
    if r["kernel"] == "reference":
        first = "dequant_kv" if quantized else "gather_kv" if paged else "qk_gemm"
        assert stages[0] == first, (r["key"], stages)
    if quantized:
        q = v["quantization"]
        assert 0 < q["o_mean_abs_err"] <= q["o_max_abs_err"] and 0 < q["o_max_rel_err"] < 0.1, (r["key"], q)
    else:
        assert "quantization" not in v, (r["key"], v)
PY

# fp8 prefill on the CPU backend: the reference dequantizes Q, K and V first (dequant_qkv) and each point
# is verified against its per-element bound with what quantizing costs; the fused kernel says why not.
# Dense and packed, GQA, causal; dtype fastest, so each fp8 point follows its bf16 twin.
fp8_axes="batch=2;heads=4;kv_heads=2;seq=48;hdim=32;causal=0,1;dtype=bf16,fp8_e4m3 | lengths=list:40/9;heads=4;kv_heads=2;hdim=32;causal=1;dtype=fp8"
"$attnprof" sweep --axes "$fp8_axes" --kernels reference,fused "${fast[@]}" --out "$scratch/fp8" --md "$scratch/fp8.md" \
  --csv "$scratch/fp8.csv" >"$scratch/log" 2>&1 || fail "sweep of fp8 prefill: $(tail -n 5 "$scratch/log")"
python3 - "$scratch/fp8/results.json" "$scratch/fp8.csv" <<'PY' || fail "fp8 prefill points"
import csv, json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == "1.14", d["schema_version"]
records = d["records"]
assert len(records) == 2 * 5, [r["key"] for r in records]
fp8 = 0
for r in records:
    shape, v = r["shape"], r["verification"]
    assert "kv_dtype" not in shape and "kv_scale" not in shape, shape  # fp8's format is the dtype's
    assert " kv-" not in r["key"], r["key"]
    if r["kernel"] == "fused" and shape["dtype"] == "fp8_e4m3":
        assert r["status"] == "unsupported" and "no fp8 Q, K and V" in r["reason"], (r["key"], r["status"], r["reason"])
        continue
    assert r["status"] == "ok" and v["passed"] and v["unwritten"] == 0, (r["key"], r["status"], r["reason"])
    if shape["dtype"] != "fp8_e4m3":
        assert "o_max_bound_ratio" not in v and "quantization" not in v, (r["key"], v)
        continue
    fp8 += 1
    assert r["key"].split(" | ")[0].endswith("fp8_e4m3") or " varlen " in r["key"], r["key"]
    assert [s["name"] for s in r["stages"]][0] == "dequant_qkv", (r["key"], r["stages"])
    assert 0 < v["o_max_bound_ratio"] <= 1 and v["o_max_abs_err"] <= v["tolerance"], (r["key"], v)
    q = v["quantization"]
    assert 0 < q["o_mean_abs_err"] <= q["o_max_abs_err"] and 0 < q["o_max_rel_err"] < 0.2, (r["key"], q)
    # One byte per Q, K and V element with three scales, O in bf16 (the cost model's reference).
    assert r["cost"]["min_bytes_read"] > 0, r["cost"]
assert fp8 == 3, fp8
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
assert {row["dtype"] for row in rows} == {"bf16", "fp8_e4m3"}, {row["dtype"] for row in rows}
for row in rows:
    if row["dtype"] == "fp8_e4m3" and row["status"] == "ok":
        assert row["kv_dtype"] == "fp8_e4m3" and row["kv_scale"] == "tensor" and float(row["o_max_bound_ratio"]) <= 1, row
PY
grep -q "^### fp8 prefill" "$scratch/fp8.md" || fail "the Markdown summary has no fp8 prefill section"
grep -Eq '^\| b2 h4/2 s48x48 d32 causal fp8\\?_e4m3 \| reference \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x \|' "$scratch/fp8.md" ||
  fail "the fp8 prefill section does not set a point beside its bf16 twin: $(grep -A4 '### fp8' "$scratch/fp8.md")"

# --stalls on the CPU backend: every ok point says the backend has no warp states; nothing else changes.
"$attnprof" sweep --stalls --axes "$tiny_axes" --kernels reference "${fast[@]}" --out "$scratch/st" \
  >"$scratch/log" 2>&1 || fail "sweep --stalls: $(tail -n 5 "$scratch/log")"
python3 - "$scratch/st/results.json" <<'PY' || fail "sweep --stalls on the CPU backend"
import json, sys
for r in json.load(open(sys.argv[1]))["records"]:
    assert r["status"] == "ok" and r["latency"]["n"] >= 1, (r["key"], r["status"])
    s = r["stalls"]
    assert s["status"] == "unsupported" and "NVIDIA GPU" in s["reason"] and not s["per_kernel"], s
PY

# --timeline on the CPU backend: every ok point says the backend has no PM sampling; with --stalls too,
# both passes run and each says so.
"$attnprof" sweep --timeline --stalls --axes "$tiny_axes" --kernels reference "${fast[@]}" --out "$scratch/tl" \
  >"$scratch/log" 2>&1 || fail "sweep --timeline: $(tail -n 5 "$scratch/log")"
python3 - "$scratch/tl/results.json" <<'PY' || fail "sweep --timeline on the CPU backend"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == "1.14", d["schema_version"]
assert d["context"]["options"]["timeline"] is True, d["context"]["options"]
for r in d["records"]:
    assert r["status"] == "ok" and r["latency"]["n"] >= 1, (r["key"], r["status"])
    t = r["timeline"]
    assert t["status"] == "unsupported" and "NVIDIA GPU" in t["reason"] and not t["series"] and not t["t_us"], t
    assert r["stalls"]["status"] == "unsupported", r["stalls"]
PY
python3 -c "import json,sys; assert all('timeline' not in r for r in json.load(open(sys.argv[1]))['records'])" \
  "$scratch/st/results.json" || fail "a sweep without --timeline wrote a timeline"

# Without --out: reports/runs/<UTC time>/ with results.json, report.html and summary.md, reports/latest
# pointing at the newest; a second run gets its own folder and the first stays.
(
  mkdir -p "$scratch/cwd" && cd "$scratch/cwd" || exit 1
  for run in 1 2; do
    "$attnprof" sweep --axes "$tiny_axes" --kernels reference "${fast[@]}" >"$scratch/log$run" 2>&1 ||
      fail "sweep without --out: $(tail -n 5 "$scratch/log$run")"
    [[ -L reports/latest ]] || fail "reports/latest is not a link after run $run"
    for f in results.json report.html summary.md; do
      [[ -s "reports/latest/$f" ]] || fail "run $run: no $f in reports/latest -> $(readlink reports/latest)"
    done
    eval "latest$run=\$(readlink reports/latest)"
    sleep 1
  done
  [[ $latest1 == runs/* && $latest2 == runs/* && $latest1 != "$latest2" ]] || fail "runs: '$latest1' then '$latest2'"
  [[ -s "reports/$latest1/results.json" ]] || fail "the first run's results are gone"
  # --resume without --out continues the newest run: every point is already in its journal.
  "$attnprof" sweep --axes "$tiny_axes" --kernels reference "${fast[@]}" --resume >"$scratch/log3" 2>&1 ||
    fail "--resume without --out: $(tail -n 5 "$scratch/log3")"
  [[ $(readlink reports/latest) == "$latest2" && $(ls reports/runs | wc -l) == 2 ]] || fail "--resume made a new folder"
  # A folder at reports/latest (an older attnprof's) is left as it is, with a notice.
  rm reports/latest && mkdir reports/latest
  "$attnprof" sweep --axes "$tiny_axes" --kernels reference "${fast[@]}" >"$scratch/log4" 2>&1 || fail "run 4"
  [[ -d reports/latest && ! -L reports/latest ]] || fail "the reports/latest folder was replaced"
  grep -q "reports/latest is a folder, not a link" "$scratch/log4" || fail "no notice about the reports/latest folder"
) || exit 1

# An option where a value belongs is refused, not taken as a file name.
"$attnprof" sweep --axes "$tiny_axes" --kernels reference "${fast[@]}" --out "$scratch/o" --html --md \
  >/dev/null 2>"$scratch/err" && fail "--html --md was accepted"
grep -q "'--md' is an option, not a value" "$scratch/err" || fail "the refusal does not name --md: $(cat "$scratch/err")"
[[ ! -e ./--md && ! -e "$scratch/o/results.json" ]] || fail "a file named --md or results were written"

bad() {
  local got=0
  "$attnprof" sweep "$@" --out "$scratch/bad" >/dev/null 2>"$scratch/err" || got=$?
  [[ "$got" == 2 ]] || fail "sweep $*: exit $got, want 2"
  [[ "$(wc -l <"$scratch/err")" == 1 ]] || fail "sweep $*: stderr $(cat "$scratch/err")"
  [[ ! -e "$scratch/bad/results.json" ]] || fail "sweep $*: wrote results"
}
bad --axes "" --backend cpu
bad --axes "$tiny_axes" --backend cpu --kernels no-such-kernel
bad --axes "$tiny_axes" --backend cpu --max-seconds nan
bad --axes "batch=1;heads=3;kv_heads=2;seq=32;hdim=32" --backend cpu
bad --axes "seq=32;hdim=32;dtype=bf16;kv_dtype=fp16" --backend cpu
bad --axes "seq=32;hdim=32;kv_dtype=int4" --backend cpu
bad --axes "seq=32;hdim=32;dtype=fp8_e4m3;kv_dtype=int8" --backend cpu
bad --axes "seq=32;hdim=32;dtype=fp8_e4m3;kv_dtype=fp8;kv_scale=head" --backend cpu
bad --axes "seq=32;hdim=32;dtype=fp8_e4m3;pass=bwd" --backend cpu

# --backend cuda without a GPU: exit 4, one line with the reason; without the NVIDIA driver, that.
if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
  got=0
  "$attnprof" sweep --axes "$tiny_axes" --backend cuda --out "$scratch/cuda" >/dev/null 2>"$scratch/err" || got=$?
  [[ "$got" == 4 && "$(wc -l <"$scratch/err")" == 1 ]] || fail "--backend cuda without a GPU: exit $got: $(cat "$scratch/err")"
  if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
    grep -qF "no NVIDIA driver (libcuda.so.1 is not installed)" "$scratch/err" ||
      fail "--backend cuda: the missing driver is not named: $(cat "$scratch/err")"
  fi
fi

# The machine's load as the sweep starts: recorded in the context (the 1-minute load average and the
# cores online); over the cores, a warning at the start, kept among the notices. ATTNPROF_TEST_LOAD_AVG
# stands in for getloadavg()'s figure, so that this runs the same on a busy machine and an idle one.
cores=$(getconf _NPROCESSORS_ONLN)
one_point=(--axes "batch=1;heads=2;seq=32;hdim=32;dtype=fp32" --kernels fused "${fast[@]}")
ATTNPROF_TEST_LOAD_AVG=$((cores * 4)).5 "$attnprof" sweep "${one_point[@]}" --out "$scratch/busy" \
  >"$scratch/busy.log" 2>&1 || fail "busy sweep: $(tail -n 5 "$scratch/busy.log")"
unit=cores && [[ $cores != 1 ]] || unit=core
want="the machine is busy: load $((cores * 4)).5 on $cores $unit; timings will vary"
grep -qxF "attnprof: warning: $want" "$scratch/busy.log" || fail "no busy warning: $(head -n 5 "$scratch/busy.log")"
python3 - "$scratch/busy/results.json" "$((cores * 4)).5" "$cores" "$want" <<'PY' || fail "busy results.json"
import json, sys
ctx = json.load(open(sys.argv[1]))["context"]
assert ctx["host_load"] == {"load_avg_1m": float(sys.argv[2]), "cores": int(sys.argv[3])}, ctx["host_load"]
assert sys.argv[4] in ctx["notices"], ctx["notices"]
PY
ATTNPROF_TEST_LOAD_AVG=$cores "$attnprof" sweep "${one_point[@]}" --out "$scratch/calm" >"$scratch/calm.log" 2>&1 ||
  fail "calm sweep: $(tail -n 5 "$scratch/calm.log")"
! grep -q "machine is busy" "$scratch/calm.log" || fail "a load equal to the cores was called busy"
# Without the hook: the machine's own figures, whatever they are.
"$attnprof" sweep "${one_point[@]}" --out "$scratch/real" >"$scratch/real.log" 2>&1 ||
  fail "sweep: $(tail -n 5 "$scratch/real.log")"
python3 - "$scratch/real/results.json" "$cores" <<'PY' || fail "results.json: host_load"
import json, sys
load = json.load(open(sys.argv[1]))["context"]["host_load"]
assert load["cores"] == int(sys.argv[2]) and load["load_avg_1m"] >= 0, load
PY
echo "test_sweep: ok"
