// The series charts of the HTML report (src/report/html_series.cpp): decode apart from prefill, the x
// axis, panels and variants, a sweep's ties named by their tie, layouts as variants, too many variants
// moved into panels, and which kernels are attnprof's own.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/results.hpp"
#include "core/sweep_spec.hpp"
#include "report/html_series.hpp"
#include "report/view.hpp"

using namespace attnprof;
using namespace attnprof::report::detail;

namespace {

// Every point of `spec` run ok by each of `kernels`, with the spec recorded as a sweep records it.
core::Results swept(const std::string& spec, const std::vector<std::string>& kernels, bool record_spec = true) {
  core::Results res;
  res.context.backend = core::BackendKind::cuda;
  if (record_spec) res.context.sweep = {{"spec", spec}, {"source", "axes"}};
  for (const auto& shape : core::parse_axes(spec).shapes)
    for (const auto& kernel : kernels) {
      core::Record r;
      r.shape = shape;
      r.kernel = kernel;
      r.status = core::Status::ok;
      res.records.push_back(r);
    }
  return res;
}

SeriesLayout layout_of(const core::Results& res) { return series_layout(res, make_rows(res)); }

}  // namespace

TEST_CASE("series: decode points get charts of their own; tokens= and dim= ties make one line") {
  const auto res = swept("tokens=16384;dim=2048;seq=512:2048:x2;hdim=64,128;dtype=bf16 | "
                         "batch=1,16;heads=32;kv_heads=8;seq_q=1;seq_k=1024,8192;hdim=128;dtype=bf16",
                         {"fused", "torch:flash"});
  const auto layout = layout_of(res);
  REQUIRE(layout.charts.size() == 2);
  const auto& prefill = layout.charts[0];
  CHECK(prefill.id == "prefill");
  CHECK(prefill.x_field == "seq_q");
  CHECK(prefill.panels == std::vector<std::string>{"bf16 \u00b7 hdim 64 \u00b7 not causal",
                                                   "bf16 \u00b7 hdim 128 \u00b7 not causal"});
  // batch (16384 / seq) and heads (2048 / hdim) follow their ties: one line per kernel.
  CHECK(prefill.variants == std::vector<std::string>{""});
  const auto& decode = layout.charts[1];
  CHECK(decode.id == "decode");
  CHECK(decode.x_field == "seq_k");
  CHECK(decode.x_title == "keys per sequence");
  CHECK(decode.variants == std::vector<std::string>{"b1", "b16"});
  CHECK(decode.variant_title == "batch");
  REQUIRE(layout.places.size() == res.records.size());
  for (size_t i = 0; i < res.records.size(); ++i) {
    INFO(res.records[i].shape.label());
    CHECK(layout.places[i].chart == (res.records[i].shape.seq_q == 1 ? 1 : 0));
  }
}

TEST_CASE("series: two ties of one field are two variants, named by the tie") {
  const auto res = swept("tokens=16384;heads=16;seq=1024,2048;hdim=256 | tokens=4096;heads=16;seq=1024,2048;hdim=256",
                         {"fused"});
  const auto layout = layout_of(res);
  REQUIRE(layout.charts.size() == 1);
  CHECK(layout.charts[0].variants == std::vector<std::string>{"tokens 16384", "tokens 4096"});
  CHECK(layout.charts[0].variant_title == "batch");
}

TEST_CASE("series: without a recorded spec, a field is a variant where it differs at one x") {
  // batch follows seq (no tie known): one line; batch=1,4 at each seq: two.
  auto lockstep = swept("batch=4;heads=8;seq=1024 | batch=2;heads=8;seq=2048", {"fused"}, false);
  CHECK(layout_of(lockstep).charts.at(0).variants == std::vector<std::string>{""});
  auto crossed = swept("batch=1,4;heads=8;seq=1024,2048", {"fused"}, false);
  CHECK(layout_of(crossed).charts.at(0).variants == std::vector<std::string>{"b1", "b4"});
}

TEST_CASE("series: KV layouts and windows are variants") {
  const auto paged = layout_of(swept("batch=16;heads=32;kv_heads=8;seq_q=1;seq_k=1024,8192;page_size=0,64", {"decode"}));
  REQUIRE(paged.charts.size() == 1);
  CHECK(paged.charts[0].id == "decode");
  CHECK(paged.charts[0].variants == std::vector<std::string>{"contiguous", "pages of 64"});
  CHECK(paged.charts[0].variant_title == "KV layout");
  const auto windows = layout_of(swept("batch=1;heads=32;kv_heads=8;seq=8192,32768;window=0,1024;causal=1", {"fused"}));
  CHECK(windows.charts.at(0).variants == std::vector<std::string>{"no window", "window 1024"});
}

TEST_CASE("series: more variants than dash patterns move the first variant field into the panels") {
  const auto res = swept("batch=1,2,3,4,5,6,7,8,9;heads=32,64;kv_heads=8;seq_q=1;seq_k=1024,8192", {"decode"});
  const auto layout = layout_of(res);
  REQUIRE(layout.charts.size() == 1);
  const auto& chart = layout.charts[0];
  CHECK(chart.variants == std::vector<std::string>{"h32/8", "h64/8"});
  CHECK(chart.variants.size() <= kMaxSeriesVariants);
  REQUIRE(chart.panels.size() == 9);
  CHECK(chart.panels[0] == "bf16 \u00b7 hdim 64 \u00b7 not causal \u00b7 b1");
}

TEST_CASE("series: points that did not run ok are not drawn") {
  auto res = swept("batch=1;heads=8;seq=1024,2048", {"fused"});
  res.records[1].status = core::Status::unsupported;
  const auto layout = layout_of(res);
  CHECK(layout.places[0].chart == 0);
  CHECK(layout.places[1].chart == -1);
  CHECK(layout_of(core::Results{}).charts.empty());
}

TEST_CASE("series: attnprof's own kernels are neither a plugin's nor the Python bridge's") {
  core::Context ctx;
  ctx.plugins = nlohmann::json::array({{{"name", "mine"}, {"kernels", {"my-attention"}}}});
  CHECK(own_kernel(ctx, "fused"));
  CHECK(own_kernel(ctx, "fused-sm90"));
  CHECK(own_kernel(ctx, "decode"));
  CHECK_FALSE(own_kernel(ctx, "torch:flash"));
  CHECK_FALSE(own_kernel(ctx, "py:mod:fn"));
  CHECK_FALSE(own_kernel(ctx, "my-attention"));
}

TEST_CASE("series: passes on panels of their own where a backward point is among them; forward alone unchanged") {
  const auto res = swept("pass=fwd,bwd,fwd_bwd;tokens=16384;dim=2048;seq=512:2048:x2;hdim=64;dtype=bf16",
                         {"fused", "reference"});
  const auto layout = layout_of(res);
  REQUIRE(layout.charts.size() == 1);
  CHECK(layout.charts[0].panels == std::vector<std::string>{"bf16 \u00b7 hdim 64 \u00b7 not causal \u00b7 fwd",
                                                            "bf16 \u00b7 hdim 64 \u00b7 not causal \u00b7 bwd",
                                                            "bf16 \u00b7 hdim 64 \u00b7 not causal \u00b7 fwd_bwd"});
  CHECK(layout.charts[0].variants == std::vector<std::string>{""});  // one line per kernel in each panel
  const auto fwd = layout_of(swept("tokens=16384;dim=2048;seq=512:2048:x2;hdim=64;dtype=bf16", {"fused"}));
  CHECK(fwd.charts.at(0).panels == std::vector<std::string>{"bf16 \u00b7 hdim 64 \u00b7 not causal"});
}
