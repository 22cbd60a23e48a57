// What every renderer shows of a point (src/report/view.cpp): significant digits, the P99 over too few
// samples, the TFLOP/s conventions.
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
#include "report/rules.hpp"
#include "report/view.hpp"

using namespace attnprof;
using namespace attnprof::core;
using nlohmann::json;
using namespace attnprof::report_test;

TEST_CASE("significant digits: CPU and GPU throughputs both read") {
  using report::detail::significant;
  CHECK(significant(0.012345, 3, 1) == "0.0123");
  CHECK(significant(459.38, 3, 1) == "459.4");
  CHECK(significant(3.14159, 3, 1) == "3.14");
  CHECK(significant(17250.0, 4, 2) == "17250.00");
  CHECK(significant(0.0, 3, 1) == "0");
  CHECK(significant(std::nullopt, 3, 1) == "-");
  CHECK(significant(1e-9, 3, 1) == "0.000000");
}

TEST_CASE("P99 over too few samples shows the maximum, marked; TFLOP/s conventions are named") {
  Results res = small_results();
  Record& r = res.records[0];
  r.latency.n = 30;
  r.latency.max_us = 333;
  r.shape.causal = true;
  r.tflops_fa_convention = 333.0;
  const std::string terminal = render(res, "terminal");
  CHECK_THAT(terminal, Catch::Contains("333.00 (n=30: max)"));
  const std::string html = render(res, "html");
  CHECK_THAT(html, Catch::Contains("333.00 (n=30: max)"));
  CHECK_THAT(html, Catch::Contains("(n=30: max; the P99 needs 368 samples)"));
  CHECK_THAT(html, Catch::Contains("TFLOP/s (exact FLOPs)"));
  CHECK_THAT(html, Catch::Contains("TFLOP/s (FA convention)"));  // square causal: shown beside
  const auto rows = parse_csv(render(res, "csv"));
  const auto& h = rows[0];
  const auto col = [&](const char* name) {
    return static_cast<size_t>(std::find(h.begin(), h.end(), name) - h.begin());
  };
  REQUIRE(col("p99_supported") < h.size());
  REQUIRE(col("tflops_fa_convention") < h.size());
  CHECK(rows[1][col("p99_supported")] == "false");
  CHECK(rows[1][col("p99_us")] == "310");  // the type-7 figure stays the data
  CHECK(rows[1][col("tflops_fa_convention")] == "333");

  r.shape.seq_k = 4096;  // not square: the convention is not shown beside the exact figure
  r.latency.n = 400;
  const std::string html2 = render(res, "html");
  CHECK(html2.find("TFLOP/s (FA convention)") == std::string::npos);
  CHECK(html2.find("n=400") == std::string::npos);
  CHECK(render(res, "terminal").find("(n=") == std::string::npos);
}
