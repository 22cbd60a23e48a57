#!/usr/bin/env bash
# Configures and builds attnprof into build/ (or $ATTNPROF_BUILD_DIR). Used by run.sh and test.sh.
# The full compiler output, including ptxas's registers/shared memory/spills per kernel, is kept in
# <build>/build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${ATTNPROF_BUILD_DIR:-build}"
jobs="${ATTNPROF_JOBS:-$(nproc)}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${ATTNPROF_BUILD_TYPE:-Release}" ${ATTNPROF_CMAKE_ARGS:-} >/dev/null
if ! cmake --build "$build_dir" -j "$jobs" >"$build_dir/build.log" 2>&1; then
  grep -E "error|Error" "$build_dir/build.log" | head -n 40
  tail -n 40 "$build_dir/build.log"
  echo "build: FAILED (full log: $build_dir/build.log)" >&2
  exit 1
fi
echo "build: ok ($build_dir/attnprof; log: $build_dir/build.log)"
