#!/usr/bin/env bash
# Hostile input through the real binary (issue "Hostile input and safe writes"): every example of the
# issue, each a case below that checks the exit code, the one-line message and what is left on disk.
# Usage: hostile_test.sh <attnprof> [case ...]   (no case: all of them)
set -u
bin="$1"; shift
[[ -x "$bin" ]] || { echo "no attnprof binary at '$bin'" >&2; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/attnprof-hostile.XXXXXX")"
bg_pids=()
cleanup() { local p; for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
failures=0
current=""
fail() { echo "FAIL [$current]: $*"; failures=$((failures + 1)); }

fast=(--backend cpu --max-seconds 0.05 --min-seconds 0 --warmup-seconds 0 --min-samples 3 --max-samples 5 --warmup 1 --no-counters --warm)
tiny="batch=1;heads=2;seq=32,48;hdim=32;dtype=fp32"

# Runs the binary with a time limit; sets rc, and out/err files. The limit turns a hang into a failure.
run() {
  timeout 60 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# expect CODE PATTERN: the last run exited CODE; for 2 and 4 its error is one line (the last on
# stderr, after a sweep's progress lines) matching PATTERN, and the only error line.
expect() {
  local code="$1" pattern="$2"
  [[ $rc == "$code" ]] || { fail "exit $rc, expected $code; stderr: $(tail -c 400 "$tmp/err")"; return 1; }
  if [[ $code == 2 || $code == 4 ]]; then
    [[ $(grep -c "error\|see --help" "$tmp/err") == 1 ]] || { fail "not one error line: $(tail -c 400 "$tmp/err")"; return 1; }
    tail -n 1 "$tmp/err" | grep -qE -- "$pattern" || { fail "the error lacks /$pattern/: $(tail -c 400 "$tmp/err")"; return 1; }
  fi
  grep -q $'\x1b' "$tmp/err" && { fail "an ESC byte on stderr"; return 1; }
  return 0
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
no_tmp_left() { local left; left=$(find "$1" -name '*.tmp*' 2>/dev/null); [[ -z $left ]] || fail "temporary files left: $left"; }

# One tiny real sweep, the fixture of most cases.
base="$tmp/base"
"$bin" sweep --axes "$tiny" "${fast[@]}" --out "$base" >/dev/null 2>"$tmp/sweep.err" ||
  { echo "the fixture sweep failed: $(cat "$tmp/sweep.err")"; exit 1; }
x="$base/results.json"

# Rewrites a results file with a Python expression applied to `d` (the parsed JSON): mutate SRC DST CODE.
mutate() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d))
PY
}

case_output_is_input() {
  cp "$x" "$tmp/x.json"; cp "$x" "$tmp/y.json"
  local before; before=$(sha "$tmp/x.json")
  run report "$tmp/x.json" --html "$tmp/x.json"; expect 2 "--html .*same file as the input"
  run report "$tmp/x.json" --md "$tmp/./x.json" --quiet; expect 2 "--md .*same file as the input"
  run compare "$tmp/x.json" "$tmp/y.json" --md "$tmp/x.json"; expect 2 "--md .*same file as the input"
  run compare "$tmp/x.json" "$tmp/y.json" --junit "$tmp/y.json"; expect 2 "same file"
  run compare "$tmp/x.json" "$tmp/y.json" --md "$tmp/o.md" --junit "$tmp/o.md"; expect 2 "same file as the output"
  run report "$tmp/x.json" --html "$tmp/r" --csv "$tmp/r" --quiet; expect 2 "same file as the output"
  ln -sf "$tmp/x.json" "$tmp/link.json"
  run report "$tmp/link.json" --csv "$tmp/x.json" --quiet; expect 2 "same file"
  run merge "$tmp/x.json" -o "$tmp/x.json"; expect 2 "same file"
  [[ $(sha "$tmp/x.json") == "$before" ]] || fail "x.json was changed"
  [[ ! -e "$tmp/o.md" ]] || fail "an output was written before the refusal"
  # A sweep's reports cannot name its own results or journal, nor its spec file.
  local out="$tmp/own"
  run sweep --axes "$tiny" "${fast[@]}" --out "$out" --html "$out/results.json"; expect 2 "--html .*results.json"
  run sweep --axes "$tiny" "${fast[@]}" --out "$out" --md "$out/results.journal.jsonl"; expect 2 "--md .*journal"
  echo '{"axes": "batch=1;heads=2;seq=32;hdim=32;dtype=fp32"}' >"$tmp/spec.json"
  run sweep --spec-file "$tmp/spec.json" "${fast[@]}" --out "$out" --csv "$tmp/spec.json"; expect 2 "same file as the input"
  [[ ! -e "$out/results.journal.jsonl" ]] || fail "the refused sweep started work"
  grep -q axes "$tmp/spec.json" || fail "the spec file was overwritten"
}

# The devices are reached through links in the scratch folder: a binary that wrongly renamed onto
# them would replace the link, never the machine's /dev/full or /dev/null.
case_write_failures() {
  ln -s /dev/full "$tmp/full"; ln -s /dev/null "$tmp/null"
  run report "$x" --md "$tmp/full" --quiet; expect 4 "cannot write '/dev/full': No space left"
  local out="$tmp/fullout"
  run sweep --axes "$tiny" "${fast[@]}" --out "$out" --md "$tmp/full"; expect 4 "cannot write '/dev/full'"
  grep -q "wrote" "$tmp/err" && fail "said 'wrote' after a failed write"
  [[ -s "$out/results.json" ]] || fail "results.json lost with the report"
  # /dev/null and /dev/stdout are written in place, not renamed onto.
  run report "$x" --md "$tmp/null" --quiet; expect 0 ""
  [[ -L "$tmp/full" && -L "$tmp/null" ]] || fail "a device link was replaced"
  # /dev/stdout is a stream written in place, even when the shell redirected it to a file.
  timeout 60 "$bin" report "$x" --quiet --md /dev/stdout >"$tmp/stdout.md" 2>"$tmp/err"; rc=$?; expect 0 ""
  grep -q "^## attnprof report" "$tmp/stdout.md" || fail "--md /dev/stdout did not reach the redirected file"
  # Standard output is an output too.
  timeout 60 "$bin" report "$x" >"$tmp/full" 2>"$tmp/err"; rc=$?; expect 4 "cannot write to standard output"
  # A file-size limit: a checked EFBIG, not a silent SIGXFSZ; no temporary file left, and the
  # previous report (atomic rename) still whole.
  mkdir -p "$tmp/lim"; echo old >"$tmp/lim/r.html"
  (ulimit -f 32; exec timeout 60 "$bin" report "$x" --html "$tmp/lim/r.html" --quiet) >"$tmp/out" 2>"$tmp/err"; rc=$?
  expect 4 "cannot write '.*r.html': File too large"
  [[ $(cat "$tmp/lim/r.html") == old ]] || fail "report's HTML replaced by a partial file"
  no_tmp_left "$tmp/lim"
  # The same for a sweep's reports: results.json (small) is written, the HTML (large) is not.
  echo old >"$tmp/lim/s.html"
  (ulimit -f 32; exec timeout 60 "$bin" sweep --axes "$tiny" "${fast[@]}" --out "$tmp/lim/out" --html "$tmp/lim/s.html") \
    >"$tmp/out" 2>"$tmp/err"; rc=$?
  [[ $rc == 4 ]] || fail "sweep under a file-size limit exited $rc: $(tail -n 2 "$tmp/err")"
  tail -n 1 "$tmp/err" | grep -q "File too large" || fail "no EFBIG message: $(tail -n 2 "$tmp/err")"
  [[ $(cat "$tmp/lim/s.html") == old ]] || fail "sweep's HTML replaced by a partial file"
  no_tmp_left "$tmp/lim"
  run report "$x" --csv "$tmp/no/such/folder/p.csv" --quiet; expect 4 "cannot write"
  mkdir -p "$tmp/adir"
  run report "$x" --csv "$tmp/adir" --quiet; expect 2 "is a folder"
  run sweep --axes "$tiny" "${fast[@]}" --out "$tmp/dirout" --html "$tmp/adir"; expect 2 "--html .*is a folder"
  [[ ! -e "$tmp/dirout" ]] || fail "a sweep with a folder as --html started work"
  run sweep --axes "$tiny" "${fast[@]}" --out "$x"; expect 2 "--out .*is a file"
}

case_non_utf8_path() {
  local out="$tmp/x_"$'\xff'
  run sweep --axes "$tiny" "${fast[@]}" --out "$out"; expect 0 ""
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding="utf-8")); assert d["records"]' "$out/results.json" ||
    fail "no readable results.json under a non-UTF-8 path"
  grep -q $'\xff' "$tmp/err" && fail "a raw non-UTF-8 byte in the messages"
  run report "$out/results.json" --md "$out/s.md"; expect 0 ""
}

