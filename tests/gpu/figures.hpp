// The figures a GPU test measured on the way to its assertions (bandwidths, pass counts, clocks): one
// "MEASURE ..." line each on stdout when ATTNPROF_TEST_FIGURES=1, as scripts/device/*.sh set it to
// collect them; quiet otherwise, so a test run prints its results and nothing else.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace attnprof::gpu_test {

[[gnu::format(printf, 1, 2)]] inline void figure(const char* format, ...) {
  const char* on = std::getenv("ATTNPROF_TEST_FIGURES");
  if (on == nullptr || on[0] != '1') return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

}  // namespace attnprof::gpu_test
