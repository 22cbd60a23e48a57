#!/usr/bin/env bash
# `attnprof report` (src/cli/report.cpp) on the synthetic results of tests/report/fixtures: the table on
# stdout, each requested file written, --quiet prints nothing; a file that is not results is exit 2.
# Usage: test_report.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"
fixture="$(cd "$(dirname "$0")/../report/fixtures" && pwd)/synthetic_results.json"

"$attnprof" report "$fixture" --md "$scratch/r.md" --csv "$scratch/r.csv" --html "$scratch/r.html" \
  >"$scratch/table" 2>"$scratch/err" || fail "report: $(cat "$scratch/err")"
grep -q "NVIDIA H200" "$scratch/table" || fail "the table does not name the device: $(head -n 5 "$scratch/table")"
for f in r.md r.csv r.html; do [[ -s "$scratch/$f" ]] || fail "no $f"; done
# One CSV row per record, after the header.
records="$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["records"]))' "$fixture")"
rows="$(python3 -c 'import csv, sys; print(len(list(csv.reader(open(sys.argv[1])))) - 1)' "$scratch/r.csv")"
[[ "$rows" == "$records" ]] || fail "CSV rows $rows, records $records"
grep -q "</html>" "$scratch/r.html" || fail "the HTML report is cut short"

"$attnprof" report "$fixture" --quiet >"$scratch/quiet" 2>&1 || fail "report --quiet failed"
[[ ! -s "$scratch/quiet" ]] || fail "report --quiet printed: $(head -n 3 "$scratch/quiet")"

echo '{"not": "results"}' >"$scratch/bad.json"
got=0
"$attnprof" report "$scratch/bad.json" >/dev/null 2>"$scratch/err" || got=$?
[[ "$got" == 2 ]] || fail "a file that is not results: exit $got, want 2"
[[ "$(wc -l <"$scratch/err")" == 1 ]] || fail "not one line: $(cat "$scratch/err")"
echo "test_report: ok"
