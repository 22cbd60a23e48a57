// The HTML report (src/report/html.cpp): data cannot inject markup, self-contained with every section,
// a hostile context, decode columns and chart data, verdict and flag links to their rules, the
// contents, the points table's columns and folded refusals, counters collected on a second path, the
// instruction mix, a CPU run's memory.
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
  for (const char* id : {"id=\"toc\"", "id=\"context\"", "id=\"roofline-chart\"", "id=\"prefill-throughput-chart\"",
                         "id=\"prefill-latency-chart\"", "id=\"points-table\"", "id=\"comparison-table\"",
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

TEST_CASE("HTML: decode columns, drill-down and chart data") {
  const std::string html = render(mixed_results(), "html");
  CHECK_THAT(html, Catch::Contains("<th class=\"n\">KV TB/s</th><th class=\"n\">% of HBM ceiling</th><th "
                                   "class=\"n\">MB/token</th>"));
  // The decode row: TFLOP/s and % of roof empty, then its bandwidth, % of the ceiling and MB/token.
  CHECK_THAT(html, Catch::Contains("data-v=\"546\">546.00</td><td class=\"n\" data-v=\"\">-</td><td class=\"n\" "
                                   "data-v=\"\">-</td>"));
  CHECK_THAT(html, Catch::Contains(">4.13</td>"));
  CHECK_THAT(html, Catch::Contains(">91.4</td>"));
  CHECK_THAT(html, Catch::Contains(">33.6</td>"));
  CHECK_THAT(html, Catch::Contains("<b>KV TB/s (DRAM bytes / P50)</b>"));
  CHECK_THAT(html, Catch::Contains("<b>generated tokens per call</b>64"));
  CHECK_THAT(html, Catch::Contains("streams the KV cache (2.15 GB) at 4.13 TB/s = 91% of the 4.52 TB/s HBM ceiling"));

  const std::string open = "<script type=\"application/json\" id=\"attnprof-data\">";
  const size_t begin = html.find(open);
  REQUIRE(begin != std::string::npos);
  const size_t end = html.find("</script>", begin);
  const json data = json::parse(html.substr(begin + open.size(), end - begin - open.size()));
  REQUIRE(data.at("points").size() == 2);
  CHECK(data["points"][0]["decode"] == false);
  CHECK(data["points"][0]["kv_tb_per_s"].is_null());
  CHECK(data["points"][1]["decode"] == true);
  CHECK(data["points"][1]["kv_tb_per_s"].get<double>() == Approx(4.1318).epsilon(1e-3));
  CHECK(data["points"][1]["bytes_per_token"].get<double>() == Approx(3.357e7).epsilon(1e-3));

  Results prefill = mixed_results();
  prefill.records.pop_back();
  const std::string plain = render(prefill, "html");
  CHECK(plain.find("<th class=\"n\">KV TB/s</th>") == std::string::npos);
  CHECK(plain.find("KV TB/s (DRAM bytes / P50)") == std::string::npos);
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

TEST_CASE("html: contents, the points table's first columns, refusals folded by kernel and reason") {
  Results res = small_results();
  for (int64_t hdim : {32, 48}) {
    Record u = res.records[1];
    u.shape.hdim = hdim;
    res.records.push_back(u);  // "fused" refuses three shapes for "hdim 96"
  }
  Record other = res.records[1];
  other.kernel = "reference";
  res.records.push_back(other);  // one refusal of another kernel: a row of its own
  annotate(res);
  const std::string html = render(res, "html");
  for (const char* link : {"href=\"#context\"", "href=\"#roofline\"", "href=\"#sweep-prefill\"", "href=\"#points\"",
                           "href=\"#not-ok\"", "href=\"#rules\"", "href=\"#details\""})
    CHECK_THAT(html, Catch::Contains("<nav id=\"toc\"") && Catch::Contains(link));
  CHECK_THAT(html, Catch::Contains("<thead><tr><th>point</th><th>kernel</th><th>status</th><th>verdict</th>"
                                   "<th>flags / reason</th><th class=\"n\">P50 us</th>"));
  // The three refusals of fused are one row and one line, each with the count; the drill-downs stay.
  CHECK_THAT(html, Catch::Contains("<tr data-i=\"1\" class=\"folded\"><td><a href=\"#not-ok-0\">3 points</a></td>"
                                   "<td>fused</td><td class=\"status-bad\">unsupported</td>"));
  CHECK_THAT(html, Catch::Contains("<li id=\"not-ok-0\">fused: <span class=\"status-bad\">unsupported</span>, 3 points: "
                                   "hdim 96"));
  CHECK_THAT(html, Catch::Contains("<li id=\"not-ok-1\"><a href=\"#pt-4\">"));
  CHECK(count(html, "<tr data-i=") == 3);
  CHECK(count(html, "<details id=\"pt-") == 5);
}

TEST_CASE("html: counters collected on a second path do not read as a failure to fix") {
  Results res = small_results();
  res.records[0].counters.reason =
      "batched session not used (cuptiRangeProfilerStop failed: CUPTI_ERROR_UNKNOWN; fix: re-run with "
      "--no-counters to time only; report the error if it persists): collected in a session of its own; "
      "kernel replay";
  res.records[1].counters.status = CounterStatus::unavailable;
  res.records[1].counters.reason = "cuptiProfilerInitialize failed: CUPTI_ERROR_UNKNOWN; fix: re-run with --no-counters";
  annotate(res);
  const std::string html = render(res, "html");
  CHECK_THAT(html, Catch::Contains("status <b>ok</b>: batched session not used (cuptiRangeProfilerStop failed: "
                                   "CUPTI_ERROR_UNKNOWN): collected in a session of its own; kernel replay"));
  // Counters that are unavailable keep their advice.
  CHECK_THAT(html, Catch::Contains("status <b>unavailable</b>: cuptiProfilerInitialize failed: CUPTI_ERROR_UNKNOWN; "
                                   "fix: re-run with --no-counters"));
}

TEST_CASE("html: a sampled point's warp states: the mix, hot lines and instructions, and the diagnosis' line") {
  Results res = small_results();
  core::PcSample load;
  load.function = "void ns::attention_kernel<bf16>(Params)";
  load.pc_offset = 0x1a0;
  load.file = "/src/kernel.cu";
  load.line = 212;
  load.reasons = {{"long_scoreboard", 60}, {"selected", 20}};
  core::PcSample math = load;
  math.pc_offset = 0x2b0;
  math.line = 240;
  math.reasons = {{"math_pipe_throttle", 15}, {"selected", 5}};
  core::Stalls stalls;
  stalls.calls = 2;
  stalls.period_log2 = 10;
  stalls.samples = 100;
  stalls.per_kernel = core::aggregate_stalls({load, math});
  res.records[0].stalls = stalls;
  res.records[1].stalls = core::Stalls{.status = core::SamplingStatus::unavailable, .reason = "refused <here>"};
  annotate(res);
  const std::string html = render(res, "html");
  CHECK_THAT(html, Catch::Contains("<h3>Warp states</h3><p>status <b>ok</b> &middot; 100 samples over 2 calls"));
  CHECK_THAT(html, Catch::Contains("long_scoreboard %"));
  CHECK_THAT(html, Catch::Contains("/src/kernel.cu:212"));
  CHECK_THAT(html, Catch::Contains("0x1a0"));
  CHECK_THAT(html, Catch::Contains("long_scoreboard 75%"));  // the hot line's own top stall
  CHECK_THAT(html, Catch::Contains("status <b>unavailable</b>: refused &lt;here&gt;"));
  CHECK_THAT(html, Catch::Contains("warp states (stalls, sampled): attention_kernel spends 60% of its warp samples on "
                                   "long_scoreboard and 25% issuing (4.0 warp cycles per issued instruction); its "
                                   "hottest source line, kernel.cu:212, holds 80% of them, mostly long_scoreboard"));
  CHECK(count(html, "<h3>Warp states</h3>") == 2);  // the two sampled points, none for the rest
}

TEST_CASE("html: a point with the instruction mix shows its instructions by class; the others none") {
  Results res = small_results();  // 1e11 FLOPs
  auto& totals = res.records[0].counters.total;
  totals[core::kMetricInstExecuted] = 2e9;
  totals[core::kMetricInstPipeTensor] = 2e8;
  totals[core::kMetricInstPipeFma] = 6e8;
  totals[core::kMetricInstPipeAlu] = 4e8;
  totals[core::kMetricInstPipeXu] = 1e8;
  totals[core::kMetricInstPipeLsu] = 3e8;
  totals[core::kMetricInstPipeCbu] = 0.6e8;
  totals[core::kMetricInstPipeAdu] = 0.4e8;
  totals[core::kMetricInstPipeUniform] = 2e8;
  totals[core::kMetricInstPipeTma] = 0;
  totals[core::kMetricWarpsPerIssue] = 6.5;
  annotate(res);
  const std::string html = render(res, "html");
  CHECK(count(html, "<h3>Instructions by class</h3>") == 1);
  CHECK_THAT(html, Catch::Contains("<h3>Instructions by class</h3><p>2 G warp instructions executed over the call's "
                                   "launches, 20 per 1k FLOP (exact FLOPs) &middot; warp cycles per issued instruction "
                                   "6.5 (counters)</p>"));
  const auto row = [&](std::string_view name) {
    const size_t at = html.find(fmt::format("\">{}</td><td>", name));
    REQUIRE(at != std::string::npos);
    return html.substr(at, html.find("</tr>", at) - at);
  };
  const std::string fma = row("FMA");
  CHECK_THAT(fma, Catch::StartsWith("\">FMA</td><td>FMA</td><td class=\"n\" data-v=\"600000000\">600 M</td>"));
  CHECK_THAT(fma, Catch::Contains(">30.0</td>") && Catch::EndsWith(">6.00</td>"));  // share %, per 1k FLOP
  CHECK_THAT(row("branch/barrier"), Catch::Contains("<td>CBU, ADU</td>") && Catch::Contains(">100 M</td>"));
  CHECK_THAT(row("TMA"), Catch::Contains(">0</td>"));
  CHECK(html.find("\">FP64</td>") == std::string::npos);  // not collected: no row
  // 1.9 G of the 2 G in the listed pipes: 100 M (5%) counted by none of them.
  CHECK_THAT(row("other"), Catch::Contains(">100 M</td>") && Catch::Contains(">5.0</td>") && Catch::EndsWith(">1.00</td>"));
  // The pipes' description is the class's tooltip.
  CHECK_THAT(html, Catch::Contains("<td title=\"special functions (MUFU: exp2"));
  // Without the counters (the fixture, a sweep without --stalls): no block.
  CHECK(count(render(read_results(kFixture), "html"), "Instructions by class") == 0);
  CHECK(count(render(small_results(), "html"), "Instructions by class") == 0);
}

TEST_CASE("html: why the gap, each kernel against the fastest at a shape where several were sampled") {
  const Results h200 = read_results(std::string(ATTNPROF_SOURCE_DIR) + "/reports/h200-stalls/results.json");
  const std::string html = render(h200, "html");
  CHECK_THAT(html, Catch::Contains("href=\"#why-gap\"") && Catch::Contains("<section id=\"why-gap\"><h2>Why the gap</h2>"));
  // Four kernels sampled at each of six shapes: three rows per shape, each against torch:cudnn (the fastest).
  const size_t begin = html.find("id=\"why-table\""), end = html.find("</table>", begin);
  REQUIRE(begin != std::string::npos);
  const std::string table = html.substr(begin, end - begin);
  CHECK(count(table, "<tr class=\"numbers\">") == 18);
  CHECK(count(table, "<td>torch:cudnn</td>") == 18);
  const size_t row =
      table.find("<tr class=\"numbers\"><td>b1 h16/16 s16384x16384 d128 bf16</td><td>fused-sm90</td><td>torch:cudnn</td>");
  REQUIRE(row != std::string::npos);
  const std::string pair = table.substr(row, table.find("</tbody>", row) - row);
  CHECK_THAT(pair, Catch::Contains(">363.38</td>") && Catch::Contains(">10.5</td>"));
  // Its speed, and per SM cycle (fused-sm90 ran at the higher clock there).
  CHECK_THAT(pair, Catch::Contains(">0.905</td>") && Catch::Contains(">0.838</td>"));
  CHECK_THAT(pair, Catch::EndsWith("<tr class=\"summary\"><td colspan=\"7\">largest terms: wait +559.0 us (+16.1%), in "
                                   "fused-sm90 at device_math.cuh:28; mio_throttle +384.4 us (+11.1%), in fused-sm90 at "
                                   "device_math.cuh:28; dispatch_stall -263.0 us (-7.6%)</td></tr>"));
  // Without warp states (the synthetic fixture), no section and no link.
  const std::string plain = render(read_results(kFixture), "html");
  CHECK(plain.find("why-gap") == std::string::npos);
}

// A timeline that holds a status and its reason alone.
static core::Timeline status_only_timeline(core::SamplingStatus status, std::string reason) {
  core::Timeline t;
  t.status = status;
  t.reason = std::move(reason);
  return t;
}

TEST_CASE("html: a sampled point's drill-down holds its Timeline; the others none") {
  Results res = small_results();
  core::Timeline t;
  t.calls = 1;
  t.interval_ns = 1000;
  t.t_us = {0, 1, 2};
  t.series.push_back({.metric = core::kTimelineMetrics[0].name, .label = core::kTimelineTensorLabel, .values = {10, 90, 20}});
  res.records[0].timeline = t;
  res.records[1].timeline = status_only_timeline(core::SamplingStatus::unavailable, "PM sampling refused <x>");
  annotate(res);
  const std::string html = render(res, "html");
  CHECK(count(html, "<h3>Timeline</h3>") == 2);
  CHECK(count(html, "<svg class=\"timeline\"") == 1);
  CHECK_THAT(html, Catch::Contains("status <b>unavailable</b>: PM sampling refused &lt;x&gt;"));
  CHECK(count(render(small_results(), "html"), "<h3>Timeline</h3>") == 0);
}

TEST_CASE("html: a CPU run names its bandwidth ceiling memory, not HBM; the page knows its backend") {
  Results res = mixed_results();
  res.context.backend = BackendKind::cpu;
  for (auto& r : res.records) r.backend = BackendKind::cpu;
  annotate(res);
  const std::string html = render(res, "html");
  CHECK_THAT(html, Catch::Contains("<th class=\"n\">% of memory ceiling</th>"));
  CHECK_THAT(html, Catch::Contains("Ceilings: DRAM 4.52 TB/s"));
  CHECK_THAT(html, Catch::Contains("<b>% of the memory ceiling</b>"));
  CHECK_THAT(html, Catch::Contains("\"memory\":\"memory\""));
  CHECK_THAT(render(mixed_results(), "html"), Catch::Contains("<th class=\"n\">% of HBM ceiling</th>"));
}

TEST_CASE("html: the series charts: prefill and decode apart, each point placed, own kernels marked") {
  const std::string html = render(mixed_results(), "html");
  for (const char* id : {"id=\"prefill-throughput-chart\" data-chart=\"0\"", "id=\"decode-throughput-chart\" data-chart=\"1\"",
                         "id=\"decode-latency-chart\" data-chart=\"1\" data-measure=\"latency\""})
    CHECK_THAT(html, Catch::Contains(id));
  const std::string open = "<script type=\"application/json\" id=\"attnprof-data\">";
  const size_t begin = html.find(open);
  REQUIRE(begin != std::string::npos);
  const json data = json::parse(html.substr(begin + open.size(), html.find("</script>", begin) - begin - open.size()));
  REQUIRE(data.at("charts").size() == 2);
  CHECK(data["charts"][0]["id"] == "prefill");
  CHECK(data["charts"][1]["id"] == "decode");
  CHECK(data["charts"][1]["x"] == "seq_k");
  CHECK(data["points"][0]["series"]["chart"] == 0);
  CHECK(data["points"][1]["series"]["chart"] == 1);
  CHECK(data["points"][1]["own"] == true);
  // A memory-bound point's level, for the tooltip and in the points table; none for another verdict.
  CHECK(data["points"][0]["verdict"] == "compute-bound");
  CHECK(data["points"][0]["memory_level"] == "");
  CHECK(data["points"][1]["verdict"] == "memory-bound");
  CHECK(data["points"][1]["memory_level"] == "DRAM");
  CHECK_THAT(html, Catch::Contains("memory-bound</a> <span class=\"level\">(DRAM)</span>"));
}
