#!/usr/bin/env bash
# One GPU-machine call for the decode kernel, everything packed into $OUT/decode.tgz.
# ATTNPROF_DECODE_STEPS picks the steps, in this order (default: tests side):
#   tests  test_gpu_decode (decode and paged caches against float64, the split counters' reset);
#   ncu    Nsight Compute on one decode call and on cuDNN's at the same shape (batch 64, 8k tokens of
#          KV, 32 query heads over 8 KV heads, hdim 128, bf16): where each one's L2 traffic comes from
#          (ncu-l2.txt);
#   side   the Python bridge built there (docs/python.md) and contiguous decode shapes (32 query heads
#          over 8 KV heads at batch 1-256 and 1k-128k tokens, 64 over 8 at batch 1-64 and 8k-32k) swept
#          with decode beside torch:flash and torch:cudnn, counters and verification on every point;
#          then the same shapes paged with decode alone; the gap table (decode_table.txt).
#   layouts decode's shared-memory layouts (ATTNPROF_DECODE_CONFIG padded and swizzled, each swept in
#          its own process, twice in alternating order) beside torch:cudnn at the side step's shapes, no
#          counters; P50 per run and its ratio to the first padded run (layouts.txt, scripts/runs_table.py).
#   paged  paged (64-token shuffled pages) against contiguous at the side step's shapes, decode alone,
#          each run one process, no counters, every point verified: this build's contiguous and paged
#          runs (paged twice) and, with ATTNPROF_DECODE_BASE_BIN set, that build's contiguous and paged
#          runs; P50 per run and its ratio to this build's contiguous run (paged.txt,
#          scripts/runs_table.py).
# ATTNPROF_DECODE_SECONDS bounds the side-by-side sweep (default 200; every finished point is kept).
source "$(dirname "$0")/lib.sh"
phase_begin decode
steps=" ${ATTNPROF_DECODE_STEPS:-tests side} "
want() { [[ $steps == *" $1 "* ]]; }

if want tests; then
  log "test_gpu_decode"
  timeout 150 "$bin/test_gpu_decode" > "$out/test_gpu_decode.log" 2>&1
  echo "exit $? test_gpu_decode" | tee -a "$out/gpu-tests.log"
  grep -E "FAILED|with expansion|test cases|assertions" "$out/test_gpu_decode.log" | tail -n 20
fi

if want ncu; then
  log "Nsight Compute: L2 traffic of decode and cuDNN at b64 x 8k"
  shape="batch=64;heads=32;kv_heads=8;seq_q=1;seq_k=8192;hdim=128;dtype=bf16"
  metrics="gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sectors.sum"
  metrics+=",lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_op_read.sum"
  metrics+=",lts__t_sectors_op_write.sum,lts__t_requests_srcunit_tex.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed"
  metrics+=",dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed"
  metrics+=",breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed"
  timeout 90 ncu --clock-control none --nvtx --nvtx-include "attnprof verify/" -k regex:decode_split --metrics "$metrics" --csv \
      "$bin/attnprof" sweep --axes "$shape" --kernels decode --backend cuda --seed 7 --out "$out/ncu-decode" \
      --no-counters --min-samples 3 --max-samples 3 > "$out/ncu-decode.csv" 2>"$out/ncu-decode.err"
  echo "ncu decode exit $?"
  echo '[{"batch": 64, "heads": 32, "kv_heads": 8, "seq_q": 1, "seq_k": 8192, "hdim": 128, "causal": false, "dtype": "bf16"}]' \
      > "$out/shape-decode.json"
  # cuDNN's kernels of one warm call: every launch after the inputs are made, the longest is the attention.
  timeout 90 ncu --clock-control none -k regex:'sdpa|fmha|flash|attn|cudnn' --launch-skip 2 -c 1 --metrics "$metrics" --csv \
      python3 scripts/device/anchor.py shapes "$out/shape-decode.json" --backends cudnn --warm --warmup-seconds 0 \
      --samples 2 --out "$out/ncu-cudnn-anchor.json" > "$out/ncu-cudnn.csv" 2>"$out/ncu-cudnn.err"
  echo "ncu cudnn exit $?"
  python3 scripts/device/ncu_csv_table.py "$out/ncu-decode.csv" "$out/ncu-cudnn.csv" > "$out/ncu-l2.txt"
  cat "$out/ncu-l2.txt" | head -n 80
fi

if want side || want layouts; then build_bridge "$out/python"; fi

