#!/usr/bin/env bash
# Plugins that misbehave while attnprof loads them or asks what they support. attnprof runs their code
# only in child processes (the plugin probe, the workers), so whatever they do - a signal, a hang, an
# exception, exit(), output on stdout - `kernels` and `sweep` end with one line and exit 2, write no
# results, and print only their own output on stdout. Then: a truncated library; paths with a byte that
# is not UTF-8 and with a terminal escape; a plugin rebuilt at its path during a sweep, whose later
# points fail with the reason while built-in points go on, and whose results name the hash measured.
# Usage: hostile_test.sh ATTNPROF CPU_PLUGIN TEST_PLUGIN_DIR
source "$(dirname "$0")/../run/lib.sh"
plugin="$2"
dir="$3"
[[ -f "$plugin" && -f "$dir/hostile_entry_segv.so" ]] || fail "no test plugins in '$dir'"

# `kernels` and `sweep` both refuse the plugin: exit 2, one line of attnprof's own naming what failed.
refused() {
  local what="$1" so="$2" pattern="$3" rc
  for cmd in kernels sweep; do
    rc=0
    if [[ $cmd == kernels ]]; then
      timeout 60 "$attnprof" kernels --plugin "$so" --plugin-timeout 3 >"$scratch/out" 2>"$scratch/err" || rc=$?
    else
      timeout 60 "$attnprof" sweep --plugin "$so" --plugin-timeout 3 "${fast[@]}" --axes "$tiny_axes" \
        --out "$scratch/sweep" >"$scratch/out" 2>"$scratch/err" || rc=$?
    fi
    [[ $rc -eq 2 ]] || fail "$what ($cmd): exit $rc, expected 2: $(cat "$scratch/err")"
    [[ $(grep -c '^attnprof' "$scratch/err") -eq 1 ]] || fail "$what ($cmd): not one line: $(cat "$scratch/err")"
    grep -q -- "$pattern" "$scratch/err" || fail "$what ($cmd): '$pattern' not in: $(cat "$scratch/err")"
    [[ ! -s "$scratch/out" ]] || fail "$what ($cmd): wrote on stdout: $(cat "$scratch/out")"
    [[ ! -e "$scratch/sweep/results.json" ]] || fail "$what: a refused sweep wrote results"
  done
}
refused "entry point exported as data" "$dir/hostile_entry_as_data.so" "loading plugin '.*hostile_entry_as_data.so': the probe process ended (signal"
refused "entry point that segfaults" "$dir/hostile_entry_segv.so" "the probe process ended (signal 11"
refused "entry point that aborts" "$dir/hostile_entry_abort.so" "the probe process ended (signal 6"
refused "entry point that throws" "$dir/hostile_entry_throw.so" "attnprof_plugin_entry() threw: the plugin's entry point threw on purpose"
refused "constructor that calls exit(0)" "$dir/hostile_ctor_exit.so" "the probe process ended (exit code 0) without answering"
start=$(date +%s)
refused "entry point that never returns" "$dir/hostile_entry_hang.so" "no answer within 3 s (--plugin-timeout); the probe was killed"
(($(date +%s) - start < 30)) || fail "a hanging entry point was not cut off by --plugin-timeout"

# supports() runs under `kernels` (the probe asks it over its grid); the sweep asks it only in a
# worker, where it costs its own points.
for mode in segv abort hang; do
  rc=0
  timeout 60 "$attnprof" kernels --plugin "$dir/hostile_supports_$mode.so" --plugin-timeout 3 >"$scratch/out" 2>"$scratch/err" || rc=$?
  [[ $rc -eq 2 ]] || fail "supports() that does $mode under kernels: exit $rc: $(cat "$scratch/err")"
  [[ $(wc -l <"$scratch/err") -eq 1 ]] || fail "supports() $mode: not one line: $(cat "$scratch/err")"
  grep -q "asking plugin kernel 'hostile' which probe shapes it supports" "$scratch/err" ||
    fail "supports() $mode: the step is not named: $(cat "$scratch/err")"
done
"$attnprof" sweep --plugin "$dir/hostile_supports_segv.so" --kernels hostile,fused "${fast[@]}" --axes "$tiny_axes" \
  --out "$scratch/s_segv" >"$scratch/s.log" 2>&1 || fail "a sweep with a crashing supports() failed: $(tail -n 3 "$scratch/s.log")"
