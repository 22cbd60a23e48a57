#!/usr/bin/env bash
# A CPU plugin through the whole pipeline with the real binary: listed, swept beside built-in kernels,
# verified against float64 (in its own BSHD layout), over sliding windows and packed variable-length
# batches too (plugin ABI version 2), reported, gated, resumed, sharded and merged; the same example
# built for ABI version 1, which still runs dense points and is given no windowed or packed one; then
# the backward pass (plugin ABI version 3) run by the example and verified, its twin with a wrong dK
# failing verification; a quantized KV cache (plugin ABI version 4) read by the example and verified,
# its twin that ignores the scales failing verification, and plugins of older versions given no quantized or fp8 point; then
# every loader error (exit 2, one line naming the file), and plugin kernels that throw, crash, hang,
# fail, write wrong numbers or write nothing: each fails its own points and the sweep goes on.
# Usage: plugin_test.sh ATTNPROF CPU_PLUGIN TEST_PLUGIN_DIR
source "$(dirname "$0")/../run/lib.sh"
plugin="$2"
bad="$3"
v1="$bad/cpu_attention_v1.so"      # examples/plugins/cpu_attention.c as built for ABI version 1
plain="$bad/plain_v2.so"           # built for ABI version 2, declaring neither the window nor the varlen flag
plain3="$bad/plain_v3.so"          # built for ABI version 3 (no quantized KV cache, no fp8)
plain4="$bad/plain_v4.so"          # ABI version 4, declaring neither the quantized-KV nor the fp8 flag
noscale="$bad/cpu_attention_noscale.so"  # the example, reading quantized K and V but ignoring their scales
dkbug="$bad/cpu_attention_dkbug.so"      # the example, its backward's dK missing the softmax scale
[[ -f "$plugin" ]] || fail "no example plugin at '$plugin'"
[[ -f "$v1" && -f "$plain" && -f "$plain3" && -f "$plain4" && -f "$noscale" && -f "$dkbug" ]] || fail "no test plugins in '$bad'"
axes="batch=1;heads=4;kv_heads=2;seq=32,48;hdim=32;causal=0,1;dtype=fp32"

# Listed, with its backend, layout and support.
"$attnprof" kernels --plugin "$plugin" >"$scratch/kernels.txt" || fail "kernels --plugin failed"
grep -q "^example-cpu  \[cpu\]" "$scratch/kernels.txt" || fail "example-cpu not listed: $(cat "$scratch/kernels.txt")"
grep -q "layout bshd" "$scratch/kernels.txt" || fail "the plugin's layout is not listed"
grep -q "^fused  \[cpu\]" "$scratch/kernels.txt" || fail "built-in kernels missing from the list"
"$attnprof" kernels --plugin "$plugin" --plugin "$v1" --plugin "$plain" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
ks = {e["name"]: e for e in d["kernels"]}
k = ks["example-cpu"]
assert k["backend"] == "cpu" and k["layout"] == "bshd" and k["causal"] and k["gqa"], k
# ABI version 2 with the flags: the window and packed batches; built for version 1, or without the
# flags: neither.
assert k["window"] and k["varlen"], k
for name in ("example-cpu-v1", "plain-v2"):
    assert not ks[name]["window"] and not ks[name]["varlen"], ks[name]
assert ks["fused"]["window"] and ks["fused"]["varlen"] and ks["reference"]["varlen"], ks["fused"]
assert d["plugins"][0]["name"] == "example-cpu" and len(d["plugins"][0]["sha256"]) == 64, d["plugins"]
assert [p["abi_version"] for p in d["plugins"]] == [4, 1, 2], d["plugins"]
' || fail "kernels --json"