if want side; then
  axes="batch=1,16,64,256;heads=32;kv_heads=8;seq_q=1;seq_k=1024,8192,32768;hdim=128;dtype=bf16"
  axes+=" | batch=1,16;heads=32;kv_heads=8;seq_q=1;seq_k=131072;hdim=128;dtype=bf16"
  axes+=" | batch=1,16,64;heads=64;kv_heads=8;seq_q=1;seq_k=8192,32768;hdim=128;dtype=bf16"
  log "decode beside torch:flash and torch:cudnn, counters on"
  t0=$(now)
  timeout -s TERM "${ATTNPROF_DECODE_SECONDS:-200}" "$bin/attnprof" sweep --python-bridge "$out/python/attnprof_python.so" \
    --kernels decode,torch:flash,torch:cudnn --axes "$axes" --max-seconds 0.3 --warmup-seconds 0.3 \
    --out "$out/side" --md "$out/side/summary.md" >"$out/side.txt" 2>"$out/side.log"
  echo "side-by-side sweep exit $? in $(since "$t0") s"
  $checks statuses "$out/side/results.json"
  log "decode from 64-token shuffled pages, counters on"
  t0=$(now)
  timeout -s TERM 120 "$bin/attnprof" sweep --kernels decode --axes "${axes//dtype=bf16/dtype=bf16;page_size=64}" --max-seconds 0.3 \
    --warmup-seconds 0.3 --out "$out/paged" >"$out/paged.txt" 2>"$out/paged.log"
  echo "paged sweep exit $? in $(since "$t0") s"
  $checks statuses "$out/paged/results.json"
  python3 scripts/gap_table.py "$out/side/results.json" > "$out/gap_table.md"; echo "gap table exit $?"
  python3 scripts/device/decode_table.py "$out/side/results.json" "$out/paged/results.json" | tee "$out/decode_table.txt"
fi

if want layouts; then
  laxes="batch=1,16,64,256;heads=32;kv_heads=8;seq_q=1;seq_k=1024,8192,32768;hdim=128;dtype=bf16"
  timeout 120 "$bin/attnprof" sweep --python-bridge "$out/python/attnprof_python.so" --kernels torch:cudnn --axes "$laxes" \
    --no-counters --max-seconds 0.3 --warmup-seconds 0.3 --out "$out/layouts/cudnn" >/dev/null 2>"$out/layouts-cudnn.log"
  echo "cudnn exit $?"
  for run in padded1 swizzled1 swizzled2 padded2; do
    log "decode, layout ${run%?}"
    ATTNPROF_DECODE_CONFIG=${run%?} timeout 120 "$bin/attnprof" sweep --kernels decode --axes "$laxes" --no-counters \
      --max-seconds 0.3 --warmup-seconds 0.3 --out "$out/layouts/$run" >/dev/null 2>"$out/layouts-$run.log"
    echo "exit $?"
  done
  python3 scripts/runs_table.py "$out/layouts" padded1 padded2 swizzled1 swizzled2 cudnn --decode --ratio-to padded1 |
    tee "$out/layouts.txt"
fi

if want paged; then
  shapes="batch=1,16,64,256;heads=32;kv_heads=8;seq_q=1;seq_k=1024,8192,32768;hdim=128;dtype=bf16"
  shapes+=" | batch=1,16;heads=32;kv_heads=8;seq_q=1;seq_k=131072;hdim=128;dtype=bf16"
  shapes+=" | batch=1,16,64;heads=64;kv_heads=8;seq_q=1;seq_k=8192,32768;hdim=128;dtype=bf16"
  paged_shapes=${shapes//dtype=bf16/dtype=bf16;page_size=64}
  runs=(paged1 contig paged2)
  declare -A exes=([paged1]=$bin/attnprof [contig]=$bin/attnprof [paged2]=$bin/attnprof)
  declare -A axes_of=([paged1]=$paged_shapes [contig]=$shapes [paged2]=$paged_shapes)
  if [[ -n ${ATTNPROF_DECODE_BASE_BIN:-} ]]; then
    runs=(base_paged "${runs[@]}" base_contig)
    exes[base_paged]=$ATTNPROF_DECODE_BASE_BIN exes[base_contig]=$ATTNPROF_DECODE_BASE_BIN
    axes_of[base_paged]=$paged_shapes axes_of[base_contig]=$shapes
  fi
  for run in "${runs[@]}"; do
    log "decode, $run"
    t0=$(now)
    timeout 150 "${exes[$run]}" sweep --kernels decode --axes "${axes_of[$run]}" --no-counters --max-seconds 0.3 \
      --warmup-seconds 0.3 --out "$out/paged-ab/$run" >/dev/null 2>"$out/paged-ab-$run.log"
    echo "$run exit $? in $(since "$t0") s"
    $checks statuses "$out/paged-ab/$run/results.json"
  done
  python3 scripts/runs_table.py "$out/paged-ab" "${runs[@]}" --decode --ratio-to contig | tee "$out/paged.txt"
fi
