#!/usr/bin/env bash
# The README's main command: set-up, build, then a sweep into reports/latest/ (results.json,
# report.html, summary.md, and the journal). Default sweep: the quick preset; arguments go to
# `attnprof sweep` unchanged, e.g.  scripts/run.sh --preset fa-bench  or  scripts/run.sh --axes "...".
# Without an NVIDIA GPU the CPU backend runs, and this script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
bin="${ATTNPROF_BUILD_DIR:-build}/attnprof"

out="reports/latest"
have_spec=no
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  case "${args[i]}" in
    --out) out="${args[i + 1]:-$out}" ;;
    --out=*) out="${args[i]#--out=}" ;;
    --axes|--axes=*|--preset|--preset=*|--spec-file|--spec-file=*) have_spec=yes ;;
  esac
done
extra=()
[[ $have_spec == yes ]] || extra+=(--preset quick)
[[ " $* " == *" --out"* ]] || extra+=(--out "$out")
[[ " $* " == *" --html"* ]] || extra+=(--html "$out/report.html")
[[ " $* " == *" --md"* ]] || extra+=(--md "$out/summary.md")

if [[ " $* " != *" --backend"* ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "run: no NVIDIA GPU on this machine: running the CPU backend (same pipeline, CPU kernels)"
fi

rc=0
"$bin" sweep "${extra[@]}" "$@" || rc=$?
if [[ -s "$out/results.json" ]]; then
  backend=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["context"]; print(c["backend"], "backend on", c["device"]["name"])' "$out/results.json" 2>/dev/null || echo "?")
  echo "run: ran the ${backend}; results in $out/ (results.json, report.html, summary.md)"
fi
exit "$rc"
