// The OpenMetrics text line by line, the verdict rules and their anchors in docs/diagnosis.md,
// significant digits, and the HTML report's links from verdicts to rules.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "core/diagnosis.hpp"
#include <fmt/format.h>

#include "core/results.hpp"
#include "report/report.hpp"
#include "report/rules.hpp"
#include "report/view.hpp"

using namespace attnprof;
using namespace attnprof::core;

namespace {

// One ok point with hand-checkable numbers (the one of test_renderers.cpp: 1e11 FLOP in 300 us =
// 333.3 TFLOP/s, 1.5e8 bytes = the minimum) and one unsupported.
Results two_points() {
  Results res;
  res.context.backend = attnprof::core::BackendKind::cuda;
  res.context.device.name = "Test GPU";
  res.context.git_revision = "abc123";
  res.context.tool_version = "0.1.0";
  res.context.date_utc = "2026-01-01T00:00:00Z";
  res.context.host = "h";
  res.context.ceilings.peak_bw_bytes_per_s = 4e12;
  res.context.ceilings.peak_flops_per_s["bf16"] = 8e14;
  Record r;
  r.shape = Shape{4, 16, 16, 2048, 2048, 128, false, DType::bf16};
  r.kernel = "fused";
  r.backend = attnprof::core::BackendKind::cuda;
  r.cost.flops = 1e11;
  r.cost.min_bytes_read = 1e8;
  r.cost.min_bytes_write = 0.5e8;
  r.latency.p50_us = 300;
  r.latency.p99_us = 310;
  r.latency.rel_stddev = 0.01;
  r.tflops = 1e11 / 300e-6 / 1e12;
  r.launch_overhead_us = 3;
  r.counters.status = attnprof::core::CounterStatus::ok;
  r.counters.total[kMetricDramRead] = 1e8;
  r.counters.total[kMetricDramWrite] = 0.5e8;
  r.counters.total[kMetricTensorOpsBf16] = 1e11;
  r.counters.total[kMetricComputeSol] = 70;
  r.counters.total[kMetricMemorySol] = 15;
  r.verification.checked = r.verification.passed = true;
  res.records.push_back(r);
  Record u = r;
  u.shape.hdim = 96;
  u.status = Status::unsupported;
  u.reason = "hdim 96";
  res.records.push_back(u);
  return res;
}

std::string openmetrics(const Results& res) {
  std::ostringstream out;
  report::renderer("openmetrics").render(res, out);
  return out.str();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
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

TEST_CASE("rules: every verdict and flag the diagnosis can give has a rule and an anchor in docs/diagnosis.md") {
  const std::string doc = slurp(ATTNPROF_SOURCE_DIR "/docs/diagnosis.md");
  REQUIRE_FALSE(doc.empty());
  for (std::string_view v : {kVerdictMemory, kVerdictCompute, kVerdictLatency, kVerdictOccupancy, kVerdictLaunch,
                             kVerdictUnknown}) {
    const std::string anchor = report::detail::verdict_anchor(v);
    CHECK(anchor == "verdict-" + std::string(v));
    CHECK(doc.find("<a id=\"" + anchor + "\"></a>") != std::string::npos);
  }
  for (std::string_view f : {kFlagUnderFilled, kFlagTailEffect, kFlagExcessTraffic, kFlagThrottled, kFlagNoisy,
                             kFlagHostBound, kFlagUnverified, kFlagCountersUnavailable}) {
    const std::string anchor = report::detail::flag_anchor(f);
    CHECK(anchor == "flag-" + std::string(f));
    CHECK(doc.find("<a id=\"" + anchor + "\"></a>") != std::string::npos);
  }
  CHECK(report::detail::verdict_anchor("no-such-verdict").empty());
  CHECK(report::detail::verdict_rules().size() == 6);
  CHECK(report::detail::flag_rules().size() == 8);
}

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

TEST_CASE("html: verdicts and flags link to their rule, the label key and the filters are there") {
  Results res = two_points();
  annotate(res);
  std::ostringstream out;
  report::renderer("html").render(res, out);
  const std::string html = out.str();
  CHECK(html.find(R"(<a class="verdict" href="#verdict-compute-bound">compute-bound</a>)") != std::string::npos);
  CHECK(html.find(R"(<dt id="verdict-compute-bound">compute-bound</dt>)") != std::string::npos);
  CHECK(html.find(R"(<dt id="flag-noisy">noisy</dt>)") != std::string::npos);
  CHECK(html.find("b2 h4/2 s256x256 d64 causal bf16 reads: batch 2") != std::string::npos);
  CHECK(html.find(R"(id="filters")") != std::string::npos);
  // The comparison's summary is a row of its own under the numbers, not a squeezed column.
  CHECK(html.find("<th>summary</th>") == std::string::npos);
}
