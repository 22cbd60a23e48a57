#!/usr/bin/env bash
# A seeded set of broken copies of a real plugin: truncated at offsets across the file, and with bytes
# overwritten in the ELF header, the program headers and at random. `attnprof kernels --plugin` on each
# must answer as documented - exit 0 with a listing, or exit 2 with one line - never a signal, a hang
# or exit 4. scripts/sanitize.sh runs it with attnprof built under ASan + UBSan.
# Usage: plugin_fuzz_test.sh ATTNPROF PLUGIN [CASES]
source "$(dirname "$0")/../run/lib.sh"
plugin="$2"
cases="${3:-${ATTNPROF_PLUGIN_FUZZ_CASES:-48}}"
[[ -f "$plugin" ]] || fail "no plugin at '$plugin'"
python3 - "$plugin" "$scratch" "$cases" <<'PY'
import os, random, sys
src, out, cases = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, "rb").read()
rng = random.Random(20261203)
for i in range(cases):
    kind = i % 3
    if kind == 0:  # truncated
        blob = data[: rng.randrange(1, len(data))]
    else:
        blob = bytearray(data)
        # header and program headers (the first 512 bytes), or anywhere
        span = 512 if kind == 1 else len(data)
        for _ in range(rng.randrange(1, 9)):
            blob[rng.randrange(0, min(span, len(blob)))] = rng.randrange(256)
        blob = bytes(blob)
    open(os.path.join(out, f"case{i:03d}.so"), "wb").write(blob)
PY
counts=()
for so in "$scratch"/case*.so; do
  rc=0
  timeout 60 "$attnprof" kernels --plugin "$so" --plugin-timeout 10 >"$scratch/out" 2>"$scratch/err" || rc=$?
  case $rc in
    0) grep -q '^fused ' "$scratch/out" || fail "$(basename "$so"): exit 0 without a listing" ;;
    2) [[ $(grep -c '^attnprof' "$scratch/err") -eq 1 ]] || fail "$(basename "$so"): exit 2 but not one line: $(cat "$scratch/err")"
       [[ ! -s "$scratch/out" ]] || fail "$(basename "$so"): exit 2 with output on stdout" ;;
    *) fail "$(basename "$so"): exit $rc (expected 0 or 2): $(tail -n 3 "$scratch/err")" ;;
  esac
  counts+=("$rc")
done
echo "plugins_fuzz: ok ($(printf '%s\n' "${counts[@]}" | sort | uniq -c | tr -s ' \n' ' ') by exit code, ${#counts[@]} cases)"
