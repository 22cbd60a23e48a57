// Helpers of the renderer tests (one test file per renderer, as src/report/ has one source file per
// format): the shared fixtures, a rendered report as a string, its lines, and a strict RFC 4180 reader
// of the CSV renderer's output.
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/cost_model.hpp"
#include "core/diagnosis.hpp"
#include "core/results.hpp"
#include "report/report.hpp"
#include "file_text.hpp"

namespace attnprof::report_test {

// The fixture of the file-based tests: hand-made, and says so in its notices.
inline const char* const kFixture = ATTNPROF_SOURCE_DIR "/tests/report/fixtures/synthetic_results.json";

using attnprof::test_support::slurp;

// The ok prefill point every hand-made fixture below starts from: 1e11 FLOP in 300 us = 333.3 TFLOP/s,
// 1.5e8 bytes = the cost-model minimum, compute-bound by its SOL counters (70% vs 15%).
inline core::Record prefill_point() {
  core::Record r;
  r.shape = core::Shape{4, 16, 16, 2048, 2048, 128, false, core::DType::bf16};
  r.kernel = "fused";
  r.backend = core::BackendKind::cuda;
  r.cost.flops = 1e11;
  r.cost.min_bytes_read = 1e8;
  r.cost.min_bytes_write = 0.5e8;
  r.latency.p50_us = 300;
  r.latency.p99_us = 310;
  r.latency.rel_stddev = 0.01;
  r.tflops = 1e11 / 300e-6 / 1e12;
  r.launch_overhead_us = 3;
  r.counters.status = core::CounterStatus::ok;
  r.counters.total[core::kMetricDramRead] = 1e8;
  r.counters.total[core::kMetricDramWrite] = 0.5e8;
  r.counters.total[core::kMetricTensorOpsBf16] = 1e11;
  r.counters.total[core::kMetricComputeSol] = 70;
  r.counters.total[core::kMetricMemorySol] = 15;
  r.verification.checked = r.verification.passed = true;
  return r;
}

// Two points with hand-checkable numbers: one ok (compute-bound, 1e11 FLOP in 300 us = 333.3
// TFLOP/s; intensity 667 FLOP/B is past the 200 FLOP/B ridge, so the roof is 800: 41.7%), one
// unsupported.
inline core::Results small_results() {
  using namespace core;
  Results res;
  res.context.backend = attnprof::core::BackendKind::cuda;
  res.context.device.name = "Test GPU";
  res.context.ceilings.peak_bw_bytes_per_s = 4e12;
  res.context.ceilings.peak_flops_per_s["bf16"] = 8e14;
  res.context.ceilings.source = "measured";
  res.context.notices = {"synthetic"};
  Record r = prefill_point();
  res.records.push_back(r);
  Record u;
  u.shape = Shape{4, 16, 16, 2048, 2048, 96, false, DType::bf16};
  u.kernel = "fused";
  u.backend = attnprof::core::BackendKind::cuda;
  u.status = Status::unsupported;
  u.reason = "hdim 96";
  res.records.push_back(u);
  return res;
}

// prefill_point() and one unsupported point copied from it, with a revision, version, date and host in
// the context (the OpenMetrics labels).
inline core::Results two_points() {
  using namespace core;
  Results res;
  res.context.backend = attnprof::core::BackendKind::cuda;
  res.context.device.name = "Test GPU";
  res.context.git_revision = "abc123";
  res.context.tool_version = "0.1.0";
  res.context.date_utc = "2026-01-01T00:00:00Z";
  res.context.host = "h";
  res.context.ceilings.peak_bw_bytes_per_s = 4e12;
  res.context.ceilings.peak_flops_per_s["bf16"] = 8e14;
  Record r = prefill_point();
  res.records.push_back(r);
  Record u = r;
  u.shape.hdim = 96;
  u.status = Status::unsupported;
  u.reason = "hdim 96";
  res.records.push_back(u);
  return res;
}

// small_results() with its ok point made a packed batch of 3 sequences (cost from the cost model).
inline core::Results packed_results() {
  using namespace core;
  Results res = small_results();
  Record& r = res.records[0];
  r.shape.seq_lens = {1024, 2048, 512};
  r.shape.lengths = "list:1024/2048/512";
  r.shape.batch = 3;
  r.cost = cost_of(r.shape, KernelKind::fused);
  return res;
}

// prefill_point() (333.3 TFLOP/s, 41.7% of the roof) and a decode point:
// b64 h32/8 s1x8192, 2.1485 GB in 520 us = 4.13 TB/s, 91.4% of the 4.52 TB/s ceiling, 33.6 MB per
// generated token.
inline core::Results mixed_results() {
  using namespace core;
  Results res;
  res.context.backend = BackendKind::cuda;
  res.context.device.name = "Test GPU";
  res.context.ceilings.peak_bw_bytes_per_s = 4.52e12;
  res.context.ceilings.peak_flops_per_s["bf16"] = 8e14;
  res.context.ceilings.launch_latency_us = 1.62;
  res.context.ceilings.source = "measured";
  Record p = prefill_point();
  res.records.push_back(p);

  Record d;
  d.shape = Shape{64, 32, 8, 1, 8192, 128, false, DType::bf16};
  d.kernel = "decode";
  d.backend = BackendKind::cuda;
  d.cost = cost_of(d.shape, KernelKind::fused);
  d.latency.p50_us = 520;
  d.latency.p99_us = 546;
  d.latency.rel_stddev = 0.01;
  set_tflops(d);
  d.launch_overhead_us = 3;
  d.counters.status = CounterStatus::ok;
  d.counters.total[kMetricDramRead] = d.cost.min_bytes_read;
  d.counters.total[kMetricDramWrite] = d.cost.min_bytes_write;
  d.counters.total[kMetricTensorOpsBf16] = 4 * d.cost.flops;
  d.counters.total[kMetricComputeSol] = 5;
  d.counters.total[kMetricMemorySol] = 91;
  d.counters.total[kMetricDramSol] = 91;
  d.stages = {Stage{"decode", {}, 520, 546, 1, 1}};
  d.plan = {{"kv_splits", 1}, {"block_n", 64}};
  d.verification.checked = d.verification.passed = true;
  res.records.push_back(d);
  return res;
}


inline std::vector<std::string> lines_of(const std::string& text, const std::string& eol = "\n") {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(eol, start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + eol.size();
  }
  return lines;
}

// A strict RFC 4180 reader: records of fields, CRLF between records.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, in_quotes = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
      quoted = false;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field);
      field.clear();
      quoted = false;
      rows.emplace_back();
      ++i;
    } else {
      if (c == '\n') FAIL("a bare LF outside quotes breaks RFC 4180");
      field += c;
    }
  }
  REQUIRE_FALSE(in_quotes);
  if (rows.back().empty() && field.empty()) rows.pop_back();
  return rows;
}

inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// What `attnprof report` writes for `res` in `format` ("terminal", "csv", ...): the results analysed
// (report::analyse), then rendered.
inline std::string render(core::Results res, std::string_view format) {
  report::analyse(res);
  return report::render(report::renderer(format), res);
}

}  // namespace attnprof::report_test
