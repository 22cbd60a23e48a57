# Shared by the run tests: a scratch folder removed on exit, a tiny CPU sweep, and point-set checks.
set -euo pipefail
attnprof="$1"
[[ -x "$attnprof" ]] || { echo "no attnprof binary at '$attnprof'" >&2; exit 1; }
scratch="$(mktemp -d "${TMPDIR:-/tmp}/attnprof-run-test.XXXXXX")"
cleanup_hooks=()
cleanup() {
  local hook
  for hook in "${cleanup_hooks[@]}"; do eval "$hook" || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT

# Four shapes x every CPU kernel, each point a few milliseconds: one warm-up call and no warm-up or
# minimum sampling time (the defaults hold each point 0.85 s), warm caches (a cold sample on the CPU
# backend first writes twice the last-level cache).
tiny_axes="batch=1;heads=2;seq=32,48,64,96;hdim=32;dtype=fp32"
fast=(--backend cpu --max-seconds 0.05 --min-samples 3 --max-samples 5 --warmup 1 --warmup-seconds 0 --min-seconds 0
      --warm)

fail() { echo "FAIL: $*" >&2; exit 1; }

# "key<TAB>status" for every record of a results file, sorted.
point_set() {
  python3 - "$1" <<'PY'
import json, sys
for r in sorted((r["key"], r["status"]) for r in json.load(open(sys.argv[1]))["records"]):
    print(f"{r[0]}\t{r[1]}")
PY
}

journal_points() { if [[ -f "$1" ]]; then echo $(($(wc -l <"$1") - 1)); else echo 0; fi; }