# Sliding windows (none, the diagonal, narrower and wider than the sequence), causal or not: the ABI 2
# example runs every point and each passes verification against float64. The same example built for
# ABI 1 still runs the dense points (window 0) and verifies, and its windowed points are unsupported
# (ABI 1 carries no window), as are those of an ABI 2 kernel that does not declare the window flag.
"$attnprof" sweep --plugin "$plugin" --plugin "$v1" --plugin "$plain" --kernels example-cpu,example-cpu-v1,plain-v2,fused \
  --axes "batch=2;heads=4;kv_heads=2;seq_q=48;seq_k=48,61;hdim=32;causal=0,1;dtype=fp32;window=0,1,8,200" \
  "${fast[@]}" --out "$scratch/w" >"$scratch/w.log" 2>&1 || fail "window sweep with the plugin failed: $(tail -n 5 "$scratch/w.log")"
python3 - "$scratch/w/results.json" <<'PY' || fail "window sweep: wrong records"
import json, sys
res = json.load(open(sys.argv[1]))
assert res["schema_version"] == "1.14", res["schema_version"]
recs = res["records"]
assert len(recs) == 4 * 16, [(r["key"], r["status"]) for r in recs]
assert [p["abi_version"] for p in res["context"]["plugins"]] == [4, 1, 2], res["context"]["plugins"]
windows = set()
for r in recs:
    window = r["shape"].get("window", 0)
    windows.add(window)
    assert (f"win{window}" in r["key"]) == (window > 0), r["key"]
    runs = window == 0 and r["kernel"] != "plain-v2" or r["kernel"] in ("example-cpu", "fused")
    if runs:
        assert r["status"] == "ok" and r["verification"]["passed"] and r["verification"]["rows_checked"] > 0, (r["key"], r["status"], r["reason"])
        assert r["verification"]["lse_checked"] or r["kernel"] == "fused", r["key"]
    elif r["kernel"] == "example-cpu-v1":
        assert r["status"] == "unsupported" and "sliding window" in r["reason"], (r["key"], r["status"], r["reason"])
        assert "plugin ABI version 1" in r["reason"] and f"(window {window})" in r["reason"], r["reason"]
    elif window > 0:
        assert r["status"] == "unsupported" and "ATTNPROF_KERNEL_MASKS_WINDOW" in r["reason"], (r["key"], r["status"], r["reason"])
assert windows == {0, 1, 8, 200}, windows
PY

# Packed variable-length batches, a list (with a sequence of one token) and a seeded draw, causal or
# not, with and without a window: the ABI 2 example runs and verifies each; for the ABI 1 build
# (ABI 1 has no cu_seqlens) and an ABI 2 kernel without the varlen flag they are unsupported; the
# built-in kernel runs and verifies them.
varlen_axes="heads=4;kv_heads=2;hdim=32;causal=0,1;dtype=fp32;window=0,7;lengths=list:17/1/40"
varlen_axes+=" | batch=5;heads=4;kv_heads=2;hdim=32;causal=0,1;dtype=fp32;window=0,7;lengths=uniform:1:64;lengths_seed=3"
"$attnprof" sweep --plugin "$plugin" --plugin "$v1" --plugin "$plain" --kernels example-cpu,example-cpu-v1,plain-v2,fused \
  --axes "$varlen_axes" "${fast[@]}" --out "$scratch/v" >"$scratch/v.log" 2>&1 ||
  fail "varlen sweep with the plugin failed: $(tail -n 5 "$scratch/v.log")"
