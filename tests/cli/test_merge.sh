#!/usr/bin/env bash
# `attnprof merge` (src/cli/merge.cpp): the two shards of a CPU sweep merge into the unsharded point
# set; a shard given twice, or one alone, is exit 2 unless allowed. Usage: test_merge.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"

for k in 1 2; do
  "$attnprof" sweep --axes "$tiny_axes" --kernels fused "${fast[@]}" --shard "$k/2" --out "$scratch/shard$k" \
    >"$scratch/shard$k.log" 2>&1 || fail "shard $k/2: $(tail -n 5 "$scratch/shard$k.log")"
done
"$attnprof" merge "$scratch/shard1/results.json" "$scratch/shard2/results.json" -o "$scratch/merged.json" \
  >"$scratch/log" 2>&1 || fail "merge: $(cat "$scratch/log")"
[[ "$(point_set "$scratch/merged.json" | wc -l)" == 4 ]] || fail "merged: $(point_set "$scratch/merged.json")"
[[ "$(point_set "$scratch/merged.json" | cut -f2 | sort -u)" == ok ]] || fail "merged statuses"

expect_2() {
  local got=0
  "$attnprof" merge "$@" -o "$scratch/refused.json" >/dev/null 2>"$scratch/err" || got=$?
  [[ "$got" == 2 ]] || fail "merge $*: exit $got, want 2"
  [[ ! -e "$scratch/refused.json" ]] || fail "merge $*: wrote its output"
}
expect_2 "$scratch/shard1/results.json" "$scratch/shard1/results.json"
expect_2 "$scratch/shard1/results.json"
"$attnprof" merge "$scratch/shard1/results.json" --allow-partial -o "$scratch/partial.json" >/dev/null 2>&1 ||
  fail "merge --allow-partial of one shard"
diff <(point_set "$scratch/shard1/results.json") <(point_set "$scratch/partial.json") >/dev/null ||
  fail "partial: $(point_set "$scratch/partial.json")"
echo "test_merge: ok"
