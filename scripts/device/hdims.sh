#!/usr/bin/env bash
# One GPU-machine call for the head dims and sliding windows, everything packed into $OUT/hdims.tgz.
# ATTNPROF_HDIM_STEPS picks the steps, in this order (default: all):
#   tests      the GPU correctness tests (every head dim and window of fused and fused-sm90, decode, the
#              measurement) against float64;
#   calibrate  `attnprof calibrate`: the known-answer probes get their verdicts;
#   windows    sliding windows (two sizes and none) at prefill and decode shapes, attnprof's kernels, with
#              counters: every point verified, DRAM bytes against the window's minimum;
#   varlen     packed variable-length batches (lengths uniform 512-4096) beside dense batches of the same
#              16k tokens, fused and the reference, hdim 64 and 128, causal and not: every point verified;
#   schedules  fused-sm90's schedules (overlap, pingpong, serial) side by side at hdim 192 and 256, causal
#              and not, each swept in its own process (ATTNPROF_FUSED_SM90_CONFIG), cuDNN beside them;
#   variants   fused's tile variants at hdim 192 and 256 (ATTNPROF_HDIM_VARIANTS, default fast, m64n32 and
#              m64n64), causal and not, each swept in its own process (ATTNPROF_FUSED_CONFIG), swept twice in
#              alternating order, FlashAttention-2 (torch:flash) beside them; ratios to torch:flash
#              (ATTNPROF_HDIM_VARIANT_AXES replaces the axes, ATTNPROF_HDIM_PASSES="1" makes one pass);
#   builds     fused from two builds, this one's and ATTNPROF_HDIM_BASE_BIN's attnprof (and any
#              ATTNPROF_HDIM_EXTRA_BUILDS="NAME=PATH ..."), each swept twice, the second pass in reverse
#              order (base, this, ..., ..., this, base), fused alone, no counters, at
#              ATTNPROF_HDIM_BUILD_AXES (default hdim 128, 192 and 256, causal and not, 16k tokens per
#              batch); TFLOP/s per run and its ratio to the base's first run (builds.txt);
#   side       the Python bridge built there (docs/python.md) and the side-by-side sweep: hdim 32-256,
#              causal and not, 16k tokens per batch, fused and fused-sm90 beside torch:flash and
#              torch:cudnn, every point verified; the gap table computed from it.
# ATTNPROF_HDIM_SECONDS bounds the side-by-side sweep (default 420; every finished point is kept);
# ATTNPROF_HDIM_AXES replaces its axes, ATTNPROF_HDIM_KERNELS its kernels. Expects .devcarry/bin/attnprof and the GPU test binaries.
source "$(dirname "$0")/lib.sh"
phase_begin hdims
steps=" ${ATTNPROF_HDIM_STEPS:-tests calibrate windows varlen side} "
want() { [[ $steps == *" $1 "* ]]; }

if want tests; then run_gpu_tests; fi

if want calibrate; then
  log "calibrate"
  "$bin/attnprof" calibrate >"$out/calibrate.txt" 2>&1
  echo "calibrate exit $?"; tail -n 12 "$out/calibrate.txt"
fi

if want windows; then
  log "sliding windows, counters on"
  waxes="batch=1;heads=32;kv_heads=8;seq=8192,32768;hdim=128;window=0,1024,4096;causal=1;dtype=bf16"
  waxes+=" | batch=16;heads=32;kv_heads=8;seq_q=1;seq_k=32768;hdim=128;window=0,4096;dtype=bf16"
  t0=$(now)
  timeout -s TERM 240 "$bin/attnprof" sweep --kernels fused,fused-sm90,decode,reference --axes "$waxes" \
    --max-seconds 0.3 --out "$out/windows" --md "$out/windows/summary.md" >"$out/windows.txt" 2>"$out/windows.log"
  echo "windows sweep exit $? in $(since "$t0") s"
  $checks statuses "$out/windows/results.json"
  echo "windows statuses check exit $?"
fi

if want varlen; then
  log "packed variable-length batches beside dense ones"
  vaxes="tokens=16384;dim=2048;hdim=64,128;causal=0,1;dtype=bf16;seq=2048"
  vaxes+=" | tokens=16384;dim=2048;hdim=64,128;causal=0,1;dtype=bf16;lengths=uniform:512:4096"
  t0=$(now)
  timeout -s TERM 240 "$bin/attnprof" sweep --kernels fused,fused-sm90,reference --axes "$vaxes" --no-counters \
    --max-seconds 0.3 --out "$out/varlen" --md "$out/varlen/summary.md" >"$out/varlen.txt" 2>"$out/varlen.log"
  echo "varlen sweep exit $? in $(since "$t0") s"
  $checks statuses "$out/varlen/results.json"
  echo "varlen statuses check exit $?"
fi

if want schedules || want variants || want side; then build_bridge "$out/python"; fi