case_escaping() {
  mutate "$x" "$tmp/evil.json" '
for r in d["records"]:
    r["kernel"] = "<script>alert(1)</script>=cmd|" + r["kernel"]
    r["reason"] = "@SUM(1)\x1b[31mred\nline"
    r["status"] = "failed"
d["context"]["device"]["name"] = "<img src=x onerror=alert(1)>\x1b]0;title\x07"
d["context"]["notices"] = ["\x1b[2Jcleared"]'
  mutate "$x" "$tmp/evil-base.json" '
for r in d["records"]:
    r["kernel"] = "<script>alert(1)</script>=cmd|" + r["kernel"]
d["context"]["device"]["name"] = "<img src=x onerror=alert(1)>\x1b]0;title\x07"'
  run compare "$tmp/evil-base.json" "$tmp/evil.json" --md "$tmp/c.md" --junit "$tmp/c.xml" --allow-device-mismatch
  [[ $rc == 1 ]] || fail "compare exited $rc: $(cat "$tmp/err")"
  grep -qiE "<script|<img" "$tmp/c.md" && fail "compare --md carries raw HTML"
  grep -q "&lt;script&gt;" "$tmp/c.md" || fail "compare --md lost the escaped name"
  grep -q $'\x1b' "$tmp/c.md" "$tmp/out" && fail "an ESC byte in compare's output"
  python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$tmp/c.xml" || fail "JUnit not well-formed"
  run report "$tmp/evil.json" --md "$tmp/r.md" --csv "$tmp/r.csv"; expect 0 ""
  grep -qiE "<script|<img" "$tmp/r.md" && fail "report --md carries raw HTML"
  grep -q $'\x1b' "$tmp/out" && fail "an ESC byte in the terminal table"
  grep -q '\\x1b\[31m' "$tmp/out" || fail "the terminal table does not show the escape visibly"
  python3 - "$tmp/r.csv" <<'PY' || fail "CSV formula cells not neutralised"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert rows and all(r["kernel"].startswith("<script>") for r in rows), rows[0]["kernel"]
assert all(r["reason"].startswith("'@SUM") for r in rows), rows[0]["reason"]
for r in rows:
    for k, v in r.items():
        assert not v or v[0] not in "=+@\t\r" or v.startswith("'"), (k, v)
        if v.startswith("-"):
            float(v)  # a negative number stays a number
PY
  # history's terminal table: a revision and a kernel with a newline, a CR and ESC stay on their lines.
  mutate "$x" "$tmp/h1.json" '
d["context"]["git_revision"] = "rev\none\r\x1b[2J"
for r in d["records"]:
    r["kernel"] = "k\x1b[31m\n" + r["kernel"]'
  mutate "$tmp/h1.json" "$tmp/h2.json" 'd["context"]["git_revision"] = "rev\rtwo"'
  run history "$tmp/h1.json" "$tmp/h2.json" --md "$tmp/h.md" --html "$tmp/h.html"; expect 0 ""
  grep -q $'[\x1b\r]' "$tmp/out" && fail "an ESC or CR byte in history's terminal table"
  grep -qF '  run 1: ' "$tmp/out" && grep -qF 'revision rev\none\r\x1b[2J' "$tmp/out" ||
    fail "history does not show the revision's escapes visibly: $(head -c 300 "$tmp/out")"
  grep -F '  run 2: ' "$tmp/out" | grep -qF 'revision rev\rtwo' || fail "history's run lines were broken: $(head -c 300 "$tmp/out")"
  # Error messages: one line, no raw newline or ESC, whatever the path holds.
  run report "$tmp/no"$'\n'"such"$'\x1b'"[31m.json"; expect 2 'no\\nsuch\\x1b\[31m'
}