python3 - "$scratch/v/results.json" <<'PY' || fail "varlen sweep: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 4 * 8, [(r["key"], r["status"]) for r in recs]
lists = 0
for r in recs:
    assert r["shape"]["seq_lens"] and "varlen" in r["key"], r["key"]
    if r["shape"]["lengths"] == "list:17/1/40":
        lists += 1
        assert r["shape"]["seq_lens"] == [17, 1, 40] and "varlen list:17/1/40" in r["key"], r["key"]
    else:
        assert len(r["shape"]["seq_lens"]) == 5 and len(set(r["shape"]["seq_lens"])) > 1, r["shape"]
    if r["kernel"] in ("example-cpu", "fused"):
        assert r["status"] == "ok" and r["verification"]["passed"] and r["verification"]["rows_checked"] > 0, (r["key"], r["status"], r["reason"])
    elif r["kernel"] == "example-cpu-v1":
        assert r["status"] == "unsupported", (r["key"], r["status"], r["reason"])
        assert ("variable-length" if "win" not in r["key"] else "sliding window") in r["reason"], (r["key"], r["reason"])
        assert "plugin ABI version 1" in r["reason"], r["reason"]
    else:
        assert r["status"] == "unsupported", (r["key"], r["status"], r["reason"])
        assert ("ATTNPROF_KERNEL_RUNS_VARLEN" if "win" not in r["key"] else "ATTNPROF_KERNEL_MASKS_WINDOW") in r["reason"], r["reason"]
assert lists == 16, lists
PY
"$attnprof" kernels --plugin "$plugin" --plugin "$v1" --json | python3 -c '
import json, sys
k = {e["name"]: e for e in json.load(sys.stdin)["kernels"]}
assert k["example-cpu"]["varlen"] and k["fused"]["varlen"] and k["reference"]["varlen"], k
assert not k["example-cpu-v1"]["varlen"], k
' || fail "kernels --json: varlen support"

# A value head dim of its own: the v2 example declares ATTNPROF_KERNEL_DISTINCT_HDIM_V and runs it,
# verified; the v1 build (ABI 1's attnprof_shape has one hdim) and plain-v2 (no flag) are unsupported
# with their reasons; the built-in kernels run it; the catalogue says which run it.
"$attnprof" sweep --plugin "$plugin" --plugin "$v1" --plugin "$plain" --kernels example-cpu,example-cpu-v1,plain-v2,fused,reference \
  --axes "heads=4;kv_heads=2;seq=40;hdim=32;hdim_v=16,64;causal=1;dtype=fp32" \
  "${fast[@]}" --out "$scratch/dv" >"$scratch/dv.log" 2>&1 || fail "hdim_v sweep with the plugin failed: $(tail -n 5 "$scratch/dv.log")"
python3 - "$scratch/dv/results.json" <<'PY' || fail "hdim_v sweep: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 10, [(r["key"], r["status"]) for r in recs]
why = {"example-cpu-v1": "plugin ABI version 1's attnprof_shape has one hdim",
       "plain-v2": "the plugin does not declare ATTNPROF_KERNEL_DISTINCT_HDIM_V"}
for r in recs:
    dv = r["shape"]["hdim_v"]
    assert dv in (16, 64) and f"d32v{dv}" in r["key"], r["key"]
    if r["kernel"] in why:
        assert r["status"] == "unsupported" and r["reason"] == (
            f"{r['kernel']}: value head dim {dv} differs from the query/key head dim 32 ({why[r['kernel']]})"), (
            r["key"], r["status"], r["reason"])
    else:
        assert r["status"] == "ok" and r["verification"]["passed"], (r["key"], r["status"], r["reason"])
        assert r["cost"]["flops"] == 4 * 40 * 41 / 2 * 2 * (32 + dv), (r["key"], r["cost"]["flops"])
PY
"$attnprof" kernels --plugin "$plugin" --plugin "$v1" --json | python3 -c '
import json, sys
k = {(e["backend"], e["name"]): e for e in json.load(sys.stdin)["kernels"]}
assert k["cpu", "example-cpu"]["hdim_v"] and not k["cpu", "example-cpu-v1"]["hdim_v"], k
assert k["cpu", "fused"]["hdim_v"] and k["cpu", "reference"]["hdim_v"], k
for name in ("fused", "fused-sm90", "decode", "fused-auto"):
    assert not k.get(("cuda", name), {"hdim_v": False})["hdim_v"], name
