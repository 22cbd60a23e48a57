#!/usr/bin/env bash
# A CPU plugin through the whole pipeline with the real binary: listed, swept beside built-in kernels,
# verified against float64 (in its own BSHD layout), reported, gated, resumed, sharded and merged; then
# every loader error (exit 2, one line naming the file), and plugin kernels that throw, crash, hang,
# fail, write wrong numbers or write nothing: each fails its own points and the sweep goes on.
# Usage: plugin_test.sh ATTNPROF CPU_PLUGIN TEST_PLUGIN_DIR
source "$(dirname "$0")/../run/lib.sh"
plugin="$2"
bad="$3"
[[ -f "$plugin" ]] || fail "no example plugin at '$plugin'"
axes="batch=1;heads=4;kv_heads=2;seq=32,48;hdim=32;causal=0,1;dtype=fp32"

# Listed, with its backend, layout and support.
"$attnprof" kernels --plugin "$plugin" >"$scratch/kernels.txt" || fail "kernels --plugin failed"
grep -q "^example-cpu  \[cpu\]" "$scratch/kernels.txt" || fail "example-cpu not listed: $(cat "$scratch/kernels.txt")"
grep -q "layout bshd" "$scratch/kernels.txt" || fail "the plugin's layout is not listed"
grep -q "^fused  \[cpu\]" "$scratch/kernels.txt" || fail "built-in kernels missing from the list"
"$attnprof" kernels --plugin "$plugin" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
k = {e["name"]: e for e in d["kernels"]}["example-cpu"]
assert k["backend"] == "cpu" and k["layout"] == "bshd" and k["causal"] and k["gqa"], k
assert not k["window"] and {e["name"]: e for e in d["kernels"]}["fused"]["window"], k
assert d["plugins"][0]["name"] == "example-cpu" and len(d["plugins"][0]["sha256"]) == 64, d["plugins"]
' || fail "kernels --json"

# A sliding window never reaches a plugin (ABI 1 carries none): its point is unsupported, the
# built-in kernel beside it runs and passes verification.
"$attnprof" sweep --plugin "$plugin" --kernels example-cpu,fused --axes "batch=1;heads=4;kv_heads=2;seq=48;hdim=32;causal=0,1;dtype=fp32;window=8" \
  "${fast[@]}" --out "$scratch/w" >"$scratch/w.log" 2>&1 || fail "window sweep with the plugin failed: $(tail -n 5 "$scratch/w.log")"
python3 - "$scratch/w/results.json" <<'PY' || fail "window sweep: wrong records"
import json, sys
res = json.load(open(sys.argv[1]))
assert res["schema_version"] == "1.9", res["schema_version"]
recs = res["records"]
assert len(recs) == 4, [(r["key"], r["status"]) for r in recs]
for r in recs:
    assert r["shape"]["window"] == 8 and "win8" in r["key"], r["key"]
    if r["kernel"] == "example-cpu":
        assert r["status"] == "unsupported" and "sliding window" in r["reason"], (r["key"], r["status"], r["reason"])
    else:
        assert r["status"] == "ok" and r["verification"]["passed"], (r["key"], r["status"], r["reason"])
PY

# Nor does a packed variable-length batch (ABI 1 has no cu_seqlens): unsupported for the plugin, run
# and verified by the built-in kernel; the catalogue says which kernels run packed batches.
"$attnprof" sweep --plugin "$plugin" --kernels example-cpu,fused --axes "heads=4;kv_heads=2;hdim=32;causal=1;dtype=fp32;lengths=list:17/1/40" \
  "${fast[@]}" --out "$scratch/v" >"$scratch/v.log" 2>&1 || fail "varlen sweep with the plugin failed: $(tail -n 5 "$scratch/v.log")"
python3 - "$scratch/v/results.json" <<'PY' || fail "varlen sweep: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 2, [(r["key"], r["status"]) for r in recs]
for r in recs:
    assert r["shape"]["seq_lens"] == [17, 1, 40] and "varlen list:17/1/40" in r["key"], r["key"]
    if r["kernel"] == "example-cpu":
        assert r["status"] == "unsupported" and "variable-length" in r["reason"], (r["key"], r["status"], r["reason"])
    else:
        assert r["status"] == "ok" and r["verification"]["passed"], (r["key"], r["status"], r["reason"])
