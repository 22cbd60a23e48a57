#!/usr/bin/env bash
# Regenerates the sample report in reports/h200-fa-bench/ from a device run of
# `scripts/device/side_by_side.sh` (its tarball, or the folder it unpacks to):
#   scripts/sample_report.sh /path/to/side-by-side.tgz [build/attnprof]
# Copies the sweep's results.json and the PyTorch anchors of the same call (both runs, when the call
# made two), re-renders the HTML report,
# Markdown summary and CSV with this checkout's renderers (diagnosis recomputed from the JSON), and
# writes the side-by-side table (scripts/perf_table.py) to reports/h200-fa-bench/table.md.
set -euo pipefail
cd "$(dirname "$0")/.."
src="${1:?usage: scripts/sample_report.sh RUN.tgz|RUN_DIR [attnprof binary]}"
bin="${2:-build/attnprof}"
dest=reports/h200-fa-bench
if [ -f "$src" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  tar xzf "$src" -C "$work"
  src="$work"
fi
[ -f "$src/fa-bench/results.json" ] || { echo "sample_report: no fa-bench/results.json in $src" >&2; exit 2; }
[ -f "$src/sdpa_anchor.json" ] || { echo "sample_report: no sdpa_anchor.json in $src" >&2; exit 2; }
mkdir -p "$dest"
cp "$src/fa-bench/results.json" "$dest/results.json"
cp "$src/sdpa_anchor.json" "$dest/sdpa_anchor.json"
# The anchors' second run, after the sweep: ratios use PyTorch's best run.
anchors=("$dest/sdpa_anchor.json")
rm -f "$dest/sdpa_anchor_after.json"
if [ -f "$src/sdpa_anchor_after.json" ]; then
  cp "$src/sdpa_anchor_after.json" "$dest/sdpa_anchor_after.json"
  anchors+=("$dest/sdpa_anchor_after.json")
fi
"$bin" report "$dest/results.json" --html "$dest/report.html" --md "$dest/summary.md" --csv "$dest/points.csv" >/dev/null
python3 scripts/perf_table.py "$dest/results.json" "${anchors[@]}" > "$dest/table.md"
echo "sample_report: wrote $dest/{results.json,sdpa_anchor.json,report.html,summary.md,points.csv,table.md}"
