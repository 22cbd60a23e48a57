#!/usr/bin/env bash
# The README's main command: set-up, build, then a sweep into reports/latest/ (results.json,
# report.html, summary.md, and the journal). Default sweep: the quick preset; arguments go to
# `attnprof sweep` unchanged, e.g.  scripts/run.sh --preset fa-bench  or  scripts/run.sh --axes "...".
# Without an NVIDIA GPU the CPU backend runs, and this script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir="${ATTNPROF_BUILD_DIR:-build}"
bin="$build_dir/attnprof"
# What is built and roughly how long: only the attnprof binary (scripts/test.sh builds the tests). The
# minutes are core-minutes measured for a first build (the CUDA kernels' templates dominate) spread
# over this machine's cores; a rebuild compiles only what changed.
cores=$(nproc)
if [[ " ${ATTNPROF_CMAKE_ARGS:-} " == *"ATTNPROF_ENABLE_CUDA=OFF"* ]]; then
  what="attnprof, CPU backend only (ATTNPROF_ENABLE_CUDA=OFF)"
  core_minutes=12
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  what="attnprof with the CUDA kernels (sm_90) and the CPU backend"
  core_minutes=60
else
  what="attnprof, CPU backend only (no CUDA toolkit at /usr/local/cuda)"
  core_minutes=12
fi
if [[ -x "$bin" ]]; then
  echo "run: building $what in $build_dir/: only what changed since the last build"
else
  echo "run: building $what in $build_dir/: first build, roughly $(((core_minutes + cores - 1) / cores)) min on $cores cores"
fi
scripts/build.sh attnprof

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

# Said once here, and the sweep is told the backend, so that it does not probe CUDA (and report the
# driver's error) again.
if [[ " $* " != *" --backend"* ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "run: no NVIDIA GPU found: running the CPU backend (same pipeline and reports, CPU kernels)"
  extra+=(--backend cpu)
fi

rc=0
"$bin" sweep "${extra[@]}" "$@" || rc=$?
if [[ -s "$out/results.json" ]]; then
  backend=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["context"]; print(c["backend"], "backend on", c["device"]["name"])' "$out/results.json" 2>/dev/null || echo "?")
  echo "run: ran the ${backend}; results in $out/ (results.json, report.html, summary.md)"
fi
exit "$rc"