python3 - "$scratch/s_segv/results.json" <<'PY' || fail "crashing supports(): wrong records"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
assert all(r["status"] == "failed" and "died" in r["reason"] for r in recs if r["kernel"] == "hostile"), recs
assert all(r["status"] == "ok" for r in recs if r["kernel"] == "fused")
PY

# A constructor that prints on stdout: the listing stays clean JSON, the print goes to stderr.
"$attnprof" kernels --plugin "$dir/hostile_ctor_print.so" --json >"$scratch/k.json" 2>"$scratch/err" ||
  fail "kernels --json with a printing constructor failed: $(cat "$scratch/err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any(k["name"]=="hostile" for k in d["kernels"])' \
  "$scratch/k.json" || fail "kernels --json is not clean JSON: $(head -c 300 "$scratch/k.json")"
grep -q "hello from a plugin's constructor" "$scratch/err" || fail "the constructor's print was lost"

# A half-copied library.
head -c 3000 "$dir/plain_v2.so" >"$scratch/truncated.so"
refused "a truncated library" "$scratch/truncated.so" "truncated.so"

# Paths are bytes: one that is not UTF-8 lists and sweeps; a terminal escape in one never reaches the
# terminal raw.
odd="$scratch/$(printf 'odd\xff\x1b[31mname').so"
cp "$plugin" "$odd"
"$attnprof" kernels --plugin "$odd" --json >"$scratch/k.json" 2>"$scratch/err" || fail "kernels --json of a non-UTF-8 path: $(cat "$scratch/err")"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$scratch/k.json" || fail "kernels --json of a non-UTF-8 path is not JSON"
"$attnprof" kernels --plugin "$odd" >"$scratch/k.txt" 2>"$scratch/err" || fail "kernels of an odd path: $(cat "$scratch/err")"
grep -q $'\x1b' "$scratch/k.txt" && fail "kernels printed an escape character raw"
grep -q 'odd\\xff\\x1b\[31mname' "$scratch/k.txt" || fail "kernels does not show the odd path escaped: $(head -n 3 "$scratch/k.txt")"
"$attnprof" sweep --plugin "$odd" --kernels example-cpu "${fast[@]}" --axes "$tiny_axes" --out "$scratch/odd" \
  >"$scratch/odd.log" 2>&1 || fail "a sweep with a non-UTF-8 plugin path failed: $(tail -n 3 "$scratch/odd.log")"
grep -q $'\x1b' "$scratch/odd.log" && fail "sweep printed an escape character raw"

# A plugin rebuilt at its path during the sweep: its first point appends a byte to its own file and
# crashes; the next worker finds other bytes than the sweep pinned and does not load them.
cp "$dir/misbehaving_rebuild.so" "$scratch/rebuild.so"
pinned=$(sha256sum "$scratch/rebuild.so" | cut -d' ' -f1)
"$attnprof" sweep --plugin "$scratch/rebuild.so" --kernels plugin-rebuild,fused "${fast[@]}" --axes "$tiny_axes" \
  --out "$scratch/rb" >"$scratch/rb.log" 2>&1 || fail "the rebuild sweep failed: $(tail -n 3 "$scratch/rb.log")"
python3 - "$scratch/rb/results.json" "$pinned" <<'PY' || fail "rebuilt plugin: wrong records"
import json, sys
res = json.load(open(sys.argv[1]))
recs = res["records"]
mine = [r for r in recs if r["kernel"] == "plugin-rebuild"]
assert len(mine) == 4, len(mine)
assert "died while measuring" in mine[0]["reason"], mine[0]["reason"]
for r in mine[1:]:
    assert r["status"] == "failed" and "changed on disk during the sweep" in r["reason"], (r["key"], r["reason"])
    assert sys.argv[2][:16] in r["reason"], r["reason"]
assert all(r["status"] == "ok" for r in recs if r["kernel"] == "fused"), [(r["key"], r["status"]) for r in recs]
assert res["context"]["plugins"][0]["sha256"] == sys.argv[2], res["context"]["plugins"]
PY
echo "plugins_hostile: ok"