if want schedules; then
  saxes="tokens=16384;heads=16;seq=1024:8192:x2;hdim=192,256;causal=0,1;dtype=bf16"
  "$bin/attnprof" sweep --python-bridge "$out/python/attnprof_python.so" --kernels torch:cudnn --axes "$saxes" \
    --no-counters --max-seconds 0.3 --out "$out/schedules/cudnn" >/dev/null 2>"$out/schedules-cudnn.log"
  for sched in overlap pingpong serial; do
    log "fused-sm90, schedule $sched"
    ATTNPROF_FUSED_SM90_CONFIG=$sched "$bin/attnprof" sweep --kernels fused-sm90 --axes "$saxes" --no-counters \
      --max-seconds 0.3 --out "$out/schedules/$sched" >/dev/null 2>"$out/schedules-$sched.log"
    echo "exit $?"
  done
  python3 scripts/runs_table.py "$out/schedules" overlap pingpong serial cudnn | tee "$out/schedules/schedules.txt"
fi

if want variants; then
  vaxes=${ATTNPROF_HDIM_VARIANT_AXES:-"tokens=16384;heads=16;seq=1024:8192:x2;hdim=192,256;causal=0,1;dtype=bf16"}
  read -r -a passes <<<"${ATTNPROF_HDIM_PASSES:-1 2}"
  read -r -a variants <<<"${ATTNPROF_HDIM_VARIANTS:-fast m64n32 m64n64}"
  for pass in "${passes[@]}"; do
    log "torch:flash, pass $pass"
    "$bin/attnprof" sweep --python-bridge "$out/python/attnprof_python.so" --kernels torch:flash --axes "$vaxes" \
      --no-counters --max-seconds 0.3 --out "$out/variants/flash$pass" >/dev/null 2>"$out/variants-flash$pass.log"
    echo "exit $?"
    order=("${variants[@]}")
    if [[ $pass == 2 ]]; then  # the second pass in reverse order: drift over the call cancels in the mean
      order=()
      for ((i = ${#variants[@]} - 1; i >= 0; i--)); do order+=("${variants[i]}"); done
    fi
    for variant in "${order[@]}"; do
      log "fused, tile variant $variant, pass $pass"
      ATTNPROF_FUSED_CONFIG=$variant "$bin/attnprof" sweep --kernels fused --axes "$vaxes" --no-counters \
        --max-seconds 0.3 --out "$out/variants/$variant$pass" >/dev/null 2>"$out/variants-$variant$pass.log"
      echo "exit $?"
    done
  done
  runs=()
  for pass in "${passes[@]}"; do runs+=("flash$pass"); done
  for variant in "${variants[@]}"; do for pass in "${passes[@]}"; do runs+=("$variant$pass"); done; done
  python3 scripts/runs_table.py "$out/variants" "${runs[@]}" --ratio-to flash1 |
    tee "$out/variants/variants.txt"
fi

if want builds; then
  baxes=${ATTNPROF_HDIM_BUILD_AXES:-"tokens=16384;heads=16;seq=1024:8192:x2;hdim=128,192,256;causal=0,1;dtype=bf16"}
  declare -A exes=([base]=$ATTNPROF_HDIM_BASE_BIN [this]=$bin/attnprof)
  names=(base this)
  for extra in ${ATTNPROF_HDIM_EXTRA_BUILDS:-}; do  # NAME=PATH of a further attnprof
    exes[${extra%%=*}]=${extra#*=}; names+=("${extra%%=*}")
  done
  runs=()
  for name in "${names[@]}"; do runs+=("${name}1"); done
  for ((i = ${#names[@]} - 1; i >= 0; i--)); do runs+=("${names[i]}2"); done
  for run in "${runs[@]}"; do
    log "fused, build $run"
    timeout 120 "${exes[${run%?}]}" sweep --kernels fused --axes "$baxes" --no-counters --max-seconds 0.3 \
      --out "$out/builds/$run" >/dev/null 2>"$out/builds-$run.log"
    echo "exit $?"
  done
  table=()
  for name in "${names[@]}"; do table+=("${name}1" "${name}2"); done
  python3 scripts/runs_table.py "$out/builds" "${table[@]}" --ratio-to base1 | tee "$out/builds.txt"
fi

if want side; then
  log "side by side: head dims"
  axes="${ATTNPROF_HDIM_AXES:-tokens=16384;heads=16;seq=1024:8192:x2;hdim=32,64,96,128,192,256;causal=0,1;dtype=bf16}"
  t0=$(now)
  timeout -s TERM "${ATTNPROF_HDIM_SECONDS:-420}" "$bin/attnprof" sweep --python-bridge "$out/python/attnprof_python.so" \
    --kernels "${ATTNPROF_HDIM_KERNELS:-fused,fused-sm90,torch:flash,torch:cudnn}" --axes "$axes" --no-counters --max-seconds 0.3 \
    --out "$out/side" --md "$out/side/summary.md" >"$out/side.txt" 2>"$out/side.log"
  echo "sweep exit $? in $(since "$t0") s"
  tail -n 3 "$out/side.log"
  python3 scripts/gap_table.py "$out/side/results.json" | tee "$out/gap_table.md"
  $checks statuses "$out/side/results.json"
  echo "statuses check exit $?"
fi
