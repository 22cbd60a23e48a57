#!/usr/bin/env bash
# Submits an attnprof sweep as a Slurm job array of N shards plus a merge job that runs once every
# shard succeeded (--dependency=afterok), writing OUT/results.json, OUT/report.html, OUT/summary.md.
#
#   scripts/slurm/submit.sh -n 4 [-o OUT] [--cpu] [--sbatch "EXTRA ARGS"] -- SWEEP ARGS...
#   scripts/slurm/submit.sh -n 8 -o /shared/attnprof/run1 -- --preset fa-bench
#
# -n N        shards (array tasks), default 4
# -o OUT      output folder on a file system every node sees, default reports/slurm-<date>
# --cpu       no GPU per task (the CPU backend; also what the tests use)
# --sbatch S  extra sbatch arguments for every job, e.g. "--partition=gpu --account=perf"
# ATTNPROF_BIN  the attnprof binary, default build/attnprof (resolved to an absolute path)
# Prints the two job ids; the exit code is sbatch's.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shards=4
out="reports/slurm-$(date -u +%Y%m%dT%H%M%SZ)"
gres="--gres=gpu:1"
extra=""
while (($#)); do
  case "$1" in
    -n) shards="$2"; shift 2 ;;
    -o) out="$2"; shift 2 ;;
    --cpu) gres=""; shift ;;
    --sbatch) extra="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "submit.sh: unknown argument '$1' (sweep arguments go after --)" >&2; exit 2 ;;
  esac
done
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: -n '$shards' is not a positive count" >&2; exit 2; }

bin="$(realpath "${ATTNPROF_BIN:-build/attnprof}")"
[[ -x "$bin" ]] || { echo "submit.sh: no attnprof binary at '$bin' (scripts/build.sh builds it)" >&2; exit 2; }
mkdir -p "$out/logs"
out="$(realpath "$out")"

# shellcheck disable=SC2086
array_id=$(ATTNPROF_BIN="$bin" ATTNPROF_OUT="$out" sbatch --parsable --export=ALL $gres $extra \
  --array="0-$((shards - 1))" --chdir="$out" --output="$out/logs/shard-%a.out" \
  "$here/sweep-array.sbatch" "$@")
array_id="${array_id%%;*}"

# shellcheck disable=SC2086
merge_id=$(ATTNPROF_BIN="$bin" ATTNPROF_OUT="$out" sbatch --parsable --export=ALL $extra \
  --dependency="afterok:${array_id}" --chdir="$out" --output="$out/logs/merge.out" \
  "$here/merge.sbatch")
merge_id="${merge_id%%;*}"

echo "submitted: shards job ${array_id} (${shards} tasks), merge job ${merge_id} -> ${out}/results.json"
echo "array=${array_id} merge=${merge_id} out=${out}"
