// The Markdown summary (src/report/markdown.cpp): context, table, comparison, failures; a '|' in the
// data; decode points' columns; fp8 prefill beside its bf16 twin.
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
#include "core/escape.hpp"
#include "core/results.hpp"
#include "render_helpers.hpp"
#include "report/report.hpp"

using namespace attnprof;
using namespace attnprof::core;
using nlohmann::json;
using namespace attnprof::report_test;

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
    CHECK(lines[at + 2 + i].starts_with("| " + res.records[i].shape.label() + " |"));
    CHECK(count(lines[at + 2 + i], " | ") == 8);  // 9 cells: no cell was split
  }
  CHECK(lines[at + 2] ==
        "| b4 h16/16 s8192x8192 d128 bf16 | reference | ok | 17250.00 | 17776.00 (n=60: max) | 127.5 | 78.7 | "
        "memory-bound (DRAM) | excess-traffic |");
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

TEST_CASE("markdown: the decode columns, and a decode row's TFLOP/s as '-'") {
  const std::string md = render(mixed_results(), "markdown");
  CHECK_THAT(md, Catch::Contains("| point | kernel | status | p50 us | p99 us | TFLOP/s | % roof | KV TB/s | % HBM | "
                                 "MB/token | verdict | flags |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|---|\n"));
  CHECK_THAT(md, Catch::Contains("| b4 h16/16 s2048x2048 d128 bf16 | fused | ok | 300.00 | 310.00 | 333.3 | 41.7 | - | - "
                                 "| - | compute-bound |  |\n"));
  CHECK_THAT(md, Catch::Contains("| b64 h32/8 s1x8192 d128 bf16 | decode | ok | 520.00 | 546.00 | - | - | 4.13 | 91.4 | "
                                 "33.6 | memory-bound (DRAM) |  |\n"));
  Results prefill = mixed_results();
  prefill.records.pop_back();
  CHECK(render(prefill, "markdown").find("KV TB/s") == std::string::npos);
}

TEST_CASE("markdown: a packed batch's table of its cost beside the padded batch's") {
  CHECK_THAT(render(small_results(), "markdown"), !Catch::Contains("Packed batches"));
  const Results res = packed_results();
  const std::string md = render(res, "markdown");
  CHECK_THAT(md, Catch::Contains("### Packed batches"));
  // Causal off: 16 heads x 128 x 4 x (1024^2 + 2048^2 + 512^2) against 3 x 2048^2 padded.
  const double flops = 4.0 * 16 * 128 * (1024.0 * 1024 + 2048.0 * 2048 + 512.0 * 512);
  const double padded = 4.0 * 16 * 128 * 3 * 2048.0 * 2048;
  CHECK(res.records[0].cost.flops == flops);
  CHECK(res.records[0].cost.padded_flops == padded);
  CHECK_THAT(md, Catch::Contains(fmt::format("| {} | fused | 3584 | {:.3f} | {:.3f} | {:.1f}% |", res.records[0].shape.label(),
                                             flops / 1e9, padded / 1e9, (padded / flops - 1) * 100)));
}

TEST_CASE("markdown: fp8 prefill points beside their bf16 twins, apart from the quantized KV caches") {
  CHECK_THAT(render(small_results(), "markdown"), !Catch::Contains("fp8 prefill"));
  Results res = small_results();
  Record twin = res.records[0];  // ok, bf16
  Record fp8 = twin;
  fp8.shape.dtype = DType::fp8_e4m3;
  imply_fp8_kv_format(fp8.shape);
  fp8.latency.p50_us = twin.latency.p50_us / 2;
  fp8.verification.checked = true;
  fp8.verification.passed = true;
  fp8.verification.o_max_abs_err = 2.5e-3;
  fp8.verification.tolerance = 4.0e-2;
  fp8.verification.o_max_bound_ratio = 0.125;
  fp8.verification.quant = {true, 3.0e-2, 4.0e-3, 6.0e-2};
  res.records.push_back(fp8);
  const std::string md = render(res, "markdown");
  CHECK_THAT(md, Catch::Contains("### fp8 prefill"));
  CHECK_THAT(md, !Catch::Contains("### Quantized KV cache"));
  CHECK_THAT(md, Catch::Contains(fmt::format("| {} | {} | {:.2f} | {:.2f} | 2.00x | 3.00e-02 | 6.00e-02 | 2.50e-03 (4.00e-02) | "
                                             "0.125 |",
                                             escape::markdown(fp8.shape.label()), fp8.kernel, fp8.latency.p50_us,
                                             twin.latency.p50_us)));
  CHECK_THAT(md, Catch::Contains("fp8\\_e4m3 |"));  // the label escaped: Markdown reads _ as emphasis
}
