// report/why: `attnprof why`'s text and JSON. Golden on the H200 fixture (torch:cudnn -> fused-sm90,
// reports/h200-stalls/results.json), and the lines a reader relies on: the shown terms and the rest add
// up to the gap, --top cuts, the missing data is said.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "core/why.hpp"
#include "report/golden.hpp"
#include "report/why.hpp"

using namespace attnprof;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

const fs::path kSource = fs::path(ATTNPROF_SOURCE_DIR);

core::WhyReport cudnn_vs_sm90(const core::Results& res, std::string_view shape = {}) {
  core::WhyReport r = core::why(core::why_side("torch:cudnn", "torch:cudnn", {&res}, {"results.json"}),
                                core::why_side("fused-sm90", "fused-sm90", {&res}, {"results.json"}), shape);
  r.files = {"reports/h200-stalls/results.json"};
  return r;
}

}  // namespace

TEST_CASE("golden: why torch:cudnn fused-sm90 on the H200 fixture, text and JSON", "[golden]") {
  const core::Results res = core::read_results((kSource / "reports/h200-stalls/results.json").string());
  const core::WhyReport r = cudnn_vs_sm90(res);
  golden::check(kSource / "tests/report/golden/why_h200_cudnn_fused_sm90.terminal", report::render_why(r, 6));
  const core::WhyReport one = cudnn_vs_sm90(res, "s16384x16384 d128 bf16");
  golden::check(kSource / "tests/report/golden/why_h200_cudnn_fused_sm90_16k.json", report::render_why_json(one));
}

TEST_CASE("why text: the terms shown and the rest add up to the gap", "[why]") {
  const core::Results res = core::read_results((kSource / "reports/h200-stalls/results.json").string());
  const core::WhyReport r = cudnn_vs_sm90(res, "s16384x16384 d128 bf16");
  for (size_t top : {1, 3, 20}) {
    const std::string text = report::render_why(r, top);
    INFO(text);
    // Every term line and the rest line end in "<signed us> us <signed pct>%".
    const std::regex term(R"(([+-][0-9.]+) us +[+-][0-9.]+%\n)");
    double sum = 0;
    int lines = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), term), end; it != end; ++it, ++lines) sum += std::stod((*it)[1]);
    CHECK(sum == Approx(r.points[0].gap_us).margin(0.05 * lines));
    CHECK(lines == static_cast<int>(std::min(top, r.points[0].terms.size()) + (top < r.points[0].terms.size() ? 1 : 0)));
  }
  const std::string top1 = report::render_why(r, 1);
  CHECK_THAT(top1, Contains("    wait "));
  CHECK_THAT(top1, Contains("in fused-sm90: device_math.cuh:28"));
  CHECK_THAT(top1, Contains("other states"));
}

TEST_CASE("why text: without warp states, what is missing and which flag collects it", "[why]") {
  const core::Results res = core::read_results((kSource / "tests/report/fixtures/cpu_results.json").string());
  const core::WhyReport r = core::why(core::why_side("reference", "reference", {&res}, {"cpu.json"}),
                                      core::why_side("fused", "fused", {&res}, {"cpu.json"}));
  const std::string text = report::render_why(r, 6);
  // Lines every shape has are said once, above the shapes.
  CHECK_THAT(text, Contains("missing at every shape: reference and fused: no warp states: warp-state sampling needs an "
                            "NVIDIA GPU"));
  CHECK_THAT(text, Contains("missing at every shape: reference and fused: counters unavailable: CPU backend: no "
                            "hardware counters"));
  CHECK_THAT(text, !Contains("  missing: "));
  CHECK_THAT(text, !Contains("warp states, share of samples"));
  CHECK_THAT(text, !Contains("sum to the gap"));
}

TEST_CASE("why JSON: the report's to_json, indented", "[why]") {
  const core::Results res = core::read_results((kSource / "reports/h200-stalls/results.json").string());
  const core::WhyReport r = cudnn_vs_sm90(res, "causal");
  const nlohmann::json j = nlohmann::json::parse(report::render_why_json(r));
  CHECK(j == nlohmann::json(r));
  CHECK(j.at("points").size() == 3);
}