case_bad_values() {
  local v
  for v in "--target-ci nan" "--max-seconds inf" "--point-timeout inf" "--max-seconds nan" "--warmup-seconds -1" \
           "--min-seconds inf" "--max-samples 0" "--max-samples 1000000000" "--counter-batch 0" "--verify-rows 0" \
           "--point-timeout -5" "--target-ci 2" "--devices x" "--devices -1" "--devices 0,0" "--devices all,1" \
           "--devices 99999" "--devices 0," "--devices 0,,1" "--devices ,1"; do
    # shellcheck disable=SC2086
    run sweep --axes "$tiny" --backend cpu --out "$tmp/bad" $v; expect 2 "see --help" || echo "  (option: $v)"
  done
  [[ ! -e "$tmp/bad" ]] || fail "a refused sweep created its folder"
  for v in "--alpha nan" "--threshold inf" "--max-rel-stddev nan" "--confidence inf" "--resamples 2000000000"; do
    # shellcheck disable=SC2086
    run compare "$x" "$x" $v; expect 2 "see --help|out of range" || echo "  (option: $v)"
  done
  # Ranges are CLI11 validators: refused while parsing, before any file is read.
  for v in "--alpha 0" "--alpha 1" "--confidence 1.5" "--threshold -0.1" "--threshold 10"; do
    # shellcheck disable=SC2086
    run compare "$x" "$x" $v; expect 2 "see --help" || echo "  (option: $v)"
  done
  for v in "--alpha 2" "--threshold -1" "--max-rel-stddev 0" "--max-rel-stddev nan"; do
    # shellcheck disable=SC2086
    run history "$x" "$x" $v; expect 2 "see --help" || echo "  (history option: $v)"
  done
  run report "$tmp"; expect 2 "is a folder"
  run compare "$tmp" "$x"; expect 2 "is a folder"
  mutate "$x" "$tmp/ctx.json" 'd["context"]["sweep"]["kernels"] = 5'
  run merge "$tmp/ctx.json" -o "$tmp/m.json"; expect 2 "kernels is not a list"
  mutate "$x" "$tmp/ctx2.json" 'd["context"]["sweep"]["spec"] = {"a": 1}'
  run merge "$tmp/ctx2.json" -o "$tmp/m.json"; expect 2 "spec is not a string"
  mutate "$x" "$tmp/neg.json" 'd["records"][0]["samples_us"][0] = -3.5'
  run compare "$x" "$tmp/neg.json"; expect 2 "negative"
  mutate "$x" "$tmp/big.json" 'd["records"][0]["clock"]["throttled_samples"] = 1e30'
  run compare "$x" "$tmp/big.json"; expect 2 "not an integer in range"
  mutate "$x" "$tmp/big2.json" 'd["records"][0]["latency"]["n"] = 18446744073709551616'
  run compare "$x" "$tmp/big2.json"; expect 2 "not an integer in range"
}

