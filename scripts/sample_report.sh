#!/usr/bin/env bash
# Regenerates the committed H200 reports from one side-by-side sweep of `scripts/device/python.sh`
# (its side.tgz, or the folder it unpacks to):
#   scripts/sample_report.sh /path/to/side.tgz [build/attnprof]
# reports/h200-side-by-side/: the whole sweep (fa-bench and decode shapes, attnprof's kernels and
#   PyTorch's SDPA backends): results.json, HTML report, Markdown summary, CSV, and the gap table
#   (scripts/gap_table.py).
# reports/h200-fa-bench/: the same run's fa-bench points of attnprof's own kernels (fused,
#   fused-sm90, reference: 144 points), the sample the report tests and `attnprof history` read.
# Reports are re-rendered with this checkout's renderers (diagnosis recomputed from the JSON).
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
side=reports/h200-side-by-side
fa=reports/h200-fa-bench
mkdir -p "$side" "$fa"
cp "$src/results.json" "$side/results.json"
rm -f "$side/sdpa_shapes.json"
"$bin" report "$side/results.json" --html "$side/report.html" --md "$side/summary.md" --csv "$side/points.csv" -q
python3 scripts/gap_table.py "$side/results.json" > "$side/gap_table.md"
python3 - "$side/results.json" "$fa/results.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ours = ("fused", "fused-sm90", "reference")
doc["records"] = [r for r in doc["records"] if r["kernel"] in ours and r["shape"]["seq_q"] > 16]
doc["context"].setdefault("notices", []).append(
    "the fa-bench points of fused, fused-sm90 and reference from the side-by-side sweep of "
    "reports/h200-side-by-side/results.json (same run; that file has every kernel and the decode shapes)")
with open(sys.argv[2], "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(f"sample_report: {len(doc['records'])} fa-bench points")
PY
rm -f "$fa/sdpa_anchor.json" "$fa/sdpa_anchor_after.json" "$fa/table.md"
"$bin" report "$fa/results.json" --html "$fa/report.html" --md "$fa/summary.md" --csv "$fa/points.csv" -q
echo "sample_report: wrote $side/{results.json,report.html,summary.md,points.csv,gap_table.md} and" \
     "$fa/{results.json,report.html,summary.md,points.csv}"
