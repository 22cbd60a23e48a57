#!/usr/bin/env bash
# Publishes the fa-bench points of one side-by-side sweep of `scripts/device/python.sh` (its side.tgz,
# or the folder it unpacks to) as reports/h200-fa-bench/results.json: attnprof's own kernels (fused,
# fused-sm90, reference) at fa-bench's shapes, the sample the report tests and `attnprof history`
# read (scripts/fa_bench_subset.py). Then renders every published report again
# (scripts/regen_reports.sh) and prints the sweep's gap table (scripts/gap_table.py).
#   scripts/sample_report.sh /path/to/side.tgz [build/attnprof]
set -euo pipefail
cd "$(dirname "$0")/.."
src="${1:?usage: scripts/sample_report.sh SIDE.tgz|SIDE_DIR [attnprof binary]}"
bin="${2:-build/attnprof}"
if [ -f "$src" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  tar xzf "$src" -C "$work"
  src="$work"
fi
[ -f "$src/results.json" ] || { echo "sample_report: no results.json in $src" >&2; exit 2; }
fa=reports/h200-fa-bench
mkdir -p "$fa"
python3 scripts/fa_bench_subset.py "$src/results.json" "$fa/results.json"
ATTNPROF="$bin" scripts/regen_reports.sh
python3 scripts/gap_table.py "$src/results.json"
echo "sample_report: wrote $fa/results.json; commit it with reports/ (reports/README.md names its command and date)"
