#!/usr/bin/env bash
# The published measurements in reports/ read as this checkout diagnoses them: for every committed
# reports/<name>/results.json, summary.md and points.csv rendered now (verdicts, flags and every
# diagnosis metric per point) equal the committed ones; reports/README.md has a row for every folder;
# reports/ holds under 18 MB of committed files. The checks are scripts/regen_reports.sh --check's.
#
# usage: committed_reports_test.sh ATTNPROF SOURCE_DIR WORK_DIR
set -uo pipefail
bin=$(realpath "$1") source=$2 work=$(realpath -m "$3")
rm -rf "$work" && mkdir -p "$work"
ATTNPROF="$bin" bash "$source/scripts/regen_reports.sh" --check "$work"