assert k.get(("cuda", "reference"), {"hdim_v": True})["hdim_v"]
' || fail "kernels --json: hdim_v support"

# The backward pass (plugin ABI version 3). The example runs it: dQ, dK and dV from its own O and LSE at
# bwd and fwd_bwd points, over grouped-query heads, causal or not with seq_q below seq_k (bottom-right),
# and packed batches with a value head dim of its own and a sliding window; each gradient passes
# verification against float64. Its twin whose dK misses the softmax scale is incorrect at every
# backward point with dK alone failing, and correct at its forward points.
bwd_axes="batch=2;heads=4;kv_heads=2;seq_q=24;seq_k=24,37;hdim=32;causal=0,1;dtype=fp32;pass=fwd,bwd,fwd_bwd"
bwd_axes+=" | heads=4;kv_heads=2;hdim=32;hdim_v=16;causal=0,1;dtype=fp32;window=0,7;lengths=list:17/1/40;pass=bwd"
"$attnprof" sweep --plugin "$plugin" --plugin "$dkbug" --kernels example-cpu,example-cpu-dkbug --axes "$bwd_axes" \
  "${fast[@]}" --out "$scratch/bwd" >"$scratch/bwd.log" 2>&1 || fail "backward sweep with the example failed: $(tail -n 5 "$scratch/bwd.log")"
python3 - "$scratch/bwd/results.json" <<'PY' || fail "backward sweep: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 2 * (12 + 4), [(r["key"], r["status"]) for r in recs]
for r in recs:
    what = (r["key"], r["status"], r["reason"][:300])
    backward = r["shape"].get("pass", "fwd") != "fwd"
    v = r["verification"]
    assert v["checked"] and v["unwritten"] == 0, what
    if not backward:
        assert r["status"] == "ok" and v["passed"] and not v.get("grads"), what
        continue
    assert sorted(v["grads"]) == ["dk", "dq", "dv"], what
    assert all(g["rows_checked"] > 0 for g in v["grads"].values()), what
    if r["kernel"] == "example-cpu":
        assert r["status"] == "ok" and v["passed"] and all(g["passed"] for g in v["grads"].values()), what
    else:
        assert r["status"] == "incorrect" and not v["grads"]["dk"]["passed"], what
        assert v["grads"]["dq"]["passed"] and v["grads"]["dv"]["passed"], what
        assert r["reason"].startswith("verification failed: max |dk - dk_f64| "), what
packed = [r for r in recs if r["shape"].get("seq_lens")]
assert len(packed) == 8 and {r["shape"].get("window", 0) for r in packed} == {0, 7}, [r["key"] for r in packed]
PY

# A plugin built for version 1 or 2 runs its forward points and gets backward points unsupported with
# the reason; so does a version-3 kernel without ATTNPROF_KERNEL_RUNS_BACKWARD.
"$attnprof" sweep --plugin "$v1" --plugin "$plain" --plugin "$plain3" --kernels example-cpu-v1,plain-v2,plain-v3 \
  --axes "heads=2;seq=32;hdim=32;causal=1;dtype=fp32;pass=fwd,bwd" "${fast[@]}" --out "$scratch/bwd_old" \
  >"$scratch/bwd_old.log" 2>&1 || fail "backward sweep with the older plugins failed: $(tail -n 5 "$scratch/bwd_old.log")"
python3 - "$scratch/bwd_old/results.json" <<'PY' || fail "backward sweep with the older plugins: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 6, [(r["key"], r["status"]) for r in recs]
why = {"example-cpu-v1": "example-cpu-v1 cannot be given a backward pass (plugin ABI version 1 has no gradient tensors)",
       "plain-v2": "plain-v2 cannot be given a backward pass (plugin ABI version 2 has no gradient tensors)",
       "plain-v3": "plain-v3 does not declare ATTNPROF_KERNEL_RUNS_BACKWARD (it runs the forward pass only)"}
