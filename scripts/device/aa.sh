#!/usr/bin/env bash
# Repeatability: the fa-bench sweep (144 points, no counters) twice with the same sampling, the two
# runs' P50 agreement (checks.py aa) and the regression gate's verdict on the pair.
# Usage: bash scripts/device/aa.sh   (results in $OUT/aa.tgz)
# ATTNPROF_AA_SAMPLING: sampling options (default: attnprof's); ATTNPROF_AA_LABEL: the label.
source "$(dirname "$0")/lib.sh"
phase_begin aa
log "fa-bench A/A, ${ATTNPROF_AA_SAMPLING:-default sampling}"
# shellcheck disable=SC2086  # the sampling options are words
fa_bench_aa "${ATTNPROF_AA_LABEL:-aa}" ${ATTNPROF_AA_SAMPLING:-}
