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

TEST_CASE("an fp8 point: its own roof in every format, or 'no fp8_e4m3 roof' where the ceilings have none") {
  // small_results(): bf16 ceilings of 800 TFLOP/s; the ok point made fp8, 333.3 TFLOP/s at intensity 667.
  Results old = small_results();
  old.records[0].shape.dtype = DType::fp8_e4m3;
  old.records[0].counters.total.clear();  // no counters: only the roofline could place it
  const std::string summary = report::detail::ceilings_summary(old);
  CHECK_THAT(summary, Catch::StartsWith("HBM 4 TB/s, bf16 800 TFLOP/s (measured); no fp8_e4m3 roof: these ceilings "
                                        "were measured without the fp8 probes"));
  CHECK_THAT(render(old, "terminal"), Catch::Contains("; no fp8_e4m3 roof: these ceilings"));
  CHECK_THAT(render(old, "html"), Catch::Contains("; no fp8_e4m3 roof: these ceilings"));
  CHECK_THAT(render(old, "markdown"), Catch::Contains("; no fp8\\_e4m3 roof: these ceilings"));  // '_' escaped
  // The HTML roofline draws no fp8 roof then: the chart's figures are the ceilings' own.
  auto chart_flops = [](const Results& res) {
    const std::string html = render(res, "html");
    const std::string open = "<script type=\"application/json\" id=\"attnprof-data\">";
    const size_t begin = html.find(open) + open.size();
    return json::parse(html.substr(begin, html.find("</script>", begin) - begin)).at("ceilings").at("flops");
  };
  CHECK_FALSE(chart_flops(old).contains("fp8_e4m3"));
  CHECK(chart_flops(old).at("bf16") == 8e14);
  // Nor does the Markdown table show a % of a borrowed roof.
  CHECK_THAT(render(old, "markdown"), Catch::Contains("| 333.3 | - |"));

  // Ceilings with the fp8 roof: the point is placed on it (333.3 / 1600 = 20.8%), and nothing is missing.
  Results measured = old;
  measured.context.ceilings.peak_flops_per_s["fp8_e4m3"] = 1.6e15;
  CHECK(report::detail::ceilings_summary(measured) == "HBM 4 TB/s, bf16 800 TFLOP/s, fp8_e4m3 1600 TFLOP/s (measured)");
  CHECK(chart_flops(measured).at("fp8_e4m3") == 1.6e15);
  CHECK_THAT(render(measured, "markdown"), Catch::Contains("| 333.3 | 20.8 |"));
  CHECK_THAT(render(measured, "markdown"), !Catch::Contains("roof:"));

  // A bf16 point's summary is as it was: no note for a dtype no point has.
  CHECK(report::detail::ceilings_summary(small_results()) == "HBM 4 TB/s, bf16 800 TFLOP/s (measured)");
}

TEST_CASE("a memory-bound verdict names its level in the tables; other verdicts stand alone") {
  Results res = small_results();
  REQUIRE(res.records.size() >= 2);
  const auto row_of = [&](Verdict verdict, std::optional<MemoryLevel> level) {
    Results one = res;
    Diagnosis d;
    d.verdict = verdict;
    d.metrics.memory_level = level;
    one.records[0].diagnosis = d;
    return report::detail::make_rows(one).front();
  };
  using report::detail::verdict_text;
  CHECK(verdict_text(row_of(Verdict::memory_bound, MemoryLevel::dram)) == "memory-bound (DRAM)");
  CHECK(verdict_text(row_of(Verdict::memory_bound, MemoryLevel::l2)) == "memory-bound (L2)");
  CHECK(verdict_text(row_of(Verdict::memory_bound, MemoryLevel::l1)) == "memory-bound (L1/shared)");
  CHECK(verdict_text(row_of(Verdict::memory_bound, MemoryLevel::on_chip)) == "memory-bound (on chip)");
  // No level known (per-level counters absent and no DRAM figure to tell): the bare verdict.
  CHECK(verdict_text(row_of(Verdict::memory_bound, std::nullopt)) == "memory-bound");
  // Another verdict keeps the level out, though the point has one.
  const auto compute = row_of(Verdict::compute_bound, MemoryLevel::l1);
  CHECK(compute.memory_level.empty());
  CHECK(verdict_text(compute) == "compute-bound");

  // From the rules: every analysed memory-bound point with a level shows it, and no other point does.
  Results analysed = mixed_results();
  report::analyse(analysed);
  size_t with_level = 0;
  for (const auto& row : report::detail::make_rows(analysed)) {
    INFO(row.label << " " << row.kernel << " " << row.verdict);
    const bool has_level = row.diagnosis && row.diagnosis->verdict == Verdict::memory_bound &&
                           row.diagnosis->metrics.memory_level;
    CHECK(row.memory_level.empty() == !has_level);
    with_level += has_level;
  }
  CHECK(with_level > 0);
}
