// Renderers: terminal output line by line, Markdown table, CSV quoting (RFC 4180), HTML escaping and
// self-containment, and `attnprof report`'s file handling.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

const char* const kFixture = ATTNPROF_SOURCE_DIR "/tests/report/fixtures/synthetic_results.json";

// Two points with hand-checkable numbers: one ok (compute-bound, 1e11 FLOP in 300 us = 333.3
// TFLOP/s; intensity 667 FLOP/B is past the 200 FLOP/B ridge, so the roof is 800: 41.7%), one
// unsupported.
Results small_results() {
  Results res;
  res.context.backend = attnprof::core::BackendKind::cuda;
  res.context.device.name = "Test GPU";
  res.context.ceilings.peak_bw_bytes_per_s = 4e12;
  res.context.ceilings.peak_flops_per_s["bf16"] = 8e14;
  res.context.ceilings.source = "measured";
  res.context.notices = {"synthetic"};
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
  Record u;
  u.shape = Shape{4, 16, 16, 2048, 2048, 96, false, DType::bf16};
  u.kernel = "fused";
  u.backend = attnprof::core::BackendKind::cuda;
  u.status = Status::unsupported;
  u.reason = "hdim 96";
  res.records.push_back(u);
  return res;
}

}  // namespace

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

TEST_CASE("markdown: context, table rows, comparison, failures") {
  const Results res = read_results(kFixture);
  const std::string md = render(res, "markdown");
  const auto lines = lines_of(md);
  const std::string header =
      "| point | kernel | status | p50 us | p99 us | TFLOP/s | % roof | verdict | flags |";
  size_t at = 0;
  while (at < lines.size() && lines[at] != header) ++at;
  REQUIRE(at < lines.size());
  CHECK(lines[at + 1] == "|---|---|---|--:|--:|--:|--:|---|---|");
  for (size_t i = 0; i < res.records.size(); ++i) {
    INFO(lines[at + 2 + i]);
    CHECK(lines[at + 2 + i].rfind("| " + res.records[i].shape.label() + " |", 0) == 0);
    CHECK(count(lines[at + 2 + i], " | ") == 8);  // 9 cells: no cell was split
  }
  CHECK(lines[at + 2] ==
        "| b4 h16/16 s8192x8192 d128 bf16 | reference | ok | 17250.00 | 17776.00 (n=60: max) | 127.5 | 78.7 | "
        "memory-bound | excess-traffic |");
  CHECK_THAT(md, Catch::Contains("**Notice**: SYNTHETIC FIXTURE"));
  CHECK_THAT(md, Catch::Contains("### Reference vs fused"));
  CHECK_THAT(md, Catch::Contains("### Points not ok"));
  CHECK_THAT(md, Catch::Contains("**oom**: needs 6144.0 GiB"));
  // GitHub renders HTML inside Markdown: none may come from the data.
  CHECK(md.find("<script>") == std::string::npos);
  CHECK(md.find("<img") == std::string::npos);
  CHECK_THAT(md, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

TEST_CASE("markdown escapes a '|' so that it cannot split a cell") {
  Results res = small_results();
  res.records[0].kernel = "a|b";
  const std::string md = render(res, "markdown");
  CHECK_THAT(md, Catch::Contains("| a\\|b |"));
}

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
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < rows[0].size(); ++i)
      if (rows[0][i] == name) return i;
    FAIL("no column " << name);
    return size_t{0};
  };
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

TEST_CASE("HTML: data cannot inject markup; the JSON block parses back") {
  const Results res = read_results(kFixture);
  const std::string html = render(res, "html");
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  // Exactly two script elements: the data block and the page's own script.
  CHECK(count(html, "<script") == 2);
  CHECK(count(html, "</script>") == 2);
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));

  const std::string open = "<script type=\"application/json\" id=\"attnprof-data\">";
  const size_t begin = html.find(open);
  REQUIRE(begin != std::string::npos);
  const size_t end = html.find("</script>", begin);
  const std::string block = html.substr(begin + open.size(), end - begin - open.size());
  CHECK(block.find('<') == std::string::npos);
  const json data = json::parse(block);
  REQUIRE(data.at("points").size() == res.records.size());
  bool found = false;
  for (const auto& p : data.at("points")) found = found || p.at("kernel") == "<script>alert(1)</script>";
  CHECK(found);
}

TEST_CASE("HTML is self-contained and carries every section") {
  const std::string html = render(read_results(kFixture), "html");
  for (const char* external : {"<link", "src=\"http", "src='http", "@import", "url(http", "href=\"http"})
    CHECK(html.find(external) == std::string::npos);
  for (const char* id : {"id=\"context\"", "id=\"roofline-chart\"", "id=\"tflops-chart\"",
                         "id=\"latency-chart\"", "id=\"points-table\"", "id=\"comparison-table\"",
                         "id=\"not-ok\"", "id=\"pt-0\"", "id=\"pt-9\"", "data-render-ok"})
    CHECK_THAT(html, Catch::Contains(id));
  CHECK_THAT(html, Catch::Contains("SYNTHETIC FIXTURE"));
  CHECK_THAT(html, Catch::Contains("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));
  CHECK(count(html, "<details id=\"pt-") == 10);
}

TEST_CASE("HTML escapes a hostile context too") {
  Results res = small_results();
  res.context.device.name = "</title><script>alert(3)</script>";
  res.context.command_line = "x\" onload=\"alert(4)";
  res.context.notices = {"<b>bold</b>"};
  const std::string html = render(res, "html");
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("\" onload=\"") == std::string::npos);
  CHECK(html.find("<b>bold") == std::string::npos);
  CHECK(count(html, "<title>") == 1);
}

TEST_CASE("run_report: bad input is an InputError; files are written") {
  report::ReportOptions options;
  options.results_path = "no-such-results.json";
  std::ostringstream out;
  CHECK_THROWS_AS(report::run_report(options, out), InputError);

  const std::string wrong = "report_test_wrong_version.json";
  {
    std::ofstream f(wrong);
    f << R"({"schema_version": "9.0", "context": {}, "records": []})";
  }
  options.results_path = wrong;
  CHECK_THROWS_AS(report::run_report(options, out), InputError);
  std::remove(wrong.c_str());

  options.results_path = kFixture;
  options.outputs = {{"html", "--html", "report_test.html"},
                     {"markdown", "--md", "report_test.md"},
                     {"csv", "--csv", "report_test.csv"}};
  CHECK(report::run_report(options, out) == 0);
  CHECK_THAT(out.str(), Catch::Contains("memory-bound"));
  for (const auto& output : options.outputs) {
    std::ifstream f(output.path);
    CHECK(f.good());
    std::remove(output.path.c_str());
  }
  options.quiet = true;
  options.outputs.clear();
  std::ostringstream quiet;
  report::run_report(options, quiet);
  CHECK(quiet.str().empty());
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
