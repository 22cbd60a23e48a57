#!/usr/bin/env bash
# src/cli/main.cpp through the real binary: every command registered (--help), --version, a missing or
# unknown command is usage (exit 2), and the one catch maps each error to its exit code with exactly one
# line on stderr, escaped (docs/exit-codes.md). Usage: test_main.sh <attnprof>
source "$(dirname "$0")/../run/lib.sh"

# Runs attnprof with the arguments, expecting exit code $1; stdout in $scratch/out, stderr in $scratch/err.
expect() {
  local want="$1" got=0
  shift
  "$attnprof" "$@" >"$scratch/out" 2>"$scratch/err" || got=$?
  [[ "$got" == "$want" ]] || fail "attnprof $*: exit $got, want $want: $(head -c 300 "$scratch/err")"
}
one_line() {
  [[ "$(wc -l <"$scratch/err")" == 1 ]] || fail "$1: stderr is not one line: $(cat "$scratch/err")"
  grep -q "$2" "$scratch/err" || fail "$1: stderr lacks '$2': $(cat "$scratch/err")"
}

expect 0 --help
for command in sweep report compare merge devices explain kernels history calibrate why; do
  grep -qE "^ +$command( |$)" "$scratch/out" || fail "--help does not list '$command'"
done
expect 0 --version
grep -qE '^[0-9]+\.[0-9]+' "$scratch/out" || fail "--version prints no version: $(cat "$scratch/out")"

expect 2
one_line "no command" "^attnprof: .*(see --help)$"
expect 2 frobnicate
one_line "an unknown command" "^attnprof: .*(see --help)$"

# InputError: exit 2, "attnprof: error:", the path's newline escaped so the message stays one line.
expect 2 report "$scratch/no such"$'\n'"file.json"
one_line "a missing results file" '^attnprof: error: .*no such\\nfile.json'

# A failed write to stdout is an environment error (exit 4), not a silent success.
if [[ -w /dev/full ]]; then
  got=0
  "$attnprof" kernels >/dev/full 2>"$scratch/err" || got=$?
  [[ "$got" == 4 ]] || fail "kernels >/dev/full: exit $got, want 4"
  one_line "stdout on a full disk" "^attnprof: environment error: cannot write to standard output"
fi
echo "test_main: ok"
