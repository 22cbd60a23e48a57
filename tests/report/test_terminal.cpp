// The terminal table (src/report/terminal.cpp): line by line, control characters from the data made
// visible, decode points' columns.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "core/errors.hpp"
#include "core/results.hpp"
#include "render_helpers.hpp"
#include "report/report.hpp"

using namespace attnprof;
using namespace attnprof::core;
using nlohmann::json;
using namespace attnprof::report_test;

TEST_CASE("terminal output, line by line") {
  const auto lines = lines_of(render(small_results(), "terminal"));
  const std::vector<std::string> expected = {
      "attnprof report: Test GPU (cuda), 2 points; ceilings HBM 4 TB/s, bf16 800 TFLOP/s (measured)",
      "  note: synthetic",
      "point                           kernel  status       p50 us  p99 us  TFLOP/s  % roof  verdict        flags",
      "------------------------------  ------  -----------  ------  ------  -------  ------  -------------  -----",
      "b4 h16/16 s2048x2048 d128 bf16  fused   ok           300.00  310.00    333.3    41.7  compute-bound",
      "b4 h16/16 s2048x2048 d96 bf16   fused   unsupported       -       -        -       -  -",
      "",
      "not ok:",
      "  b4 h16/16 s2048x2048 d96 bf16 | fused: unsupported: hdim 96",
  };
  REQUIRE(lines.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("line " << i);
    CHECK(lines[i] == expected[i]);
  }
}

TEST_CASE("terminal output neutralises control characters from the data") {
  Results res = small_results();
  res.records[0].kernel = "fu\x1b[31msed";
  const std::string text = render(res, "terminal");
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK_THAT(text, Catch::Contains("fu\\x1b[31msed"));  // visible, not acted on
}

TEST_CASE("terminal: decode points show KV TB/s, % HBM and MB/token where prefill shows TFLOP/s") {
  const auto lines = lines_of(render(mixed_results(), "terminal"));
  REQUIRE(lines.size() >= 5);
  const std::vector<std::string> expected = {
      "point                           kernel  status  p50 us  p99 us  TFLOP/s  % roof  KV TB/s  % HBM  MB/token  verdict              flags",
      "------------------------------  ------  ------  ------  ------  -------  ------  -------  -----  --------  -------------------  -----",
      "b4 h16/16 s2048x2048 d128 bf16  fused   ok      300.00  310.00    333.3    41.7        -      -         -  compute-bound",
      "b64 h32/8 s1x8192 d128 bf16     decode  ok      520.00  546.00        -       -     4.13   91.4      33.6  memory-bound (DRAM)",
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("line " << i + 1);
    CHECK(lines[i + 1] == expected[i]);
  }
  // Prefill alone keeps the table without the decode columns.
  Results prefill = mixed_results();
  prefill.records.pop_back();
  CHECK(render(prefill, "terminal").find("KV TB/s") == std::string::npos);
}
