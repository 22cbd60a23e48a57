#!/usr/bin/env bash
# Set-up, build, and every test (CTest). GPU tests are reported as skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd "${ATTNPROF_BUILD_DIR:-build}"
ctest --output-on-failure -j "${ATTNPROF_JOBS:-$(nproc)}" "$@"
