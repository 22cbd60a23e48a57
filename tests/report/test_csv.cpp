// The CSV (src/report/csv.cpp): RFC 4180 quoting and CRLF, one row per point, the decode metrics.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/results.hpp"
#include "render_helpers.hpp"
#include "report/report.hpp"

using namespace attnprof;
using namespace attnprof::core;
using nlohmann::json;
using namespace attnprof::report_test;

namespace {
// The index of the header's column `name` (a failed check when there is none).
size_t column_index(const std::vector<std::vector<std::string>>& rows, const std::string& name) {
  for (size_t i = 0; i < rows[0].size(); ++i)
    if (rows[0][i] == name) return i;
  FAIL("no column " << name);
  return 0;
}
}  // namespace

TEST_CASE("CSV: RFC 4180 quoting, CRLF, one row per point, same columns everywhere") {
  Results res = small_results();
  res.records[0].kernel = "fused, \"v2\"";
  res.records[1].reason = "line one\nline two";
  const std::string csv = render(res, "csv");
  CHECK_THAT(csv, Catch::Contains("\"fused, \"\"v2\"\"\""));
  CHECK_THAT(csv, Catch::Contains("\"line one\nline two\""));
  const auto rows = parse_csv(csv);
  REQUIRE(rows.size() == 3);
  for (const auto& row : rows) CHECK(row.size() == rows[0].size());
  const auto column = [&](const std::string& name) { return column_index(rows, name); };
  CHECK(rows[1][column("kernel")] == "fused, \"v2\"");
  CHECK(rows[2][column("reason")] == "line one\nline two");
  CHECK(rows[1][column("p50_us")] == "300");
  CHECK(rows[2][column("p50_us")].empty());  // unsupported: no timing
  CHECK(rows[1][column("verdict")] == "compute-bound");
  CHECK(rows[1][column("counter:" + std::string(kMetricComputeSol))] == "70");
  CHECK(rows[2][column("counter:" + std::string(kMetricComputeSol))].empty());
  CHECK(std::stod(rows[1][column("pct_of_roof")]) == Approx(41.6667).epsilon(1e-4));
}

TEST_CASE("CSV of the fixture has every point and the stage columns") {
  const Results res = read_results(kFixture);
  const auto rows = parse_csv(render(res, "csv"));
  REQUIRE(rows.size() == res.records.size() + 1);
  const auto& h = rows[0];
  CHECK(std::find(h.begin(), h.end(), "stage_p50_us:softmax") != h.end());
  CHECK(std::find(h.begin(), h.end(), "counter:dram__bytes_read.sum") != h.end());
}

TEST_CASE("CSV: decode metrics in their columns, TFLOP/s kept") {
  const std::string csv = render(mixed_results(), "csv");
  const auto rows = parse_csv(csv);
  REQUIRE(rows.size() == 3);
  const auto column = [&](const std::string& name) { return column_index(rows, name); };
  const Results results = mixed_results();
  const Record& d = results.records[1];
  const double min_bytes = d.cost.min_bytes_read + d.cost.min_bytes_write;
  CHECK(rows[2][column("decode")] == "true");
  CHECK(rows[2][column("tokens_per_call")] == "64");
  CHECK(std::stod(rows[2][column("kv_cache_bytes")]) == Approx(2.147483648e9));
  CHECK(std::stod(rows[2][column("pct_of_hbm_ceiling")]) == Approx(min_bytes / 520e-6 / 4.52e12 * 100));
  CHECK(std::stod(rows[2][column("dram_bytes_per_token")]) == Approx(min_bytes / 64));
  CHECK(std::stod(rows[2][column("min_bytes_per_token")]) == Approx(min_bytes / 64));
  CHECK(std::stod(rows[2][column("hbm_stream_us")]) == Approx(min_bytes / 4.52e12 * 1e6));
  CHECK(std::stod(rows[2][column("tflops")]) == Approx(d.cost.flops / 520e-6 / 1e12));  // kept
  CHECK(rows[1][column("decode")].empty());
  CHECK(rows[1][column("pct_of_hbm_ceiling")].empty());
  CHECK(rows[2][column("combine_stage")].empty());  // one launch: no combine stage
}

TEST_CASE("CSV: a packed batch adds its tokens and padded cost; dense results keep their columns") {
  const auto dense = parse_csv(render(small_results(), "csv"));
  CHECK(std::find(dense[0].begin(), dense[0].end(), "cost_padded_flops") == dense[0].end());
  const Results res = packed_results();
  const auto rows = parse_csv(render(res, "csv"));
  REQUIRE(rows.size() == 3);
  const auto col = [&](const std::string& name) {
    const auto it = std::find(rows[0].begin(), rows[0].end(), name);
    REQUIRE(it != rows[0].end());
    return static_cast<size_t>(it - rows[0].begin());
  };
  CHECK(rows[0].size() == dense[0].size() + 3);
  CHECK(rows[1][col("tokens")] == "3584");
  CHECK(std::stod(rows[1][col("cost_padded_flops")]) == Approx(res.records[0].cost.padded_flops));
  CHECK(std::stod(rows[1][col("cost_padded_flops")]) > std::stod(rows[1][col("cost_flops")]));
  CHECK(rows[2][col("cost_padded_flops")].empty());  // the dense point beside it
}

TEST_CASE("CSV: a backward point's pass and each gradient's check, only when the results hold one") {
  Results res = small_results();
  const auto header_of = [](const Results& r) { return parse_csv(render(r, "csv")).front(); };
  const auto forward_header = header_of(res);
  CHECK(std::find(forward_header.begin(), forward_header.end(), "pass") == forward_header.end());

  Record& bwd = res.records[0];
  bwd.shape.pass = Pass::bwd;
  bwd.verification.grads["dq"] = GradCheck{.rows_checked = 4, .rows_total = 4, .max_abs_err = 0.002, .tolerance = 0.01,
                                           .passed = true};
  bwd.verification.grads["dk"] = GradCheck{.rows_checked = 4, .rows_total = 4, .max_abs_err = 0.5, .tolerance = 0.01};
  bwd.verification.grads["dv"] = GradCheck{.rows_checked = 4, .rows_total = 4, .max_abs_err = 0.001, .tolerance = 0.01,
                                           .passed = true};
  const auto rows = parse_csv(render(res, "csv"));
  REQUIRE(rows.size() == 3);
  for (const auto& row : rows) CHECK(row.size() == rows[0].size());
  const auto column = [&](const std::string& name) { return column_index(rows, name); };
  CHECK(rows[0].size() == forward_header.size() + 10);
  CHECK(rows[1][column("pass")] == "bwd");
  CHECK(rows[1][column("dq_max_abs_err")] == "0.002");
  CHECK(rows[1][column("dk_passed")] == "false");
  CHECK(rows[1][column("dv_tolerance")] == "0.01");
  CHECK(rows[2][column("pass")] == "fwd");  // a forward point: its pass, no gradient cells
  CHECK(rows[2][column("dq_max_abs_err")].empty());
  CHECK(rows[2][column("dk_passed")].empty());
}