case_limits() {
  python3 -c 'print("[" * 50000 + "]" * 50000)' >"$tmp/deep.json"
  python3 -c 'print("{\"shapes\": " + "[" * 50000 + "]" * 50000 + "}")' >"$tmp/deep-spec.json"
  run sweep --spec-file "$tmp/deep-spec.json" --backend cpu --out "$tmp/d"; expect 2 "nested deeper than 64"
  run report "$tmp/deep.json"; expect 2 "nested deeper than 64"
  run compare "$tmp/deep.json" "$x"; expect 2 "nested deeper than 64"
  run merge "$x" "$tmp/deep.json" -o "$tmp/m.json"; expect 2 "nested deeper than 64"
  mutate "$x" "$tmp/deep-diag.json" 'd["records"][0]["diagnosis"] = eval("[" * 100 + "]" * 100)'
  run report "$tmp/deep-diag.json"; expect 2 "nested deeper than 64"
  run sweep --spec-file /dev/zero --backend cpu --out "$tmp/z"; expect 2 "larger than"
  mutate "$x" "$tmp/many.json" 'd["records"][0]["samples_us"] = [1.0] * 200001'
  SECONDS=0
  run compare "$x" "$tmp/many.json"; expect 2 "at most 100000"
  (( SECONDS < 20 )) || fail "compare took ${SECONDS} s to refuse"
}

