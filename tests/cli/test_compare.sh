#!/usr/bin/env bash
# `attnprof compare` (src/cli/compare.cpp) and `attnprof history` on runs whose context records the
# machine's load: a run measured while the load exceeded its cores is named in a warning on stderr (also
# under -q) and in the Markdown, and the verdict is the same; a run within its cores, or a file written
# before the load was recorded, draws no warning. (Exit codes and output files: test_cli_compare.)
# Usage: test_compare.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"
fixtures="$(cd "$(dirname "$0")/../gate/fixtures" && pwd)"
# run_1.json as written (no host_load: a file of schema 1.10), and copies that record a load.
python3 - "$fixtures/run_1.json" "$scratch" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
assert "host_load" not in d["context"]
for name, load in (("busy", {"load_avg_1m": 3.1, "cores": 2}), ("calm", {"load_avg_1m": 1.5, "cores": 2})):
    d["context"]["host_load"] = load
    json.dump(d, open(os.path.join(sys.argv[2], name + ".json"), "w"))
PY
old="$fixtures/run_1.json"

"$attnprof" compare "$old" "$scratch/calm.json" --md "$scratch/calm.md" >"$scratch/out" 2>"$scratch/err" ||
  fail "compare of calm runs: exit $?: $(cat "$scratch/err")"
[[ ! -s "$scratch/err" ]] || fail "a warning for runs within their cores: $(cat "$scratch/err")"
! grep -q "Busy machine" "$scratch/calm.md" || fail "calm runs called busy in the Markdown"
calm_summary=$(tail -n 1 "$scratch/out")

"$attnprof" compare "$scratch/busy.json" "$old" --md "$scratch/busy.md" >"$scratch/out" 2>"$scratch/err" ||
  fail "compare with a busy baseline: exit $?: $(cat "$scratch/err")"
want="attnprof: warning: $scratch/busy.json was measured on a busy machine: load 3.1 on 2 cores; its timings vary with the machine's other work"
grep -qxF "$want" "$scratch/err" || fail "no busy warning: $(cat "$scratch/err")"
[[ "$(wc -l <"$scratch/err")" == 1 ]] || fail "more than the warning on stderr: $(cat "$scratch/err")"
grep -qF "> **Busy machine**: $scratch/busy.json was measured on a busy machine" "$scratch/busy.md" ||
  fail "no busy machine in the Markdown: $(head -n 12 "$scratch/busy.md")"
[[ "$(tail -n 1 "$scratch/out")" == "$calm_summary" ]] || fail "the load changed the verdict: $(tail -n 1 "$scratch/out")"

# -q prints the verdict alone on stdout; the warning still goes to stderr. The candidate's load counts too.
"$attnprof" compare "$old" "$scratch/busy.json" -q >"$scratch/out" 2>"$scratch/err" || fail "compare -q: exit $?"
grep -qF "$scratch/busy.json was measured on a busy machine: load 3.1 on 2 cores" "$scratch/err" ||
  fail "no warning under -q: $(cat "$scratch/err")"

# history: each busy run named once, on stderr (also under -q) and in the Markdown.
"$attnprof" history "$old" "$scratch/busy.json" "$scratch/calm.json" --md "$scratch/h.md" -q >/dev/null 2>"$scratch/err" ||
  fail "history: exit $?: $(cat "$scratch/err")"
grep -qxF "$want" "$scratch/err" || fail "history: no busy warning: $(cat "$scratch/err")"
[[ "$(wc -l <"$scratch/err")" == 1 ]] || fail "history: more than one warning: $(cat "$scratch/err")"
grep -qF "> **Busy machine**: $scratch/busy.json was measured" "$scratch/h.md" || fail "history Markdown: no busy machine"
"$attnprof" history "$old" "$scratch/calm.json" -q >/dev/null 2>"$scratch/err" || fail "calm history: exit $?"
[[ ! -s "$scratch/err" ]] || fail "history of calm runs warns: $(cat "$scratch/err")"
echo "test_compare: ok"