for r in recs:
    if r["shape"].get("pass", "fwd") == "bwd":
        assert " bwd | " in r["key"] and r["status"] == "unsupported" and r["reason"] == why[r["kernel"]], (
            r["key"], r["status"], r["reason"])
    elif r["kernel"] == "example-cpu-v1":
        assert r["status"] == "ok", (r["key"], r["status"], r["reason"])
    else:  # plain-v2 and plain-v3 compute nothing: their forward is incorrect, not refused
        assert r["status"] == "incorrect", (r["key"], r["status"], r["reason"])
PY

# Quantized inputs (plugin ABI version 4). A quantized KV cache, fp8 and int8 at each scale granularity,
# dense at two seq_k and packed with a value head dim of its own (per-token scales in the token-major
# packed layout): the example reads the bytes and their scales and every point passes verification
# against float64; its twin that ignores the scales is incorrect at every quantized point and ok at
# the unquantized one; plugins built for ABI version 1 or 3 run the unquantized points and get the
# quantized ones unsupported naming their version, as does a version-4 kernel without the flag.
q_axes="batch=2;heads=4;kv_heads=2;seq_q=24;seq_k=24,37;hdim=32;causal=1;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8"
q_axes+=";kv_scale=tensor,head,token | heads=4;kv_heads=2;hdim=32;hdim_v=16;causal=0;dtype=bf16"
q_axes+=";kv_dtype=fp8_e4m3,int8;kv_scale=token;lengths=list:17/1/40"
"$attnprof" sweep --plugin "$plugin" --plugin "$noscale" --plugin "$v1" --plugin "$plain3" --plugin "$plain4" \
  --kernels example-cpu,example-cpu-noscale,example-cpu-v1,plain-v3,plain-v4 --axes "$q_axes" "${fast[@]}" \
  --out "$scratch/quant" >"$scratch/quant.log" 2>&1 || fail "quantized sweep with the plugins failed: $(tail -n 5 "$scratch/quant.log")"
python3 - "$scratch/quant/results.json" <<'PY' || fail "quantized sweep: wrong records"
import json, sys
res = json.load(open(sys.argv[1]))
recs = res["records"]
assert len(recs) == 5 * (2 * 7 + 2), [(r["key"], r["status"]) for r in recs]
assert [p["abi_version"] for p in res["context"]["plugins"]] == [4, 4, 1, 3, 4], res["context"]["plugins"]
why = {"example-cpu-v1": "example-cpu-v1 cannot be given a quantized KV cache (plugin ABI version 1 has no KV scales)",
       "plain-v3": "plain-v3 cannot be given a quantized KV cache (plugin ABI version 3 has no KV scales)",
       "plain-v4": "plain-v4 does not declare ATTNPROF_KERNEL_READS_QUANTIZED_KV (it reads K and V in the dtype only)"}
seen = set()
for r in recs:
    shape, kernel, status = r["shape"], r["kernel"], r["status"]
    kv = shape.get("kv_dtype", "none")
    if kv != "none":
        assert f" kv-{kv}/{shape['kv_scale']}" in r["key"], r["key"]
        seen.add((kv, shape["kv_scale"], bool(shape.get("seq_lens"))))
    what = (r["key"], status, r["reason"])
    if kernel == "example-cpu" or (kernel == "example-cpu-v1" and kv == "none"):
        assert status == "ok" and r["verification"]["passed"] and r["verification"]["rows_checked"] > 0, what
    elif kernel == "example-cpu-noscale":
        assert status == ("ok" if kv == "none" else "incorrect"), what
        assert r["verification"]["passed"] == (kv == "none"), what
    elif kv == "none":  # plain-v3 and plain-v4 compute nothing: incorrect, not refused
        assert status == "incorrect", what
    else:
        assert status == "unsupported" and r["reason"] == f"{why[kernel]} (kv_dtype {kv})", what
