#!/usr/bin/env bash
# Set-up, build, and every test (CTest). GPU tests are reported as skipped on a machine without a GPU.
# Then the sanitizer step (scripts/sanitize.sh: unit tests and fuzz targets under ASan + UBSan);
# ATTNPROF_SANITIZE_STEP=0 leaves it out (say so when you report a result).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
(cd "${ATTNPROF_BUILD_DIR:-build}" && ctest --output-on-failure -j "${ATTNPROF_JOBS:-$(nproc)}" "$@")
if [[ "${ATTNPROF_SANITIZE_STEP:-1}" != 0 ]]; then
  scripts/sanitize.sh
else
  echo "test: sanitizer step left out (ATTNPROF_SANITIZE_STEP=0)"
fi
