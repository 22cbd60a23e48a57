// Decode points in every renderer: the terminal and Markdown tables gain KV TB/s, % HBM and MB/token
// and show "-" for a decode row's TFLOP/s; the CSV keeps TFLOP/s and adds the decode metrics; the
// HTML table, drill-down and chart data carry the same. Results without decode points are unchanged
// (test_renderers.cpp pins those tables line by line).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "core/cost_model.hpp"
#include "core/diagnosis.hpp"
#include "core/results.hpp"
#include "render_helpers.hpp"
#include "report/report.hpp"

using namespace attnprof;
using namespace attnprof::core;
using nlohmann::json;
using namespace attnprof::report_test;

namespace {

// A prefill point (333.3 TFLOP/s, 41.7% of the roof: as in test_renderers.cpp) and a decode point:
// b64 h32/8 s1x8192, 2.1485 GB in 520 us = 4.13 TB/s, 91.4% of the 4.52 TB/s ceiling, 33.6 MB per
// generated token.
Results mixed_results() {
  Results res;
  res.context.backend = BackendKind::cuda;
  res.context.device.name = "Test GPU";
  res.context.ceilings.peak_bw_bytes_per_s = 4.52e12;
  res.context.ceilings.peak_flops_per_s["bf16"] = 8e14;
  res.context.ceilings.launch_latency_us = 1.62;
  res.context.ceilings.source = "measured";
  Record p;
  p.shape = Shape{4, 16, 16, 2048, 2048, 128, false, DType::bf16};
  p.kernel = "fused";
  p.backend = BackendKind::cuda;
  p.cost.flops = 1e11;
  p.cost.min_bytes_read = 1e8;
  p.cost.min_bytes_write = 0.5e8;
  p.latency.p50_us = 300;
  p.latency.p99_us = 310;
  p.latency.rel_stddev = 0.01;
  p.tflops = 1e11 / 300e-6 / 1e12;
  p.launch_overhead_us = 3;
  p.counters.status = CounterStatus::ok;
  p.counters.total[kMetricDramRead] = 1e8;
  p.counters.total[kMetricDramWrite] = 0.5e8;
  p.counters.total[kMetricTensorOpsBf16] = 1e11;
  p.counters.total[kMetricComputeSol] = 70;
  p.counters.total[kMetricMemorySol] = 15;
  p.verification.checked = p.verification.passed = true;
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

}  // namespace

TEST_CASE("terminal: decode points show KV TB/s, % HBM and MB/token where prefill shows TFLOP/s") {
  const auto lines = lines_of(render(mixed_results(), "terminal"));
  REQUIRE(lines.size() >= 5);
  const std::vector<std::string> expected = {
      "point                           kernel  status  p50 us  p99 us  TFLOP/s  % roof  KV TB/s  % HBM  MB/token  verdict        flags",
      "------------------------------  ------  ------  ------  ------  -------  ------  -------  -----  --------  -------------  -----",
      "b4 h16/16 s2048x2048 d128 bf16  fused   ok      300.00  310.00    333.3    41.7        -      -         -  compute-bound",
      "b64 h32/8 s1x8192 d128 bf16     decode  ok      520.00  546.00        -       -     4.13   91.4      33.6  memory-bound",
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

TEST_CASE("markdown: the decode columns, and a decode row's TFLOP/s as '-'") {
  const std::string md = render(mixed_results(), "markdown");
  CHECK_THAT(md, Catch::Contains("| point | kernel | status | p50 us | p99 us | TFLOP/s | % roof | KV TB/s | % HBM | "
                                 "MB/token | verdict | flags |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|---|\n"));
  CHECK_THAT(md, Catch::Contains("| b4 h16/16 s2048x2048 d128 bf16 | fused | ok | 300.00 | 310.00 | 333.3 | 41.7 | - | - "
                                 "| - | compute-bound |  |\n"));
  CHECK_THAT(md, Catch::Contains("| b64 h32/8 s1x8192 d128 bf16 | decode | ok | 520.00 | 546.00 | - | - | 4.13 | 91.4 | "
                                 "33.6 | memory-bound |  |\n"));
  Results prefill = mixed_results();
  prefill.records.pop_back();
  CHECK(render(prefill, "markdown").find("KV TB/s") == std::string::npos);
}

TEST_CASE("CSV: decode metrics in their columns, TFLOP/s kept") {
  const std::string csv = render(mixed_results(), "csv");
  const auto rows = parse_csv(csv);
  REQUIRE(rows.size() == 3);
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < rows[0].size(); ++i)
      if (rows[0][i] == name) return i;
    FAIL("no column " << name);
    return size_t{0};
  };
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