assert seen == {(d, g, False) for d in ("fp8_e4m3", "int8") for g in ("tensor", "head", "token")} | {
    (d, "token", True) for d in ("fp8_e4m3", "int8")}, seen
PY

# fp8 prefill (dtype=fp8_e4m3) reaches only a kernel that declares ATTNPROF_KERNEL_RUNS_FP8: the example
# does not, and plugins of ABI version 1 and 3 cannot, each with its reason.
"$attnprof" sweep --plugin "$plugin" --plugin "$v1" --plugin "$plain3" --kernels example-cpu,example-cpu-v1,plain-v3 \
  --axes "heads=2;seq=32;hdim=32;causal=1;dtype=fp8_e4m3" "${fast[@]}" --out "$scratch/fp8" >"$scratch/fp8.log" 2>&1 ||
  fail "fp8 sweep with the plugins failed: $(tail -n 5 "$scratch/fp8.log")"
python3 - "$scratch/fp8/results.json" <<'PY' || fail "fp8 sweep: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 3, [(r["key"], r["status"]) for r in recs]
why = {"example-cpu": "example-cpu does not declare ATTNPROF_KERNEL_RUNS_FP8 (it runs fp16, bf16 and fp32 inputs only)",
       "example-cpu-v1": "example-cpu-v1 cannot be given fp8 Q, K and V (plugin ABI version 1 has no fp8 dtype)",
       "plain-v3": "plain-v3 cannot be given fp8 Q, K and V (plugin ABI version 3 has no fp8 dtype)"}
for r in recs:
    assert r["shape"]["dtype"] == "fp8_e4m3", r["shape"]
    assert r["status"] == "unsupported" and r["reason"] == why[r["kernel"]], (r["key"], r["status"], r["reason"])
PY

# A sweep beside a built-in kernel: every point verified, the plugin recorded by content.
"$attnprof" sweep --plugin "$plugin" --kernels example-cpu,fused --axes "$axes" "${fast[@]}" --out "$scratch/a" \
  >"$scratch/a.log" 2>&1 || fail "sweep with the plugin failed: $(tail -n 5 "$scratch/a.log")"
python3 - "$scratch/a/results.json" "$plugin" <<'PY' || fail "plugin sweep: wrong records"
import hashlib, json, os, sys
res = json.load(open(sys.argv[1]))
recs = res["records"]
mine = [r for r in recs if r["kernel"] == "example-cpu"]
assert len(mine) == 4 and len(recs) == 8, [(r["key"], r["status"]) for r in recs]
for r in mine:
    assert r["status"] == "ok", (r["key"], r["status"], r["reason"])
    v = r["verification"]
    assert v["checked"] and v["passed"] and v["lse_checked"] and v["rows_checked"] > 0, v
    assert r["layout"] == "bshd" and r["latency"]["n"] > 0 and r["diagnosis"], r["key"]
assert all(r["layout"] == "bhsd" for r in recs if r["kernel"] == "fused")
p = res["context"]["plugins"][0]
assert p["path"] == os.path.realpath(sys.argv[2]) or p["path"] == os.path.abspath(sys.argv[2]), p
assert p["sha256"] == hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest(), p
assert p["version"] == "1.0" and p["kernels"] == ["example-cpu"] and p["abi_version"] == 4, p
PY

# Reports and the gate read plugin points like any other.
"$attnprof" report "$scratch/a/results.json" --html "$scratch/a.html" --md "$scratch/a.md" --csv "$scratch/a.csv" \
  >/dev/null || fail "report failed"
grep -q "example-cpu" "$scratch/a.md" || fail "the Markdown report has no plugin row"
grep -q "example-cpu" "$scratch/a.csv" || fail "the CSV has no plugin row"
"$attnprof" sweep --plugin "$plugin" --kernels example-cpu,fused --axes "$axes" "${fast[@]}" --out "$scratch/b" \
  >"$scratch/b.log" 2>&1 || fail "second sweep failed"