PY
"$attnprof" kernels --plugin "$plugin" --json | python3 -c '
import json, sys
k = {e["name"]: e for e in json.load(sys.stdin)["kernels"]}
assert not k["example-cpu"]["varlen"] and k["fused"]["varlen"] and k["reference"]["varlen"], k
' || fail "kernels --json: varlen support"

# Nor a value head dim of its own (ABI 1's attnprof_shape has one hdim): unsupported for the plugin
# with that reason, run and verified by the built-in kernels; the catalogue says which run it.
"$attnprof" sweep --plugin "$plugin" --kernels example-cpu,fused,reference --axes "heads=4;kv_heads=2;seq=40;hdim=32;hdim_v=16,64;causal=1;dtype=fp32" \
  "${fast[@]}" --out "$scratch/dv" >"$scratch/dv.log" 2>&1 || fail "hdim_v sweep with the plugin failed: $(tail -n 5 "$scratch/dv.log")"
python3 - "$scratch/dv/results.json" <<'PY' || fail "hdim_v sweep: wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert len(recs) == 6, [(r["key"], r["status"]) for r in recs]
for r in recs:
    dv = r["shape"]["hdim_v"]
    assert dv in (16, 64) and f"d32v{dv}" in r["key"], r["key"]
    if r["kernel"] == "example-cpu":
        assert r["status"] == "unsupported" and r["reason"] == (
            f"example-cpu: value head dim {dv} differs from the query/key head dim 32 "
            "(plugin ABI version 1's attnprof_shape has one hdim)"), (r["key"], r["status"], r["reason"])
    else:
        assert r["status"] == "ok" and r["verification"]["passed"], (r["key"], r["status"], r["reason"])
        assert r["cost"]["flops"] == 4 * 40 * 41 / 2 * 2 * (32 + dv), (r["key"], r["cost"]["flops"])
PY
"$attnprof" kernels --plugin "$plugin" --json | python3 -c '
import json, sys
k = {(e["backend"], e["name"]): e for e in json.load(sys.stdin)["kernels"]}
assert not k["cpu", "example-cpu"]["hdim_v"] and k["cpu", "fused"]["hdim_v"] and k["cpu", "reference"]["hdim_v"], k
for name in ("fused", "fused-sm90", "decode", "fused-auto"):
    assert not k.get(("cuda", name), {"hdim_v": False})["hdim_v"], name
assert k.get(("cuda", "reference"), {"hdim_v": True})["hdim_v"]
' || fail "kernels --json: hdim_v support"

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
assert p["version"] == "1.0" and p["kernels"] == ["example-cpu"] and p["abi_version"] == 1, p
PY

# Reports and the gate read plugin points like any other.
"$attnprof" report "$scratch/a/results.json" --html "$scratch/a.html" --md "$scratch/a.md" --csv "$scratch/a.csv" \
  >/dev/null || fail "report failed"
grep -q "example-cpu" "$scratch/a.md" || fail "the Markdown report has no plugin row"
grep -q "example-cpu" "$scratch/a.csv" || fail "the CSV has no plugin row"
"$attnprof" sweep --plugin "$plugin" --kernels example-cpu,fused --axes "$axes" "${fast[@]}" --out "$scratch/b" \
  >"$scratch/b.log" 2>&1 || fail "second sweep failed"
rc=0
"$attnprof" compare "$scratch/a/results.json" "$scratch/b/results.json" --md "$scratch/gate.md" >"$scratch/gate.log" 2>&1 || rc=$?
[[ $rc -eq 0 || $rc -eq 3 ]] || fail "compare of two plugin runs exited $rc: $(tail -n 5 "$scratch/gate.log")"
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
check_refused "ABI mismatch" "built for plugin ABI version 99, this attnprof speaks version 1" --plugin "$bad/bad_abi_mismatch.so"
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
sweep_bad hang --point-timeout 2
check_points hang failed "timed out"
(($(date +%s) - start < 120)) || fail "hanging plugin points were not cut off by --point-timeout"
echo "plugins: ok"
