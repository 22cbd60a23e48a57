#!/usr/bin/env bash
# The README's main command: set-up, build, then a sweep into a folder of its own (attnprof sweep's
# default without --out): reports/runs/<UTC time>/ (results.json, report.html, summary.md, the
# journal), with reports/latest pointing at the newest, so earlier runs stay for
# `attnprof history reports/runs/*/results.json`.
# Default sweep: the quick preset; arguments go to `attnprof sweep` unchanged, e.g.
# scripts/run.sh --preset fa-bench  or  scripts/run.sh --axes "..."  (--out DIR: that folder instead).
# The GPU is looked for first: without one, only the CPU backend is built (in build-cpu/) and run,
# and the first lines say so; ATTNPROF_RUN_CUDA=1 builds the CUDA kernels anyway.
set -euo pipefail
cd "$(dirname "$0")/.."

# ---- The GPU, before anything is built --------------------------------------------------------------
gpu=yes
if ! command -v nvidia-smi >/dev/null 2>&1; then
  gpu=no why="no NVIDIA driver (nvidia-smi is not installed)"
elif ! listing=$(nvidia-smi -L 2>&1); then
  gpu=no why="the NVIDIA driver answers: $(head -n 1 <<<"$listing")"
elif ! grep -q "^GPU " <<<"$listing"; then
  gpu=no why="nvidia-smi lists no GPU"
fi
if [[ $gpu == no && -z "${ATTNPROF_CMAKE_ARGS:-}" && "${ATTNPROF_RUN_CUDA:-0}" != 1 ]]; then
  export ATTNPROF_CMAKE_ARGS="-DATTNPROF_ENABLE_CUDA=OFF"
  export ATTNPROF_BUILD_DIR="${ATTNPROF_BUILD_DIR:-build-cpu}"
  echo "run: no NVIDIA GPU found ($why): building and running the CPU backend only, in $ATTNPROF_BUILD_DIR/"
  echo "run: (ATTNPROF_RUN_CUDA=1 scripts/run.sh builds the CUDA kernels too, for a GPU elsewhere)"
elif [[ $gpu == no ]]; then
  echo "run: no NVIDIA GPU found ($why): the sweep runs the CPU backend"
else
  echo "run: NVIDIA GPU found: $(head -n 1 <<<"$listing")"
fi

scripts/setup.sh
build_dir="${ATTNPROF_BUILD_DIR:-build}"
bin="$build_dir/attnprof"

# What is built and roughly how long: only the attnprof binary (scripts/test.sh builds the tests). The
# minutes are the CPU time of a first build of that target measured on a 2-core machine (user + system:
# 17 core-minutes with the CUDA kernels, whose templates dominate; 8.5 for the CPU backend alone) spread
# over this machine's cores; a rebuild compiles only what changed.
cores=$(nproc)
if [[ " ${ATTNPROF_CMAKE_ARGS:-} " == *"ATTNPROF_ENABLE_CUDA=OFF"* ]]; then
  what="attnprof, CPU backend only (ATTNPROF_ENABLE_CUDA=OFF)"
  core_minutes=9
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  what="attnprof with the CUDA kernels (sm_90) and the CPU backend"
  core_minutes=17
else
  what="attnprof, CPU backend only (no CUDA toolkit at /usr/local/cuda)"
  core_minutes=9
fi
if [[ -x "$bin" ]]; then
  echo "run: building $what in $build_dir/: only what changed since the last build"
else
  echo "run: building $what in $build_dir/: first build, roughly $(((core_minutes + cores - 1) / cores)) min on $cores cores"
fi
scripts/build.sh attnprof

# ---- The sweep: without --out, attnprof sweep writes a folder of its own ------------------------------
have_spec=no
own_out=no
for arg in "$@"; do
  case "$arg" in
    --axes | --axes=* | --preset | --preset=* | --spec-file | --spec-file=*) have_spec=yes ;;
    --out | --out=*) own_out=yes ;;
  esac
done
extra=()
[[ $have_spec == yes ]] || extra+=(--preset quick)
# Said once above, and the sweep is told the backend, so that it does not probe CUDA again.
[[ $gpu == yes || " $* " == *" --backend"* ]] || extra+=(--backend cpu)

started=$(date +%s)
rc=0
"$bin" sweep "${extra[@]}" "$@" || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "run: the sweep exited $rc (docs/exit-codes.md); see the message above" >&2
elif [[ $own_out == no && -s reports/latest/results.json && $(stat -c %Y reports/latest/results.json) -ge $started ]]; then
  out="reports/$(readlink reports/latest)"
  backend=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["context"]; print(c["backend"], "backend on", c["device"]["name"])' "$out/results.json" 2>/dev/null || echo "?")
  echo "run: ran the ${backend}; results in $out/ (results.json, report.html, summary.md), reports/latest points at it"
  echo "run: every run of this folder: attnprof history reports/runs/*/results.json"
fi
exit "$rc"
