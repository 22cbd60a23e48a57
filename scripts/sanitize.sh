#!/usr/bin/env bash
# The sanitizer step of scripts/test.sh: a CPU-only build with AddressSanitizer and
# UndefinedBehaviorSanitizer (build-asan/, or $ATTNPROF_SANITIZE_BUILD_DIR) of the unit tests that need
# no GPU and of the fuzz targets, then those tests and every fuzz target for $ATTNPROF_FUZZ_SECONDS
# (default 60) each, and the plugin fuzz set with attnprof itself sanitized. clang++ is used when it links -fsanitize=fuzzer (coverage-guided libFuzzer);
# otherwise the default compiler builds the same targets with the seeded mutation driver
# (tests/fuzz/mutation_driver.cpp) instead - said on the first line, never skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${ATTNPROF_SANITIZE_BUILD_DIR:-build-asan}"
jobs="${ATTNPROF_JOBS:-$(nproc)}"
seconds="${ATTNPROF_FUZZ_SECONDS:-60}"

compiler=()
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' \
  >"$probe/f.cpp"
if command -v clang++ >/dev/null && clang++ -fsanitize=fuzzer,address,undefined "$probe/f.cpp" -o "$probe/f" 2>/dev/null; then
  compiler=(-DCMAKE_CXX_COMPILER=clang++)
  echo "sanitize: clang++ with libFuzzer, ${seconds} s per fuzz target"
else
  echo "sanitize: no libFuzzer (clang++ missing or without -fsanitize=fuzzer): seeded mutation driver, ${seconds} s per target"
fi

mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -DATTNPROF_ENABLE_CUDA=OFF -DATTNPROF_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DATTNPROF_FUZZ_SECONDS="$seconds" "${compiler[@]}" >/dev/null
# attnprof and plain_v2: the plugin fuzz set (tests/plugins/plugin_fuzz_test.sh), broken copies of a
# real plugin loaded through the probe process, with attnprof under the sanitizers.
targets=(test_core test_gate test_report fuzz_sweep_grammar fuzz_spec_file fuzz_results attnprof plain_v2)
tests=(test_core test_gate test_report fuzz_sweep_grammar fuzz_spec_file fuzz_results plugins_fuzz)
if ! cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}" >"$build_dir/build.log" 2>&1; then
  grep -E "error" "$build_dir/build.log" | head -n 40
  echo "sanitize: build FAILED (full log: $build_dir/build.log)" >&2
  exit 1
fi
cd "$build_dir"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
export ATTNPROF_PLUGIN_FUZZ_CASES="${ATTNPROF_PLUGIN_FUZZ_CASES:-24}"
ctest --output-on-failure -j "$jobs" -R "$regex"