# Two runs on a shared CPU with a few samples each may differ by any verdict (pass 0, slower 1, noisy 3);
# what is checked is that the gate reads the plugin's points, not how fast they ran.
rc=0
"$attnprof" compare "$scratch/a/results.json" "$scratch/b/results.json" --md "$scratch/gate.md" >"$scratch/gate.log" 2>&1 || rc=$?
[[ $rc -eq 0 || $rc -eq 1 || $rc -eq 3 ]] || fail "compare of two plugin runs exited $rc: $(tail -n 5 "$scratch/gate.log")"
grep -q "example-cpu" "$scratch/gate.log" "$scratch/gate.md" || fail "the gate does not name the plugin's points"
sha=$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest()[:12])' "$plugin")
grep -q "plugin example-cpu 1.0 (sha256 $sha)" "$scratch/gate.log" || fail "the gate's header does not name the plugin build"

# Resume: a finished journal runs nothing again; a journal of another plugin build is refused.
"$attnprof" sweep --plugin "$plugin" --kernels example-cpu,fused --axes "$axes" "${fast[@]}" --out "$scratch/a" \
  --resume >"$scratch/resume.log" 2>&1 || fail "resume failed: $(tail -n 3 "$scratch/resume.log")"
grep -q "8 of 8 points already done" "$scratch/resume.log" || fail "resume re-ran points: $(cat "$scratch/resume.log")"
cp "$plugin" "$scratch/rebuilt.so"
printf 'x' >>"$scratch/rebuilt.so"
rc=0
"$attnprof" sweep --plugin "$scratch/rebuilt.so" --kernels example-cpu,fused --axes "$axes" "${fast[@]}" \
  --out "$scratch/a" --resume >"$scratch/resume2.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "belongs to another sweep" "$scratch/resume2.log" ||
  fail "resume with a different plugin build was not refused (exit $rc): $(cat "$scratch/resume2.log")"

# Shards and merge.
for k in 1 2; do
  "$attnprof" sweep --plugin "$plugin" --kernels example-cpu,fused --axes "$axes" "${fast[@]}" --shard "$k/2" \
    --out "$scratch/s$k" >"$scratch/s$k.log" 2>&1 || fail "shard $k failed"
done
"$attnprof" merge "$scratch/s1/results.json" "$scratch/s2/results.json" -o "$scratch/merged.json" >/dev/null 2>&1 ||
  fail "merge of plugin shards failed"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["records"]) == 8 and sum(x["kernel"] == "example-cpu" for x in r["records"]) == 4
assert r["context"]["plugins"][0]["name"] == "example-cpu"
' "$scratch/merged.json" || fail "merged file lacks the plugin points"

# Loader errors: exit 2, one line, naming the file and the defect.
printf 'not a library\n' >"$scratch/text.so"
check_refused() {
  local what="$1" pattern="$2"
  shift 2
  local rc=0
  "$attnprof" sweep --backend cpu "$@" --axes "$tiny_axes" --out "$scratch/bad" >"$scratch/bad.log" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "$what: exit $rc, expected 2: $(cat "$scratch/bad.log")"
  [[ $(wc -l <"$scratch/bad.log") -eq 1 ]] || fail "$what: more than one line: $(cat "$scratch/bad.log")"
  grep -q -- "$pattern" "$scratch/bad.log" || fail "$what: '$pattern' not in: $(cat "$scratch/bad.log")"
  [[ ! -e "$scratch/bad/results.json" ]] || fail "$what: a refused sweep wrote results"
}
check_refused "missing file" "no such file" --plugin "$scratch/nosuch.so"
check_refused "not a library" "not a loadable shared library" --plugin "$scratch/text.so"
check_refused "no entry point" "exports no attnprof_plugin_entry" --plugin "$bad/bad_no_entry.so"
check_refused "ABI mismatch" "built for plugin ABI version 99, this attnprof speaks versions 1 to 4" --plugin "$bad/bad_abi_mismatch.so"
check_refused "a future ABI version" "built for plugin ABI version 5, this attnprof speaks versions 1 to 4" --plugin "$bad/bad_abi_next.so"
check_refused "ABI version 0" "built for plugin ABI version 0, this attnprof speaks versions 1 to 4" --plugin "$bad/bad_abi_zero.so"
check_refused "a version 2 flag under ABI version 1" \
  "kernel 'bad-plugin-kernel' declares ATTNPROF_KERNEL_MASKS_WINDOW under plugin ABI version 1" --plugin "$bad/bad_flag_under_v1.so"