case_silent_acceptance() {
  run sweep --axes "" --backend cpu --out "$tmp/e"; expect 2 "--axes.*empty"
  run sweep --axes "$tiny" --shard '' --backend cpu --out "$tmp/e"; expect 2 "--shard.*empty"
  echo '{"shapes": [{"batch": 1, "heads": 2, "seq": "128", "hdim": 32}]}' >"$tmp/s1.json"
  run sweep --spec-file "$tmp/s1.json" --backend cpu --out "$tmp/e"; expect 2 "\"128\" of 'seq' is not an integer"
  echo '{"shapes": [{"batch": 1, "heads": 2, "seq=16,hdim": 32}]}' >"$tmp/s2.json"
  run sweep --spec-file "$tmp/s2.json" --backend cpu --out "$tmp/e"; expect 2 "'seq=16,hdim' is not an axis name"
  mutate "$x" "$tmp/v.json" 'd["schema_version"] = "4294967297.0"'
  run report "$tmp/v.json"; expect 2 "malformed schema_version"
  mutate "$x" "$tmp/v2.json" 'd["schema_version"] = "1.3junk"'
  run report "$tmp/v2.json"; expect 2 "malformed schema_version"
  mutate "$x" "$tmp/extra.json" '
import copy
r = copy.deepcopy(d["records"][0]); r["shape"]["seq_q"] = r["shape"]["seq_k"] = 4096; d["records"].append(r)'
  run merge "$tmp/extra.json" -o "$tmp/m.json"; expect 2 "not in the sweep"
  [[ ! -e "$tmp/m.json" ]] || fail "merge wrote a file with a foreign point"
  # The same for a sweep of a shapes file, whose spec is the list itself.
  echo '{"shapes": [{"batch": 1, "heads": 2, "seq": 32, "hdim": 32, "dtype": "fp32"}]}' >"$tmp/s3.json"
  run sweep --spec-file "$tmp/s3.json" --backend cpu --kernels fused --max-seconds 0.05 --min-samples 3 \
    --max-samples 5 --warmup 1 --out "$tmp/s3"; expect 0 ""
  mutate "$tmp/s3/results.json" "$tmp/extra3.json" '
import copy
r = copy.deepcopy(d["records"][0]); r["shape"]["seq_q"] = r["shape"]["seq_k"] = 4096; d["records"].append(r)'
  run merge "$tmp/extra3.json" -o "$tmp/m3.json"; expect 2 "not in the sweep"
  run merge "$tmp/s3/results.json" -o "$tmp/m3.json"; expect 0 ""
  [[ ! -e "$tmp/e" ]] || fail "a refused sweep created its folder"
}

case_python_kernel_names() {
  # A py: name the bridge cannot split into MODULE and FUNCTION is refused before any work, bridge or
  # not (a missing bridge would be exit 2 too, but naming the bridge, not the form).
  local k
  for k in "py:" "py::attn" "py:mod:" "py:mod:attn:extra" "py:mod" "py:::"; do
    run sweep --axes "$tiny" "${fast[@]}" --kernels "$k,fused" --python-bridge /nonexistent/bridge.so --out "$tmp/py"
    expect 2 "'$k' is not py:MODULE:FUNCTION" || echo "  (kernel: $k)"
  done
  [[ ! -e "$tmp/py" ]] || fail "a refused sweep created its folder"
  # A well-formed name gets past the check (to the missing bridge).
  run sweep --axes "$tiny" "${fast[@]}" --kernels "py:mod:attn" --python-bridge /nonexistent/bridge.so --out "$tmp/py"
  expect 2 "--python-bridge '/nonexistent/bridge.so': no such file"
}

