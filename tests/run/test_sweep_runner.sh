#!/usr/bin/env bash
# Interrupt a sweep with SIGTERM after its first finished point, resume it, and check that the point
# set equals that of an uninterrupted run (keys and statuses; timings differ run to run).
source "$(dirname "$0")/lib.sh"

"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --out "$scratch/full" >"$scratch/full.log" 2>&1 ||
  fail "uninterrupted sweep failed: $(tail -n 5 "$scratch/full.log")"
[[ -s "$scratch/full/results.json" ]] || fail "no results.json from the uninterrupted run"

# Slow points (a longer sampling budget) leave time to interrupt mid-sweep.
slow=(--backend cpu --max-seconds 0.6 --min-samples 1000 --max-samples 100000 --warmup 1)
"$attnprof" sweep --axes "$tiny_axes" "${slow[@]}" --out "$scratch/cut" >"$scratch/cut.log" 2>&1 &
pid=$!
cleanup_hooks+=("kill -KILL $pid 2>/dev/null")
for _ in $(seq 1 600); do
  [[ $(journal_points "$scratch/cut/results.journal.jsonl") -ge 1 ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
kill -TERM "$pid" || fail "the sweep ended before it could be interrupted"
rc=0
wait "$pid" || rc=$?
[[ $rc -eq 130 ]] || fail "interrupted sweep exited $rc, expected 130: $(tail -n 5 "$scratch/cut.log")"
grep -q "interrupted" "$scratch/cut.log" || fail "no interruption message"
done_after_cut=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['records']))" \
  "$scratch/cut/results.json")
total=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['records']))" \
  "$scratch/full/results.json")
((done_after_cut >= 1 && done_after_cut < total)) ||
  fail "interrupted run holds $done_after_cut of $total points, expected some but not all"
grep -q '"incomplete' "$scratch/cut/results.json" || fail "no 'incomplete' notice in the interrupted results"

# Resuming another sweep into the same folder is refused (exit 2).
rc=0
"$attnprof" sweep --axes "batch=1;heads=2;seq=32;hdim=32;dtype=fp32" "${fast[@]}" --out "$scratch/cut" \
  --resume >"$scratch/wrong.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "resuming a different sweep exited $rc, expected 2"

"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --out "$scratch/cut" --resume >"$scratch/resume.log" 2>&1 ||
  fail "resumed sweep failed: $(tail -n 5 "$scratch/resume.log")"
grep -q "resuming: $done_after_cut of $total points already done" "$scratch/resume.log" ||
  fail "resume did not skip the $done_after_cut journaled points: $(grep resum "$scratch/resume.log")"
diff <(point_set "$scratch/full/results.json") <(point_set "$scratch/cut/results.json") ||
  fail "resumed point set differs from the uninterrupted run"
[[ $(journal_points "$scratch/cut/results.journal.jsonl") -eq $total ]] || fail "journal does not hold every point"
echo "resume: ok ($done_after_cut of $total points before the interruption)"
