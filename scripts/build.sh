#!/usr/bin/env bash
# Configures and builds attnprof into build/ (or $ATTNPROF_BUILD_DIR). Used by run.sh and test.sh.
# Arguments are build targets (e.g. `scripts/build.sh attnprof` for the binary alone, as run.sh
# does); none builds everything, tests included. Progress is one line per finished target and a
# heartbeat every 30 s naming the file in progress; the full compiler output, including ptxas's
# registers/shared memory/spills per kernel, is kept in <build>/build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${ATTNPROF_BUILD_DIR:-build}"
jobs="${ATTNPROF_JOBS:-$(nproc)}"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${ATTNPROF_BUILD_TYPE:-Release}" ${ATTNPROF_CMAKE_ARGS:-} >/dev/null
# Make prints "[ 42%] Built target X" as each target finishes; one CUDA source can take minutes, so a
# heartbeat every 30 s names the file being compiled meanwhile.
: >"$build_dir/build.log"
start=$(date +%s)
(
  while sleep 30 </dev/null >/dev/null 2>&1; do
    last=$(grep -E "Building|Linking" "$build_dir/build.log" | tail -n 1 | sed -E 's/^\[ *[0-9]+%\] //' || true)
    echo "build: $(($(date +%s) - start)) s, working on: ${last:-the first files}"
  done
) &
heartbeat=$!
trap 'kill "$heartbeat" 2>/dev/null || true' EXIT
if ! cmake --build "$build_dir" -j "$jobs" "${targets[@]}" 2>&1 | tee "$build_dir/build.log" |
    sed -n -u 's/^\[ *\([0-9]*%\)\] Built target \(.*\)/build: [\1] \2/p'; then
  grep -E "error|Error" "$build_dir/build.log" | head -n 40
  tail -n 40 "$build_dir/build.log"
  echo "build: FAILED (full log: $build_dir/build.log)" >&2
  exit 1
fi
echo "build: ok ($build_dir/attnprof; log: $build_dir/build.log)"