# Starts a sweep in the background with its start held (the test hook ATTNPROF_TEST_HOLD_START_S, as
# long ceilings measurements hold it), sends it SIGNAL after each DELAY, and waits for it: sets rc.
# early_sweep OUT HOLD_S SIGNAL DELAY...
early_sweep() {
  local out="$1" hold="$2" sig="$3"; shift 3
  ATTNPROF_CACHE_DIR="$tmp/early-cache" ATTNPROF_TEST_HOLD_START_S="$hold" \
    "$bin" sweep --axes "$tiny" "${fast[@]}" --out "$out" >"$tmp/out" 2>"$tmp/err" &
  local pid=$! delay i
  bg_pids+=("$pid")
  # The delays count from the hold's start, once the sweep's handlers are in place (a CUDA build takes
  # a while to load its libraries before main()).
  for i in $(seq 300); do grep -q "holding the start" "$tmp/err" 2>/dev/null && break; sleep 0.1; done
  for delay in "$@"; do sleep "$delay"; kill -"$sig" "$pid" 2>/dev/null; done
  for i in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && { fail "the interrupted sweep still runs after 60 s"; kill -KILL "$pid"; }
  wait "$pid"; rc=$?; bg_pids=()
}

case_early_signal() {
  # A signal before the worker pool starts (plugins, the device's ceilings, the journal) is exit 130
  # with one line, as later, and leaves the results already in --out as they were.
  local out="$tmp/early"
  run sweep --axes "$tiny" "${fast[@]}" --out "$out"; expect 0 ""
  local results journal sig
  results=$(sha "$out/results.json"); journal=$(sha "$out/results.journal.jsonl")
  for sig in TERM INT; do
    SECONDS=0
    early_sweep "$out" 2 "$sig" 0.3
    [[ $rc == 130 ]] || fail "SIG$sig at the start: exit $rc, expected 130: $(tail -c 300 "$tmp/err")"
    [[ $(grep -c "interrupted" "$tmp/err") == 1 ]] && tail -n 1 "$tmp/err" | grep -q "^attnprof: interrupted: stopped before" ||
      fail "SIG$sig at the start: not one 'interrupted' line: $(tail -c 300 "$tmp/err")"
    grep -q "error" "$tmp/err" && fail "SIG$sig at the start: an error line: $(tail -c 300 "$tmp/err")"
    [[ $(sha "$out/results.json") == "$results" && $(sha "$out/results.journal.jsonl") == "$journal" ]] ||
      fail "SIG$sig at the start: the results or the journal in --out changed"
    (( SECONDS < 30 )) || fail "SIG$sig at the start: took ${SECONDS} s to stop"
  done
  # A second signal while a step still runs ends the sweep at once, with exit 130 too.
  SECONDS=0
  early_sweep "$out" 60 TERM 0.3 0.3
  [[ $rc == 130 ]] || fail "two SIGTERMs at the start: exit $rc, expected 130: $(tail -c 300 "$tmp/err")"
  (( SECONDS < 30 )) || fail "two SIGTERMs at the start: took ${SECONDS} s to stop"
  tail -n 1 "$tmp/err" | grep -q "^attnprof: interrupted again" || fail "two SIGTERMs: no message: $(tail -c 300 "$tmp/err")"
  [[ $(sha "$out/results.json") == "$results" ]] || fail "two SIGTERMs at the start: results.json changed"
  no_tmp_left "$out"
}

case_cuda_without_gpu() {
  if "$bin" devices 2>/dev/null | grep -q '"backend": "cuda"'; then echo "skip [$current]: a GPU is present"; return; fi
  run sweep --axes "$tiny" --backend cuda --out "$tmp/cuda"; expect 4 "environment error: .*cuda"
}

