#!/usr/bin/env bash
# `attnprof history` (src/cli/history.cpp) on the synthetic results given samples: two identical runs have
# no change point, the Markdown and HTML trends are written; a run slower by half is a change point; one
# run alone is usage (exit 2). Usage: test_history.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"
fixture="$(cd "$(dirname "$0")/../report/fixtures" && pwd)/synthetic_results.json"
# The fixture's points with 60 samples each around their P50 (a.json, b.json the same), and every sample
# 1.5 times longer (c.json).
python3 - "$fixture" "$scratch" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
def with_samples(factor):
    out = json.loads(json.dumps(d))
    for r in out["records"]:
        lat = r.get("latency") or {}
        if r["status"] != "ok" or not isinstance(lat.get("p50_us"), (int, float)):
            continue
        r["samples_us"] = [lat["p50_us"] * factor * (1 + 0.0005 * (i % 7 - 3)) for i in range(60)]
        for key in ("mean_us", "min_us", "p50_us", "p90_us", "p99_us", "max_us", "p50_ci_low_us", "p50_ci_high_us"):
            if isinstance(lat.get(key), (int, float)):
                lat[key] *= factor
    return out
for name, factor in (("a", 1.0), ("b", 1.0), ("c", 1.5)):
    json.dump(with_samples(factor), open(os.path.join(sys.argv[2], name + ".json"), "w"))
PY

"$attnprof" history "$scratch/a.json" "$scratch/b.json" --md "$scratch/h.md" --html "$scratch/h.html" \
  >"$scratch/out" 2>"$scratch/err" || fail "history: $(cat "$scratch/err")"
grep -q "0 slower" "$scratch/h.md" || fail "identical runs have a change point: $(grep -i change "$scratch/h.md")"
grep -q "</html>" "$scratch/h.html" || fail "the HTML trend is cut short"

"$attnprof" history "$scratch/a.json" "$scratch/c.json" --md "$scratch/slower.md" >/dev/null 2>"$scratch/err" ||
  fail "history of a slower run: $(cat "$scratch/err")"
grep -qE "Change points: [1-9][0-9]* slower" "$scratch/slower.md" ||
  fail "a run 1.5x slower has no slower change point: $(grep -i "change points" "$scratch/slower.md")"

got=0
"$attnprof" history "$scratch/a.json" >/dev/null 2>"$scratch/err" || got=$?
[[ "$got" == 2 ]] || fail "one run: exit $got, want 2"
echo "test_history: ok"
