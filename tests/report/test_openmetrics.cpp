// The OpenMetrics text (src/report/openmetrics.cpp), line by line.
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

namespace {

std::string openmetrics(const Results& res) {
  std::ostringstream out;
  report::renderer("openmetrics").render(res, out);
  return out.str();
}

const std::string kLabels =
    R"(kernel="fused",batch="4",heads="16",kv_heads="16",seq_q="2048",seq_k="2048",hdim="128",causal="0",)"
    R"(dtype="bf16",device="Test GPU",backend="cuda",revision="abc123")";

}  // namespace

TEST_CASE("openmetrics: one sample per measured point in each family, metadata first, # EOF last") {
  Results res = two_points();
  annotate(res);
  const std::string text = openmetrics(res);
  CHECK(text.find("# TYPE attnprof_tflops gauge\n# HELP attnprof_tflops ") == 0);
  CHECK(text.find("attnprof_tflops{" + kLabels + "} 333.33333333333") != std::string::npos);
  CHECK(text.find("# TYPE attnprof_latency_p50_seconds gauge\n# UNIT attnprof_latency_p50_seconds seconds\n") !=
        std::string::npos);
  CHECK(text.find("attnprof_latency_p50_seconds{" + kLabels + "} 0.0003\n") != std::string::npos);
  CHECK(text.find("attnprof_latency_p99_seconds{" + kLabels + ",estimate=\"p99\"} 0.00031\n") != std::string::npos);
  CHECK(text.find("attnprof_dram_bytes{" + kLabels + "} 150000000\n") != std::string::npos);
  CHECK(text.find("attnprof_min_dram_bytes{" + kLabels + "} 150000000\n") != std::string::npos);
  CHECK(text.find("attnprof_dram_over_minimum_ratio{" + kLabels + "} 1\n") != std::string::npos);
  CHECK(text.find("attnprof_point_verdict_info{" + kLabels + R"(,verdict="compute-bound",flags=""} 1)") !=
        std::string::npos);
  // The unsupported point has a status and nothing measured.
  CHECK(text.find(R"(hdim="96",causal="0",dtype="bf16",device="Test GPU",backend="cuda",revision="abc123",)"
                  R"(status="unsupported"} 1)") != std::string::npos);
  size_t hdim96 = 0;
  for (size_t at = text.find("hdim=\"96\""); at != std::string::npos; at = text.find("hdim=\"96\"", at + 1)) ++hdim96;
  CHECK(hdim96 == 1);
  CHECK(text.find(R"(attnprof_run_info{device="Test GPU",backend="cuda",revision="abc123",version="0.1.0",)"
                  R"(date="2026-01-01T00:00:00Z",host="h"} 1)") != std::string::npos);
  CHECK(text.size() >= 6);
  CHECK(text.substr(text.size() - 6) == "# EOF\n");
}

TEST_CASE("openmetrics: a P99 the samples cannot bound is the maximum, labelled; both TFLOP/s conventions") {
  Results res = two_points();
  res.records.pop_back();
  res.records[0].latency.n = 30;
  res.records[0].latency.max_us = 320;
  res.records[0].tflops_fa_convention = 166.5;
  annotate(res);
  std::string text = openmetrics(res);
  CHECK(text.find("attnprof_latency_p99_seconds{" + kLabels + ",estimate=\"max\"} " + fmt::format("{}", 320 * 1e-6) +
                  "\n") != std::string::npos);
  CHECK(text.find("attnprof_tflops_fa_convention{" + kLabels + "} 166.5\n") != std::string::npos);
  res.records[0].latency.n = 368;
  text = openmetrics(res);
  CHECK(text.find("attnprof_latency_p99_seconds{" + kLabels + ",estimate=\"p99\"} 0.00031\n") != std::string::npos);
}

TEST_CASE("openmetrics: label values escape backslash, quote and line feed; NaN is spelled NaN") {
  Results res = two_points();
  res.records.pop_back();
  res.records[0].kernel = "my\\\"kernel\"\nv2";
  res.records[0].tflops = std::nan("");
  annotate(res);
  const std::string text = openmetrics(res);
  CHECK(text.find(R"(kernel="my\\\"kernel\"\nv2")") != std::string::npos);
  CHECK(text.find("\nv2") == std::string::npos);  // no raw line feed inside a sample
  // A NaN TFLOP/s is left out (absent, not a number), not written as a sample.
  CHECK(text.find("attnprof_tflops{") == std::string::npos);
}

TEST_CASE("openmetrics: a backward point is labelled with its pass, so it never shares the forward's label set") {
  Results res = two_points();
  Record bwd = res.records[0];
  bwd.shape.pass = Pass::bwd;
  res.records.push_back(bwd);
  annotate(res);
  const std::string text = openmetrics(res);
  CHECK(text.find("attnprof_latency_p50_seconds{" + kLabels + "} 0.0003\n") != std::string::npos);
  const std::string bwd_labels =
      R"(kernel="fused",batch="4",heads="16",kv_heads="16",seq_q="2048",seq_k="2048",hdim="128",causal="0",)"
      R"(dtype="bf16",pass="bwd",device="Test GPU")";
  CHECK(text.find("attnprof_latency_p50_seconds{" + bwd_labels) != std::string::npos);
}