case_output_lock() {
  local out="$tmp/locked"
  # A first sweep slow enough to still run while the second starts.
  "$bin" sweep --axes "batch=1;heads=2;seq=32,48,64,80,96,112;hdim=32;dtype=fp32" --backend cpu --no-counters \
    --max-seconds 0.5 --min-seconds 0.5 --warmup-seconds 0 --out "$out" >/dev/null 2>"$tmp/first.err" &
  local first=$!; bg_pids+=("$first")
  local i; for i in $(seq 100); do [[ -s "$out/results.journal.jsonl" ]] && break; sleep 0.1; done
  local journal_before; journal_before=$(head -n 1 "$out/results.journal.jsonl")
  run sweep --axes "$tiny" "${fast[@]}" --out "$out"; expect 2 "output folder '.*locked' is in use by another"
  run sweep --axes "$tiny" "${fast[@]}" --out "$out" --resume; expect 2 "in use by another"
  wait "$first"; local first_rc=$?; bg_pids=()
  [[ $first_rc == 0 ]] || fail "the first sweep exited $first_rc: $(tail -n 2 "$tmp/first.err")"
  [[ $(head -n 1 "$out/results.journal.jsonl") == "$journal_before" ]] || fail "the first sweep's journal was replaced"
  python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["records"]) == 12' "$out/results.json" ||
    fail "the first sweep's results are not its own"
  # Once the first has finished the folder is free again (resume included).
  run sweep --axes "batch=1;heads=2;seq=32,48,64,80,96,112;hdim=32;dtype=fp32" "${fast[@]}" --out "$out" --resume
  expect 0 ""
}

case_other_sweep() {
  local out="$tmp/kept"
  run sweep --axes "$tiny" "${fast[@]}" --out "$out" --html "$out/report.html"; expect 0 ""
  local before; before=$(sha256sum "$out/results.json")
  # Another sweep into the same folder is refused, and the first's files stay as they were.
  run sweep --axes "batch=1;heads=2;seq=64;hdim=32;dtype=fp32" "${fast[@]}" --out "$out"
  expect 2 "'.*kept' holds the results of another sweep"
  [[ $(sha256sum "$out/results.json") == "$before" ]] || fail "another sweep replaced the results"
  # The same sweep again may replace its own results.
  run sweep --axes "$tiny" "${fast[@]}" --out "$out"; expect 0 ""
  # --overwrite replaces them, and the report beside them that belonged to the old sweep goes too.
  run sweep --axes "batch=1;heads=2;seq=64;hdim=32;dtype=fp32" "${fast[@]}" --out "$out" --overwrite; expect 0 ""
  [[ ! -e "$out/report.html" ]] || fail "--overwrite left the old sweep's report.html"
  python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["records"]) == 2' "$out/results.json" ||
    fail "--overwrite did not write the new sweep's results"
}

case_missing_points_fail() {
  mutate "$x" "$tmp/half.json" 'd["records"] = d["records"][: len(d["records"]) // 2]'
  run compare "$x" "$tmp/half.json"; [[ $rc == 1 ]] || fail "a candidate that lost half its points exited $rc"
  grep -q "missing FAIL" "$tmp/out" || fail "missing points not marked FAIL"
  run compare "$x" "$tmp/half.json" --allow-missing; [[ $rc != 1 ]] || fail "--allow-missing still failed"
}

