#!/usr/bin/env bash
# Sharding and merge through the real binary: three shards merged equal an unsharded run; a missing
# shard, a duplicate shard and a shard of another sweep are refused with exit 2.
source "$(dirname "$0")/lib.sh"

"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --out "$scratch/all" >"$scratch/all.log" 2>&1 ||
  fail "unsharded sweep failed: $(tail -n 5 "$scratch/all.log")"
for k in 1 2 3; do
  "$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --shard "$k/3" --out "$scratch/s$k" \
    >"$scratch/s$k.log" 2>&1 || fail "shard $k/3 failed: $(tail -n 5 "$scratch/s$k.log")"
  n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['records']))" "$scratch/s$k/results.json")
  ((n >= 1)) || fail "shard $k/3 is empty"
done
"$attnprof" merge "$scratch"/s{3,1,2}/results.json -o "$scratch/merged.json" ||
  fail "merge of three shards failed"
diff <(point_set "$scratch/all/results.json") <(point_set "$scratch/merged.json") ||
  fail "merged shards differ from the unsharded run"
python3 - "$scratch/all/results.json" "$scratch/merged.json" <<'PY' || fail "merged order differs"
import json, sys
a, m = (json.load(open(p))["records"] for p in sys.argv[1:])
assert [r["key"] for r in a] == [r["key"] for r in m]
PY

expect_2() {
  local rc=0
  "$attnprof" merge "$@" -o "$scratch/bad.json" 2>"$scratch/bad.log" || rc=$?
  [[ $rc -eq 2 ]] || fail "merge $* exited $rc, expected 2"
  [[ $(wc -l <"$scratch/bad.log") -eq 1 ]] || fail "merge $* printed more than one line"
}
expect_2 "$scratch/s1/results.json" "$scratch/s2/results.json"                  # gap
expect_2 "$scratch"/s{1,2,3}/results.json "$scratch/s2/results.json"            # duplicate
expect_2 "$scratch/all/results.json" "$scratch/nonexistent.json"                # unreadable
"$attnprof" sweep --axes "batch=1;heads=2;seq=32;hdim=32;dtype=fp32" "${fast[@]}" --out "$scratch/other" \
  >/dev/null 2>&1 || fail "other sweep failed"
expect_2 "$scratch/all/results.json" "$scratch/other/results.json"              # another sweep
"$attnprof" merge "$scratch/s1/results.json" "$scratch/s2/results.json" --allow-partial \
  -o "$scratch/partial.json" 2>/dev/null || fail "--allow-partial did not accept a gap"
"$attnprof" merge "$scratch"/s{1,2,3}/results.json "$scratch/s2/results.json" --allow-duplicates \
  -o "$scratch/dups.json" 2>/dev/null || fail "--allow-duplicates did not accept a duplicate"
echo "shard + merge: ok"
