#!/usr/bin/env bash
# `attnprof sweep --preset fa-bench` with every default (counters on), then checks.py fields: every
# point has its latency statistics, raw samples, SM clock, verification, counters (passes, profiling
# time, L2 tail), occupancy, the reference's three stages and a diagnosis; the HTML, Markdown and CSV
# reports beside it. Exits 1 when a point misses a field.
# Usage: bash scripts/device/fields.sh   (results in $OUT/fields.tgz)
source "$(dirname "$0")/lib.sh"
phase_begin fields
start_clock_log
log "fa-bench with the defaults, counters on (SIGTERM at 480 s keeps every finished point)"
t0=$(now)
timeout -s TERM 480 "$bin/attnprof" sweep --preset fa-bench --backend cuda --out "$out/fa-bench" \
    --html "$out/fa-bench/report.html" --md "$out/fa-bench/summary.md" --csv "$out/fa-bench/points.csv" 2>&1 | tail -n 4
echo "sweep exit ${PIPESTATUS[0]} in $(since "$t0") s"
$checks fields "$out/fa-bench/results.json" | tee "$out/fields.txt"
status=${PIPESTATUS[0]}
ls -la "$out/fa-bench"
exit "$status"