case_varlen() {
  # Malformed length distributions: exit 2, one line quoting the distribution; nothing created.
  local v
  for v in "batch=2;lengths=uniform:9:3|greater than" "batch=2;lengths=uniform:a:3|not an integer" \
           "batch=2;lengths=zipf:0:1:8|must be positive" "batch=2;lengths=list:|at least one length" \
           "lengths=list:4/0|below 1" "batch=2;lengths=gauss:1:8|unknown distribution" \
           "batch=2;lengths=list:4/8|sets the batch" "batch=2;seq=8;lengths=uniform:1:8|cannot be combined"; do
    run sweep --axes "heads=2;hdim=32;dtype=fp32;${v%%|*}" --backend cpu --out "$tmp/vl"; expect 2 "${v##*|}" || echo "  (axes: ${v%%|*})"
  done
  [[ ! -e "$tmp/vl" ]] || fail "a refused sweep created its folder"
  # A packed batch runs on the CPU beside its dense batch, verified, and its results read back: report
  # and merge re-derive its label from the spec.
  local out="$tmp/vlok"
  run sweep --axes "heads=2;hdim=32;dtype=fp32;causal=1;tokens=96;seq=48 | heads=2;hdim=32;dtype=fp32;causal=1;tokens=96;lengths=uniform:1:40" \
    "${fast[@]}" --out "$out" --csv "$out/points.csv"; expect 0 ""
  python3 - "$out/results.json" <<'PY' || fail "varlen results"
import json, sys
d = json.load(open(sys.argv[1]))
packed = [r for r in d["records"] if "seq_lens" in r["shape"]]
assert packed and all(r["status"] == "ok" and r["verification"]["passed"] for r in d["records"]), [(r["key"], r["status"]) for r in d["records"]]
for r in packed:
    assert sum(r["shape"]["seq_lens"]) == 96 and "varlen uniform:1:40 seed1 tokens96" in r["key"], r["key"]
    assert r["cost"]["padded_flops"] > r["cost"]["flops"], r["cost"]
PY
  head -n 1 "$out/points.csv" | grep -q "cost_padded_flops" || fail "the CSV has no padded cost column"
  run report "$out/results.json" --md "$tmp/vl.md" --quiet; expect 0 ""
  grep -q "### Packed batches" "$tmp/vl.md" || fail "the Markdown has no packed-batch table"
  run merge "$out/results.json" -o "$tmp/vlm.json"; expect 0 ""
}

case_hdim_v() {
  # A malformed value head dim: exit 2, one line naming the value; nothing created.
  local v
  for v in "0|must be positive" "12|not a multiple of 8" "520|up to 512" "x|not an integer" "-8|must be positive"; do
    run sweep --axes "heads=2;seq=16;hdim=32;dtype=fp32;hdim_v=${v%%|*}" --backend cpu --out "$tmp/dv"; expect 2 "${v##*|}" || echo "  (hdim_v=${v%%|*})"
  done
  [[ ! -e "$tmp/dv" ]] || fail "a refused sweep created its folder"
  # It runs on the CPU, verified; its points are keyed apart from those without it, so a resume of a
  # sweep with another hdim_v is refused, and the same sweep resumes with every point done.
  local out="$tmp/dvok" axes="heads=2;seq=40;hdim=32;dtype=fp32;causal=1;hdim_v=16,32,64"
  run sweep --axes "$axes" "${fast[@]}" --out "$out"; expect 0 ""
  python3 - "$out/results.json" <<'PY' || fail "hdim_v results"
import json, sys
d = json.load(open(sys.argv[1]))
keys = [r["key"] for r in d["records"]]
assert len(set(keys)) == len(keys) == 6, keys
assert all(r["status"] == "ok" and r["verification"]["passed"] for r in d["records"]), [(r["key"], r["status"]) for r in d["records"]]
assert sum("d32v16" in k for k in keys) == 2 and sum("d32v64" in k for k in keys) == 2, keys
assert all("hdim_v" not in r["shape"] for r in d["records"] if " d32 " in r["key"]), keys
PY
  run sweep --axes "heads=2;seq=40;hdim=32;dtype=fp32;causal=1;hdim_v=16,32,128" "${fast[@]}" --out "$out" --resume; expect 2 "another sweep"
  run sweep --axes "$axes" "${fast[@]}" --out "$out" --resume; expect 0 ""
  grep -q "6 of 6 points already done" "$tmp/err" || fail "the same hdim_v sweep did not resume: $(tail -c 300 "$tmp/err")"
  run merge "$out/results.json" -o "$tmp/dvm.json"; expect 0 ""
}

all=(output_is_input write_failures non_utf8_path escaping bad_values limits silent_acceptance python_kernel_names cuda_without_gpu
     output_lock other_sweep missing_points_fail varlen hdim_v early_signal)
for current in "${@:-${all[@]}}"; do
  before=$failures
  "case_$current"
  [[ $failures == "$before" ]] && echo "ok   [$current]"
done
if ((failures)); then echo "$failures failure(s)"; exit 1; fi
echo "all hostile-input cases passed"
