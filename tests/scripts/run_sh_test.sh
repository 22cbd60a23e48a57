#!/usr/bin/env bash
# scripts/run.sh around stubs: its first line names the backend it will build before anything is built
# (no driver, a driver that answers with an error, a GPU), without a GPU it builds the CPU backend
# alone in build-cpu/ and tells the sweep so, and it prints success, naming the run's folder, only for
# results the sweep wrote. (The folder per run and reports/latest are attnprof sweep's: test_sweep.sh.)
# Usage: run_sh_test.sh SOURCE_DIR
set -uo pipefail
src="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out" 2>/dev/null; exit 1; }

# A tree with the real run.sh, stub set-up and build, and a fake attnprof.
tree="$work/tree"
mkdir -p "$tree/scripts" "$tree/reports"
cp "$src/scripts/run.sh" "$tree/scripts/run.sh"
printf '#!/usr/bin/env bash\necho "setup: stub"\n' >"$tree/scripts/setup.sh"
cat >"$tree/scripts/build.sh" <<'STUB'
#!/usr/bin/env bash
dir="${ATTNPROF_BUILD_DIR:-build}"
echo "build: stub into $dir with [${ATTNPROF_CMAKE_ARGS:-}]"
mkdir -p "$dir"
cat >"$dir/attnprof" <<'FAKE'
#!/usr/bin/env bash
# As attnprof sweep without --out: a new folder under reports/runs/, reports/latest pointing at it.
echo "$*" >>"${FAKE_ARGS_LOG:?}"
[ "${FAKE_RC:-0}" = 0 ] || exit "$FAKE_RC"
n=$(ls reports/runs 2>/dev/null | wc -l)
mkdir -p "reports/runs/fake-$n"
echo '{"context": {"backend": "cpu", "device": {"name": "CPU: fake"}}, "records": []}' >"reports/runs/fake-$n/results.json"
ln -sfn "runs/fake-$n" reports/latest
FAKE
chmod +x "$dir/attnprof"
STUB
chmod +x "$tree/scripts/"*.sh

# PATH: the tools run.sh uses, and a stub nvidia-smi when a case wants one.
tools="$work/tools"
mkdir -p "$tools"
for t in bash env cat date stat mkdir mv ln ls wc readlink basename dirname head grep sed python3 nproc chmod rm sleep tail tr; do
  p=$(command -v "$t") && ln -s "$p" "$tools/$t"
done
# python3 itself, not a shim that needs more of PATH.
ln -sf "$(python3 -c 'import sys; print(sys.executable)')" "$tools/python3"
smi="$work/smi"
mkdir -p "$smi"
export FAKE_ARGS_LOG="$work/args"

run() {  # run [nvidia-smi body]: the output in $work/out, the exit code returned
  rm -f "$smi/nvidia-smi"
  if [ -n "${1:-}" ]; then printf '#!/usr/bin/env bash\n%s\n' "$1" >"$smi/nvidia-smi" && chmod +x "$smi/nvidia-smi"; fi
  : >"$FAKE_ARGS_LOG"
  (cd "$tree" && env -u ATTNPROF_CMAKE_ARGS -u ATTNPROF_BUILD_DIR -u ATTNPROF_RUN_CUDA PATH="$smi:$tools" \
     bash scripts/run.sh >"$work/out" 2>&1)
}

# No driver: the first line says so and that the CPU backend alone is built, in build-cpu/.
run || fail "run.sh without a driver exited non-zero"
head -n 1 "$work/out" | grep -q "^run: no NVIDIA GPU found (no NVIDIA driver (nvidia-smi is not installed)): building and running the CPU backend only, in build-cpu/" ||
  fail "the first line does not name the CPU backend"
grep -q "build: stub into build-cpu with \[-DATTNPROF_ENABLE_CUDA=OFF\]" "$work/out" || fail "not a CPU-only build in build-cpu/"
grep -q -- "--backend cpu" "$FAKE_ARGS_LOG" || fail "the sweep was not told --backend cpu"
first=$(readlink "$tree/reports/latest") || fail "reports/latest is not a link"
[[ $first == runs/* && -s "$tree/reports/$first/results.json" ]] || fail "reports/latest -> '$first' holds no results"
grep -q "^run: ran the cpu backend on CPU: fake; results in reports/$first/" "$work/out" || fail "no success line naming the run folder"
grep -q -- "--out" "$FAKE_ARGS_LOG" && fail "run.sh chose the folder instead of the sweep"

# A driver that answers with an error: named as such.
sleep 1
run 'echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."; exit 9' || fail "exit code"
head -n 1 "$work/out" | grep -q "^run: no NVIDIA GPU found (the NVIDIA driver answers: NVIDIA-SMI has failed" ||
  fail "the driver's error is not named"
second=$(readlink "$tree/reports/latest")
[[ $second != "$first" ]] || fail "reports/latest did not move to the second run"

# A GPU: the CUDA build, in build/, and no --backend given to the sweep.
sleep 1
run 'echo "GPU 0: NVIDIA H200 (UUID: GPU-0)"' || fail "exit code with a GPU"
head -n 1 "$work/out" | grep -q "^run: NVIDIA GPU found: GPU 0: NVIDIA H200" || fail "the GPU is not named first"
grep -q "build: stub into build with \[\]" "$work/out" || fail "not the default build with a GPU"
grep -q -- "--backend" "$FAKE_ARGS_LOG" && fail "the sweep was told a backend although a GPU is present"

# A failing sweep: its exit code, no success line, reports/latest unchanged.
before=$(readlink "$tree/reports/latest")
sleep 1
FAKE_RC=2 run && fail "a failing sweep's exit code was lost"
grep -q "^run: ran the" "$work/out" && fail "success printed after a failed sweep"
grep -q "^run: the sweep exited 2" "$work/out" || fail "the failure is not said"
[[ $(readlink "$tree/reports/latest") == "$before" ]] || fail "reports/latest moved to a failed run"

echo "run.sh: ok"
