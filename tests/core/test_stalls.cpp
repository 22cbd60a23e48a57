// core/stalls.cpp: CUPTI's stall reason names shortened, raw per-PC samples folded into per-kernel
// mixes with their hot instructions and source lines, the dominant stall, cycles per issue; and a
// record's stalls through the results JSON (written only where sampled).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/results.hpp"
#include "core/stalls.hpp"

using namespace attnprof;
using core::PcSample;

namespace {

PcSample pc(std::string function, uint64_t offset, std::map<std::string, int64_t> reasons, std::string file = "",
            int64_t line = 0) {
  PcSample s;
  s.function = std::move(function);
  s.pc_offset = offset;
  s.reasons = std::move(reasons);
  s.file = std::move(file);
  s.line = line;
  return s;
}

}  // namespace

TEST_CASE("stall_reason_name: the counter prefix dropped, the _not_issued subsets and the counts left out") {
  CHECK(core::stall_reason_name("smsp__pcsamp_warps_issue_stalled_long_scoreboard") == "long_scoreboard");
  CHECK(core::stall_reason_name("smsp__pcsamp_warps_issue_stalled_selected") == "selected");
  CHECK_FALSE(core::stall_reason_name("smsp__pcsamp_warps_issue_stalled_barrier_not_issued").has_value());
  CHECK_FALSE(core::stall_reason_name("smsp__pcsamp_sample_count").has_value());  // counts, not states
  CHECK_FALSE(core::stall_reason_name("smsp__pcsamp_samples_data_dropped").has_value());
}

TEST_CASE("aggregate_stalls: per function, most sampled first, hot instructions and lines summed") {
  const std::vector<PcSample> raw = {
      pc("attention", 0x100, {{"long_scoreboard", 60}, {"selected", 10}}, "/src/k.cu", 212),
      pc("attention", 0x110, {{"long_scoreboard", 20}, {"wait", 5}}, "/src/k.cu", 212),
      pc("attention", 0x200, {{"math_pipe_throttle", 30}, {"selected", 15}}, "/src/k.cu", 240),
      pc("combine", 0x40, {{"selected", 4}, {"barrier", 6}}),
      pc("empty", 0x0, {}),  // no samples: no kernel
  };
  const auto kernels = core::aggregate_stalls(raw, 2, 5);
  REQUIRE(kernels.size() == 2);
  const core::KernelStalls& a = kernels[0];
  CHECK(a.kernel == "attention");
  CHECK(a.samples == 140);
  CHECK(a.reasons.at("long_scoreboard") == 80);
  CHECK(a.reasons.at("selected") == 25);
  REQUIRE(a.instructions.size() == 2);  // the top 2 of 3
  CHECK(a.instructions[0].pc_offset == 0x100);
  CHECK(a.instructions[0].samples == 70);
  CHECK(a.instructions[1].pc_offset == 0x200);
  REQUIRE(a.lines.size() == 2);
  CHECK(a.lines[0].line == 212);  // two instructions of one line, summed
  CHECK(a.lines[0].samples == 95);
  CHECK(a.lines[0].reasons.at("long_scoreboard") == 80);
  CHECK(a.lines[1].line == 240);
  CHECK(core::dominant_stall(a.reasons) == "long_scoreboard");
  CHECK(core::cycles_per_issue(a) == Approx(140.0 / 25));
  CHECK(core::stall_share(a.reasons, a.samples, "long_scoreboard") == Approx(80.0 / 140));
  CHECK(core::stall_share(a.reasons, a.samples, "gmma") == 0);

  const core::KernelStalls& c = kernels[1];
  CHECK(c.kernel == "combine");
  CHECK(c.lines.empty());  // no line info
  CHECK(core::dominant_stall(c.reasons) == "barrier");
}

TEST_CASE("dominant_stall and cycles_per_issue: issuing is not a stall; nothing issued reads 0") {
  core::KernelStalls k;
  k.samples = 10;
  k.reasons = {{"selected", 10}};
  CHECK(core::dominant_stall(k.reasons).empty());
  CHECK(core::cycles_per_issue(k) == Approx(1.0));
  k.reasons = {{"barrier", 10}};
  CHECK(core::cycles_per_issue(k) == 0);
  CHECK(core::stall_share(k.reasons, 0, "barrier") == 0);
}

TEST_CASE("a record's stalls round-trip through JSON; absent where not sampled; negative counts refused") {
  core::Record r;
  r.kernel = "fused";
  nlohmann::json j = r;
  CHECK_FALSE(j.contains("stalls"));
  CHECK_FALSE(j.get<core::Record>().stalls.has_value());

  core::Stalls s;
  s.calls = 3;
  s.period_log2 = 9;
  s.samples = 140;
  s.profiling_ms = 12.5;
  s.per_kernel = core::aggregate_stalls({pc("attention", 0x100, {{"long_scoreboard", 60}}, "/src/k.cu", 212)});
  r.stalls = s;
  j = r;
  const core::Record back = j.get<core::Record>();
  REQUIRE(back.stalls.has_value());
  CHECK(back.stalls->status == core::SamplingStatus::ok);
  CHECK(back.stalls->calls == 3);
  CHECK(back.stalls->period_log2 == 9);
  REQUIRE(back.stalls->per_kernel.size() == 1);
  CHECK(back.stalls->per_kernel[0].lines[0].file == "/src/k.cu");
  CHECK(back.stalls->per_kernel[0].instructions[0].pc_offset == 0x100);

  j["stalls"]["status"] = "unsupported";
  CHECK(j.get<core::Record>().stalls->status == core::SamplingStatus::unsupported);
  j["stalls"]["status"] = "sampled";
  CHECK_THROWS_AS(j.get<core::Record>(), InputError);
  j["stalls"]["status"] = "ok";
  j["stalls"]["per_kernel"][0]["reasons"]["long_scoreboard"] = -1;
  CHECK_THROWS_AS(j.get<core::Record>(), InputError);
}

TEST_CASE("short_kernel_name: the function's own name, without scope, template or parameters") {
  CHECK(core::short_kernel_name("void attnprof::kernels::fused_sm90::fused_sm90_kernel<__nv_bfloat16, 128>(Params)") ==
        "fused_sm90_kernel");
  CHECK(core::short_kernel_name("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128") ==
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128");
  CHECK(core::short_kernel_name("(anonymous namespace)::chase(unsigned int const*, unsigned int*)") == "chase");
  CHECK(core::short_kernel_name("void f<(int)3>(A<B>::C)") == "f");
}
