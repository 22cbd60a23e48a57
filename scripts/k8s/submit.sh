#!/usr/bin/env bash
# Runs an attnprof sweep on Kubernetes: the Indexed Job of N shards (sweep-indexed-job.yaml), a wait
# for its completion, then the merge Job (merge-job.yaml). Results land on the claim's volume:
# results.json, report.html, summary.md, and shard-K/ per shard.
#
#   scripts/k8s/submit.sh -n 8 -i registry.example.com/attnprof:latest -c attnprof-results -- --preset fa-bench
#
# -n N      shards, default 4        -i IMAGE  an image with attnprof on PATH (required)
# -c CLAIM  a ReadWriteMany PersistentVolumeClaim for /results, default attnprof-results
# --dry-run print the manifests instead of applying them
# The image needs bash; the Indexed Job needs Kubernetes >= 1.24 (backoffLimitPerIndex: >= 1.29).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shards=4 image="" claim="attnprof-results" dry_run=no
while (($#)); do
  case "$1" in
    -n) shards="$2"; shift 2 ;;
    -i) image="$2"; shift 2 ;;
    -c) claim="$2"; shift 2 ;;
    --dry-run) dry_run=yes; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "submit.sh: unknown argument '$1' (sweep arguments go after --)" >&2; exit 2 ;;
  esac
done
[[ -n "$image" ]] || { echo "submit.sh: -i IMAGE is required" >&2; exit 2; }
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: -n '$shards' is not a positive count" >&2; exit 2; }

# Only these four placeholders are substituted; the shell variables of the pod command stay as written.
render() {
  SHARDS="$shards" IMAGE="$image" RESULTS_CLAIM="$claim" SWEEP_ARGS="$*" python3 - "$template" <<'PY'
import os, sys
text = open(sys.argv[1]).read()
for key in ("SHARDS", "IMAGE", "RESULTS_CLAIM", "SWEEP_ARGS"):
    text = text.replace("${" + key + "}", os.environ[key])
sys.stdout.write(text)
PY
}

template="$here/sweep-indexed-job.yaml"
sweep_manifest="$(render "$@")"
template="$here/merge-job.yaml"
merge_manifest="$(render "$@")"
if [[ $dry_run == yes ]]; then
  printf '%s\n---\n%s\n' "$sweep_manifest" "$merge_manifest"
  exit 0
fi
# Waits until the Job reports Complete (returns 0) or Failed (returns 1).
wait_job() {
  local conditions
  while true; do
    conditions="$(kubectl get "job/$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}')"
    [[ " $conditions " == *" Complete "* ]] && return 0
    [[ " $conditions " == *" Failed "* ]] && { echo "k8s: job $1 failed" >&2; return 1; }
    sleep 10
  done
}

kubectl apply -f - <<<"$sweep_manifest"
# A failed shard fails the Job and the merge is not started (as Slurm's afterok).
wait_job attnprof-sweep
kubectl apply -f - <<<"$merge_manifest"
wait_job attnprof-merge
echo "k8s: merged results on claim '$claim': results.json, report.html, summary.md"