check_refused "an unknown flag" "kernel 'bad-plugin-kernel' has unknown flag bits 0x400" --plugin "$bad/bad_unknown_flag.so"
check_refused "struct size" "struct sizes" --plugin "$bad/bad_struct_size.so"
check_refused "no table" "returned no table" --plugin "$bad/bad_no_table.so"
check_refused "null name" "kernel #0 has no name" --plugin "$bad/bad_null_name.so"
check_refused "bad backend" "unknown backend 7" --plugin "$bad/bad_bad_backend.so"
check_refused "no layout" "has layouts 0x0" --plugin "$bad/bad_no_layout.so"
check_refused "null launch" "has no launch() function" --plugin "$bad/bad_null_launch.so"
check_refused "duplicate of a built-in" "kernel name 'fused' is already taken (built-in)" --plugin "$bad/bad_dup_builtin.so"
check_refused "duplicate of another plugin" "kernel name 'example-cpu' is already taken (plugin example-cpu" \
  --plugin "$plugin" --plugin "$scratch/rebuilt.so"
check_refused "a plugin kernel without --plugin" "a plugin's kernels need --plugin" --kernels example-cpu
rc=0
"$attnprof" kernels --plugin "$bad/bad_abi_mismatch.so" >"$scratch/bad.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "kernels with a bad plugin exited $rc"

# Misbehaving kernels fail their own points; everything else is measured.
sweep_bad() {
  local name="$1"
  shift
  "$attnprof" sweep --plugin "$bad/misbehaving_$name.so" --kernels "plugin-$name,fused" --axes "$tiny_axes" "${fast[@]}" \
    "$@" --out "$scratch/m_$name" >"$scratch/m_$name.log" 2>&1 || fail "sweep with plugin-$name failed: $(tail -n 5 "$scratch/m_$name.log")"
}
check_points() {
  python3 - "$scratch/m_$1/results.json" "plugin-$1" "$2" "$3" <<'PY' || fail "plugin-$1: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
name, status, text = sys.argv[2], sys.argv[3], sys.argv[4]
mine = [r for r in recs if r["kernel"] == name]
assert len(mine) == 4 and len(recs) == 8, len(recs)
for r in mine:
    assert r["status"] == status and text in r["reason"], (r["key"], r["status"], r["reason"])
assert all(r["status"] == "ok" for r in recs if r["kernel"] == "fused"), [(r["key"], r["status"]) for r in recs]
if status == "incorrect":
    assert all(r["latency"]["n"] > 0 for r in mine), "an incorrect kernel is still timed"
PY
}
sweep_bad throw
check_points throw failed "launch() threw: the plugin's launch() threw on purpose"
sweep_bad fail
check_points fail failed "launch() failed (3): the plugin reports a launch failure on purpose"
sweep_bad crash
check_points crash failed "died while measuring"
sweep_bad wrong
check_points wrong incorrect "verification failed"
sweep_bad nowrite
check_points nowrite incorrect "unwritten or not finite"
start=$(date +%s)
sweep_bad hang --point-timeout 3
check_points hang failed "timed out"
(($(date +%s) - start < 120)) || fail "hanging plugin points were not cut off by --point-timeout"
echo "plugins: ok"
