#!/usr/bin/env bash
# The fa-bench sweep of every built-in kernel with counters, and PyTorch's SDPA backends timed on
# their own (anchor.py) before and after it in the same call (PyTorch moves more between runs than
# the kernels do); the SM clock, temperature and power every 200 ms throughout (clocks.csv), and
# scripts/perf_table.py's table of the two.
# Usage: bash scripts/device/side_by_side.sh   (results in $OUT/side-by-side.tgz)
# ATTNPROF_SWEEP_ARGS: extra sweep options.
source "$(dirname "$0")/lib.sh"
phase_begin side-by-side
log "SASS of the fused kernels (tensor-core instructions)"
cuobjdump --dump-sass "$bin/attnprof" 2>/dev/null | grep -oE "\b(HMMA|HGMMA|LDSM|LDGSTS)[.A-Z0-9]*" | sort | uniq -c \
    | tee "$out/sass-summary.txt"
"$bin/attnprof" devices --backend cuda 2>&1 | tee "$out/devices.txt"
start_clock_log
anchor() {
  PYTHONUNBUFFERED=1 timeout 280 python3 scripts/device/anchor.py fa-bench --out "$out/$1.json" > "$out/$1.log" 2>&1
  echo "anchor exit $?"; tail -n 2 "$out/$1.log"
}
log "PyTorch SDPA anchors, before the sweep"; anchor sdpa_anchor
log "fa-bench sweep (SIGTERM at 360 s keeps every finished point)"
t0=$(now)
echo "sweep options: ${ATTNPROF_SWEEP_ARGS:-(defaults)}" | tee "$out/sweep-args.txt"
timeout -s TERM 360 "$bin/attnprof" sweep --preset fa-bench --backend cuda --out "$out/fa-bench" ${ATTNPROF_SWEEP_ARGS:-} \
    --html "$out/fa-bench/report.html" --md "$out/fa-bench/summary.md" --csv "$out/fa-bench/points.csv" 2>&1 | tail -n 20
echo "sweep wall $(since "$t0") s" | tee "$out/sweep-wall.txt"
log "PyTorch SDPA anchors, after the sweep"; anchor sdpa_anchor_after
python3 scripts/perf_table.py "$out/fa-bench/results.json" "$out/sdpa_anchor.json" "$out/sdpa_anchor_after.json" \
    | tee "$out/table.md" | tail -n 4
