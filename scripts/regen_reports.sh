#!/usr/bin/env bash
# Renders every published measurement in reports/ again with this checkout's attnprof: for each
# reports/<name>/results.json, `attnprof report` recomputes the diagnosis and writes summary.md and
# points.csv (both committed) and report.html (self-contained, git-ignored) beside it.
#
#   scripts/regen_reports.sh                 # builds build/attnprof when it is missing
#   ATTNPROF=build-cpu/attnprof scripts/regen_reports.sh
#   scripts/regen_reports.sh --check OUT_DIR # renders into OUT_DIR/<name>/ and compares with the committed files
#
# --check is tests/report/committed_reports_test.sh: exit 1 when a committed summary.md or points.csv
# differs from what this checkout computes (run the script without --check, then commit), when
# reports/README.md has no row for a folder, or when reports/ holds 18 MB or more of committed files.
set -euo pipefail

check_dir=""
if [ "${1:-}" = "--check" ]; then
  check_dir=$(realpath -m "${2:?usage: scripts/regen_reports.sh [--check OUT_DIR]}")
fi
bin=$(realpath -m "${ATTNPROF:-$(dirname "$0")/../build/attnprof}")
cd "$(dirname "$0")/.."
if [ ! -x "$bin" ]; then
  [ -z "$check_dir" ] || { echo "regen_reports: no attnprof at $bin (set ATTNPROF)" >&2; exit 2; }
  scripts/build.sh attnprof
fi

# The published measurements: the results files git tracks under reports/ (reports/latest and
# reports/runs/, where scripts/run.sh writes, and any folder of your own are not among them).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t results < <(git ls-files 'reports/*/results.json')
  mapfile -t committed < <(git ls-files reports)
else
  shopt -s nullglob
  results=() committed=()
  for res in reports/*/results.json; do [ "$res" = reports/latest/results.json ] || results+=("$res"); done
  while IFS= read -r f; do committed+=("$f"); done < <(find reports -type f ! -name report.html ! -path "reports/latest/*" ! -path "reports/runs/*")
fi
[ ${#results[@]} -gt 0 ] || { echo "regen_reports: no reports/*/results.json" >&2; exit 2; }

stale=0
for res in "${results[@]}"; do
  dir=$(dirname "$res")
  name=$(basename "$dir")
  if [ -z "$check_dir" ]; then
    "$bin" report "$res" --quiet --md "$dir/summary.md" --csv "$dir/points.csv" --html "$dir/report.html"
    echo "regen_reports: $dir/{summary.md,points.csv,report.html}"
    continue
  fi
  out="$check_dir/$name"
  mkdir -p "$out"
  "$bin" report "$res" --quiet --md "$out/summary.md" --csv "$out/points.csv"
  for f in summary.md points.csv; do
    if ! cmp -s "$dir/$f" "$out/$f"; then
      stale=1
      echo "regen_reports: $dir/$f differs from what this checkout renders ($out/$f):"
      diff "$dir/$f" "$out/$f" 2>&1 | head -n 12 || true
    fi
  done
done

if [ -n "$check_dir" ]; then
  for res in "${results[@]}"; do
    name=$(basename "$(dirname "$res")")
    grep -q "^| \`$name/\`" reports/README.md ||
      { stale=1; echo "regen_reports: reports/README.md has no row for $name/"; }
  done
  bytes=$(for f in "${committed[@]}"; do [ -f "$f" ] && stat -c %s "$f"; done | awk '{s += $1} END {print s + 0}')
  if [ "$bytes" -ge 18000000 ]; then
    stale=1
    echo "regen_reports: reports/ holds $bytes bytes of committed files (keep it under 18 MB)"
  fi
  if [ "$stale" -ne 0 ]; then
    echo "regen_reports: run scripts/regen_reports.sh and commit reports/" >&2
    exit 1
  fi
  echo "regen_reports: ${#results[@]} reports match this checkout's diagnosis; reports/ holds $bytes bytes"
fi
