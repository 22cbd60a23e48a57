// core/why: the gap between two kernels decomposed. Synthetic records with known answers (terms that sum
// to the gap, their order, the spots that hold them, the fallbacks without warp states or counters, two
// builds of one kernel, the errors), then the H200 fixture reports/h200-stalls/results.json.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "core/results.hpp"
#include "core/why.hpp"
#include "diagnosis_support.hpp"

using namespace attnprof;
using namespace attnprof::core;
using Catch::Matchers::Contains;

namespace {

// A kernel's warp samples: one function, its states, and its hot spots.
KernelStalls kernel_samples(std::string name, std::map<std::string, int64_t> states, std::vector<HotSpot> lines = {},
                            std::vector<HotSpot> instructions = {}) {
  KernelStalls k;
  k.kernel = std::move(name);
  k.reasons = std::move(states);
  for (const auto& [state, n] : k.reasons) k.samples += n;
  k.lines = std::move(lines);
  k.instructions = std::move(instructions);
  return k;
}

HotSpot line_spot(std::string file, int64_t line, std::map<std::string, int64_t> states) {
  HotSpot h;
  h.file = std::move(file);
  h.line = line;
  h.reasons = std::move(states);
  for (const auto& [state, n] : h.reasons) h.samples += n;
  return h;
}

HotSpot sass_spot(uint64_t pc, std::map<std::string, int64_t> states) {
  HotSpot h;
  h.pc_offset = pc;
  h.reasons = std::move(states);
  for (const auto& [state, n] : h.reasons) h.samples += n;
  return h;
}

Launch launch(std::string name, double duration_us) {
  Launch l;
  l.name = std::move(name);
  l.duration_us = duration_us;
  return l;
}

Record sampled(std::string kernel, double p50_us, std::vector<KernelStalls> kernels) {
  Record r = test::counted_record();
  r.kernel = std::move(kernel);
  r.latency.p50_us = p50_us;
  r.latency.p50_ci_low_us = p50_us * 0.995;
  r.latency.p50_ci_high_us = p50_us * 1.005;
  r.latency.p99_us = p50_us * 1.02;
  Stalls s;
  s.calls = 4;
  s.per_kernel = std::move(kernels);
  for (const auto& k : s.per_kernel) s.samples += k.samples;
  r.stalls = std::move(s);
  return r;
}

const StallTerm& term(const WhyPoint& p, std::string_view state) {
  for (const StallTerm& t : p.terms)
    if (t.state == state) return t;
  FAIL("no term " << state);
  return p.terms.front();
}

const WhyEvidence* evidence(const WhyPoint& p, std::string_view what) {
  for (const WhyEvidence& e : p.evidence)
    if (e.what == what) return &e;
  return nullptr;
}

bool mentions(const WhyPoint& p, std::string_view text) {
  for (const auto& m : p.missing)
    if (m.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("why: each warp state's share of samples x P50, candidate - baseline; the terms sum to the gap") {
  const Context ctx = test::gpu_context();
  // Baseline 100 us: half issuing, half waiting. Candidate 150 us: a third issuing, two thirds waiting.
  const Record b = sampled("base", 100, {kernel_samples("void ns::base_kernel<1>(P)", {{"selected", 500}, {"wait", 500}})});
  const Record c = sampled("cand", 150, {kernel_samples("void ns::cand_kernel<1>(P)", {{"selected", 400}, {"wait", 800},
                                                                                       {"barrier", 0}})});
  const WhyPoint p = why_point({&b, &ctx}, {&c, &ctx}, "base", "cand");
  CHECK(p.method == WhyMethod::warp_states);
  CHECK(p.gap_us == Approx(50));
  CHECK(p.gap_pct == Approx(50));
  CHECK(p.speed_ratio == Approx(100.0 / 150));
  REQUIRE(p.terms.size() == 3);
  // wait: 50 us -> 100 us; issuing: 50 us -> 50 us; barrier: 0 both.
  CHECK(p.terms[0].state == "wait");
  CHECK(p.terms[0].baseline_share == Approx(0.5));
  CHECK(p.terms[0].candidate_share == Approx(800.0 / 1200));
  CHECK(p.terms[0].baseline_us == Approx(50));
  CHECK(p.terms[0].candidate_us == Approx(100));
  CHECK(p.terms[0].delta_us == Approx(50));
  CHECK(p.terms[0].delta_pct == Approx(50));
  CHECK(term(p, "selected").delta_us == Approx(0).margin(1e-9));
  CHECK(p.terms_sum_us() == Approx(p.gap_us));
  CHECK(p.baseline_samples == 1000);
  CHECK(p.candidate_samples == 1200);
  CHECK(p.baseline_sampled == std::vector<std::string>{"base_kernel"});
  CHECK(p.missing.empty());
  CHECK_FALSE(p.gap_within_noise);
}

TEST_CASE("why: terms are ordered by |delta|, a faster candidate's terms are negative, and they still sum") {
  const Context ctx = test::gpu_context();
  const Record b = sampled("a", 200, {kernel_samples("a", {{"selected", 300}, {"long_scoreboard", 500}, {"barrier", 200}})});
  const Record c = sampled("b", 120, {kernel_samples("b", {{"selected", 300}, {"long_scoreboard", 100}, {"barrier", 400},
                                                           {"mio_throttle", 200}})});
  const WhyPoint p = why_point({&b, &ctx}, {&c, &ctx}, "a", "b");
  CHECK(p.gap_us == Approx(-80));
  // long_scoreboard 100 -> 12 us (-88); barrier 40 -> 48 (+8); selected 60 -> 36 (-24); mio 0 -> 24 (+24).
  REQUIRE(p.terms.size() == 4);
  CHECK(p.terms[0].state == "long_scoreboard");
  CHECK(p.terms[0].delta_us == Approx(-88));
  CHECK(std::abs(p.terms[1].delta_us) == Approx(24));
  CHECK(std::abs(p.terms[2].delta_us) == Approx(24));
  CHECK(p.terms[3].state == "barrier");
  CHECK(p.terms[3].delta_us == Approx(8));
  for (size_t i = 1; i < p.terms.size(); ++i) CHECK(std::abs(p.terms[i - 1].delta_us) >= std::abs(p.terms[i].delta_us));
  CHECK(p.terms_sum_us() == Approx(p.gap_us));
  CHECK(p.speed_ratio == Approx(200.0 / 120));
}

TEST_CASE("why: samples of every kernel of a call are pooled, and a multi-kernel call's time is split") {
  const Context ctx = test::gpu_context();
  Record b = sampled("split", 100, {kernel_samples("void split_kernel(P)", {{"selected", 600}, {"long_scoreboard", 200}}),
                                    kernel_samples("void combine_kernel(P)", {{"selected", 100}, {"wait", 100}})});
  b.launches = {launch("void split_kernel(P)", 90), launch("void combine_kernel(P)", 10)};
  Record c = sampled("one", 110, {kernel_samples("void one_kernel(P)", {{"selected", 700}, {"long_scoreboard", 300}})});
  c.launches = {launch("void one_kernel(P)", 108)};
  const WhyPoint p = why_point({&b, &ctx}, {&c, &ctx}, "split", "one");
  CHECK(p.baseline_samples == 1000);
  CHECK(term(p, "wait").baseline_us == Approx(10));
  CHECK(term(p, "wait").candidate_us == Approx(0));
  CHECK(p.terms_sum_us() == Approx(10));
  REQUIRE(p.baseline_kernels.size() == 2);
  CHECK(p.baseline_kernels[0].kernel == "split_kernel");
  CHECK(p.baseline_kernels[0].share == Approx(0.9));
  CHECK(p.baseline_kernels[1].us == Approx(10));
  REQUIRE(p.candidate_kernels.size() == 1);
  CHECK(p.candidate_kernels[0].kernel == "one_kernel");
  const WhyEvidence* launches = evidence(p, "kernel launches per call");
  REQUIRE(launches);
  CHECK(launches->baseline == 2);
  CHECK(launches->candidate == 1);
}

TEST_CASE("why: two builds of one kernel, '+8% from long_scoreboard at line 212'") {
  Results base, cand;
  base.context = cand.context = test::gpu_context();
  const std::string fn = "void attnprof::kernels::fused::fused_attention_kernel<bf16, 128>(Params)";
  // 100 us at 100 samples: each sample is 1 us. The new build adds 8 long_scoreboard samples, 8 more at
  // line 212 (the K/V load), and runs 108 us.
  base.records.push_back(sampled("fused", 100, {kernel_samples(fn, {{"selected", 40}, {"wait", 40}, {"long_scoreboard", 20}},
                                                               {line_spot("/src/kernels/fused/fused_kernel.cuh", 212,
                                                                          {{"long_scoreboard", 17}, {"selected", 1}}),
                                                                line_spot("/src/kernels/common/device_math.cuh", 28,
                                                                          {{"wait", 30}, {"selected", 5}})})}));
  cand.records.push_back(sampled("fused", 108, {kernel_samples(fn, {{"selected", 40}, {"wait", 40}, {"long_scoreboard", 28}},
                                                               {line_spot("/src/kernels/fused/fused_kernel.cuh", 212,
                                                                          {{"long_scoreboard", 25}, {"selected", 1}}),
                                                                line_spot("/src/kernels/common/device_math.cuh", 28,
                                                                          {{"wait", 30}, {"selected", 5}})})}));
  const WhySide b = why_side("base.json:fused", "fused", {&base}, {"base.json"});
  const WhySide c = why_side("new.json:fused", "fused", {&cand}, {"new.json"});
  const WhyReport r = why(b, c);
  CHECK(r.baseline == "base.json:fused");
  CHECK(r.candidate == "new.json:fused");
  REQUIRE(r.points.size() == 1);
  const WhyPoint& p = r.points[0];
  CHECK(p.gap_pct == Approx(8));
  REQUIRE_FALSE(p.terms.empty());
  const StallTerm& top = p.terms.front();
  CHECK(top.state == "long_scoreboard");
  CHECK(top.delta_us == Approx(8));
  CHECK(top.delta_pct == Approx(8));
  CHECK(term(p, "selected").delta_us == Approx(0).margin(1e-9));
  CHECK(term(p, "wait").delta_us == Approx(0).margin(1e-9));
  REQUIRE(top.candidate_spots.size() == 1);
  const WhySpot& spot = top.candidate_spots.front();
  CHECK(spot.file == "fused_kernel.cuh");
  CHECK(spot.line == 212);
  CHECK(spot.us == Approx(25));
  CHECK(spot.share_of_state == Approx(25.0 / 28));
  REQUIRE(spot.other_us);
  CHECK(*spot.other_us == Approx(17));
  CHECK(top.baseline_spots.front().line == 212);
}

TEST_CASE("why: a kernel without line info is named by its SASS offsets, matched by function and offset") {
  const Context ctx = test::gpu_context();
  const Record b = sampled("vendor", 100, {kernel_samples("cudnn_kernel0", {{"selected", 50}, {"barrier", 50}}, {},
                                                          {sass_spot(0x2e70, {{"barrier", 30}}), sass_spot(0xec0, {{"barrier", 20}})})});
  const Record c = sampled("ours", 100, {kernel_samples("void ours<1>(P)", {{"selected", 90}, {"barrier", 10}},
                                                        {line_spot("/k/sm90_ptx.cuh", 125, {{"barrier", 10}})})});
  const WhyPoint p = why_point({&b, &ctx}, {&c, &ctx}, "vendor", "ours");
  const StallTerm& barrier = term(p, "barrier");
  CHECK(barrier.delta_us == Approx(-40));
  REQUIRE(barrier.baseline_spots.size() == 2);
  CHECK(barrier.baseline_spots[0].line == 0);
  CHECK(barrier.baseline_spots[0].pc_offset == 0x2e70);
  CHECK(barrier.baseline_spots[0].kernel == "cudnn_kernel0");
  CHECK(barrier.baseline_spots[0].us == Approx(30));
  CHECK_FALSE(barrier.baseline_spots[0].other_us);  // not a place of the other kernel
  CHECK(barrier.candidate_spots.front().file == "sm90_ptx.cuh");
}

TEST_CASE("why: without warp states the counters' evidence stands alone, and says which flag samples them") {
  const Context ctx = test::gpu_context();
  Record b = test::counted_record();
  Record c = test::counted_record();
  c.latency.p50_us = 360;
  c.counters.total[kMetricTensorPipeActive] = 15;
  c.counters.total[kMetricL2Bytes] = 3.2e8;
  const WhyPoint p = why_point({&b, &ctx}, {&c, &ctx}, "b", "c");
  CHECK(p.method == WhyMethod::counters);
  CHECK(p.terms.empty());
  CHECK(p.gap_us == Approx(60));
  // One line for both sides, lacking the same for the same reason.
  CHECK(mentions(p, "b and c: no warp states: the sweep ran without --stalls"));
  CHECK(p.missing.size() == 1);
  const WhyEvidence* tensor = evidence(p, "tensor pipe busy");
  REQUIRE(tensor);
  CHECK(tensor->baseline == 20);
  CHECK(tensor->candidate == 15);
  CHECK(tensor->difference == Approx(0.25));
  const WhyEvidence* l2 = evidence(p, "L2 bytes / minimum");
  REQUIRE(l2);
  CHECK(l2->baseline == Approx(1.6e8 / 1.5e8));
  CHECK(l2->candidate == Approx(3.2e8 / 1.5e8));
  // L2 bytes differ by half, the tensor pipe by a quarter: L2 comes first; unchanged lines are "same".
  CHECK(p.evidence.front().what == "L2 bytes / minimum");
  for (size_t i = 1; i < p.evidence.size(); ++i) CHECK(p.evidence[i - 1].difference >= p.evidence[i].difference);
  const WhyEvidence* dram = evidence(p, "DRAM bytes / minimum");
  REQUIRE(dram);
  CHECK(dram->same());
  CHECK(dram->baseline == Approx(1));
}

TEST_CASE("why: the instruction mix of both sides, per 1k FLOP, all and per class issued") {
  const Context ctx = test::gpu_context();
  Record b = test::counted_record();  // 1e11 FLOPs on both sides
  Record c = test::counted_record();
  c.latency.p50_us = 360;
  test::with_instruction_mix(b, 1e9);
  test::with_instruction_mix(c, 1.5e9);
  c.counters.total[kMetricInstPipeXu] = 0.15e9;  // the candidate issues 3x the transcendentals
  const WhyPoint p = why_point({&b, &ctx}, {&c, &ctx}, "b", "c");
  const WhyEvidence* all = evidence(p, "warp instructions / 1k FLOP");
  REQUIRE(all);
  CHECK(all->baseline == Approx(10));  // 1e9 / 1e8 kFLOP
  CHECK(all->candidate == Approx(15));
  CHECK(all->source == "counters, cost model");
  const WhyEvidence* xu = evidence(p, "transcendental inst. / 1k FLOP");
  REQUIRE(xu);
  CHECK(xu->baseline == Approx(0.5));
  CHECK(xu->candidate == Approx(1.5));
  CHECK(xu->baseline_note == "5.0% of its warp instructions");
  CHECK(xu->candidate_note == "10.0% of its warp instructions");
  const WhyEvidence* fma = evidence(p, "FMA inst. / 1k FLOP");
  REQUIRE(fma);
  CHECK(fma->candidate == Approx(4.5));
  CHECK(evidence(p, "branch/barrier inst. / 1k FLOP"));  // CBU + ADU
  // Classes neither side issued (TMA, FP64) are left out.
  CHECK_FALSE(evidence(p, "TMA inst. / 1k FLOP"));
  CHECK_FALSE(evidence(p, "FP64 inst. / 1k FLOP"));
  // Only one side counted: no mix rows at all.
  Record plain = test::counted_record();
  const WhyPoint one = why_point({&plain, &ctx}, {&c, &ctx}, "b", "c");
  CHECK_FALSE(evidence(one, "warp instructions / 1k FLOP"));
  CHECK_FALSE(evidence(one, "FMA inst. / 1k FLOP"));
}

TEST_CASE("why: without counters or warp states, the time gap alone and what is missing") {
  Results results = read_results(std::string(ATTNPROF_SOURCE_DIR) + "/tests/report/fixtures/cpu_results.json");
  const WhySide ref = why_side("reference", "reference", {&results}, {"cpu_results.json"});
  const WhySide fused = why_side("fused", "fused", {&results}, {"cpu_results.json"});
  const WhyReport r = why(ref, fused);
  REQUIRE(r.points.size() == 5);
  for (const WhyPoint& p : r.points) {
    CHECK(p.method == WhyMethod::time_only);
    CHECK(p.terms.empty());
    CHECK(mentions(p, std::string(kNoWarpStatesReason)));
    CHECK(mentions(p, "reference and fused: counters unavailable: CPU backend"));
    CHECK(p.gap_us == Approx(p.candidate_p50_us - p.baseline_p50_us));
  }
  // The first shape: 4064.811 us -> 500.293 us.
  CHECK(r.points[0].gap_us == Approx(500.293 - 4064.811));
  CHECK(r.points[0].speed_ratio == Approx(4064.811 / 500.293));
}

TEST_CASE("why: a side sampled and the other not gives no terms, and names the side") {
  const Context ctx = test::gpu_context();
  const Record b = sampled("b", 100, {kernel_samples("b", {{"selected", 10}})});
  Record c = test::counted_record();
  c.stalls = Stalls{};
  c.stalls->status = SamplingStatus::unavailable;
  c.stalls->reason = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  const WhyPoint p = why_point({&b, &ctx}, {&c, &ctx}, "b", "c");
  CHECK(p.terms.empty());
  CHECK(p.method == WhyMethod::counters);
  REQUIRE(p.missing.size() == 1);
  CHECK_THAT(p.missing[0], Contains("c: warp states unavailable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));
}

TEST_CASE("why: overlapping medians' intervals are called noise") {
  const Context ctx = test::gpu_context();
  Record b = test::counted_record(), c = test::counted_record();
  b.latency.p50_ci_low_us = 295;
  b.latency.p50_ci_high_us = 305;
  c.latency.p50_us = 302;
  c.latency.p50_ci_low_us = 298;
  c.latency.p50_ci_high_us = 306;
  CHECK(why_point({&b, &ctx}, {&c, &ctx}, "b", "c").gap_within_noise);
  c.latency.p50_ci_low_us = 305.5;
  CHECK_FALSE(why_point({&b, &ctx}, {&c, &ctx}, "b", "c").gap_within_noise);
}

TEST_CASE("why: shapes are matched by label, filtered by --shape, and bad input is one InputError") {
  Results res;
  res.context = test::gpu_context();
  for (int64_t seq : {1024, 4096}) {
    for (const char* k : {"a", "b"}) {
      Record r = sampled(k, seq == 1024 ? 100 : 400, {kernel_samples(k, {{"selected", 10}, {"wait", 10}})});
      r.shape.seq_q = r.shape.seq_k = seq;
      res.records.push_back(r);
    }
  }
  Record failed = res.records.back();
  failed.shape.seq_q = failed.shape.seq_k = 8192;
  failed.status = Status::failed;
  res.records.push_back(failed);
  Record a8192 = res.records.front();
  a8192.shape.seq_q = a8192.shape.seq_k = 8192;
  res.records.push_back(a8192);

  const WhySide a = why_side("a", "a", {&res}, {"r.json"});
  const WhySide b = why_side("b", "b", {&res}, {"r.json"});
  const WhyReport all = why(a, b);
  REQUIRE(all.points.size() == 2);
  CHECK(all.points[0].shape == "b4 h16/16 s1024x1024 d128 bf16");
  REQUIRE(all.skipped.size() == 1);
  CHECK(all.skipped[0].candidate_status == "failed");
  CHECK(why(a, b, "s4096").points.size() == 1);
  CHECK(why(a, b, "b4 h16/16 s1024x1024 d128 bf16").points.size() == 1);
  CHECK(why(a, b, "d128").points.size() == 2);
  CHECK_THROWS_WITH(why(a, b, "s2048"), Contains("--shape 's2048' matches none of the 2 shape(s) both ran ok"));
  CHECK_THROWS_AS(why_side("c", "c", {&res}, {"r.json"}), InputError);
  CHECK_THROWS_WITH(why_side("c", "c", {&res}, {"r.json"}), Contains("no kernel 'c' in r.json: it holds a, b"));
  // One kernel's shape in two files is ambiguous.
  CHECK_THROWS_WITH(why_side("a", "a", {&res, &res}, {"r.json", "s.json"}), Contains("in two results files"));
  // No shape in common; shapes in common but none ok on both.
  Results other = res;
  for (auto& r : other.records) r.shape.hdim = 64;
  const WhySide far = why_side("x:a", "a", {&other}, {"x"});
  CHECK_THROWS_WITH(why(b, far), Contains("no shape is in both"));
  Results broken = res;
  for (auto& r : broken.records) r.status = Status::oom;
  CHECK_THROWS_WITH(why(why_side("a", "a", {&broken}, {"x"}), why_side("b", "b", {&broken}, {"x"})),
                    Contains("ran ok together at none"));
}

TEST_CASE("why: the JSON is versioned and carries every term, with the sum") {
  const Context ctx = test::gpu_context();
  Results res;
  res.context = ctx;
  res.records.push_back(sampled("a", 100, {kernel_samples("a", {{"selected", 50}, {"wait", 50}})}));
  res.records.push_back(sampled("b", 120, {kernel_samples("b", {{"selected", 50}, {"wait", 70}})}));
  const nlohmann::json j = why(why_side("a", "a", {&res}, {"r"}), why_side("b", "b", {&res}, {"r"}));
  CHECK(j.at("schema_version") == std::string(kWhySchemaVersion));
  const auto& p = j.at("points").at(0);
  CHECK(p.at("method") == "warp-states");
  CHECK(p.at("gap_us").get<double>() == Approx(20));
  CHECK(p.at("terms_sum_us").get<double>() == Approx(20));
  CHECK(p.at("terms").size() == 2);
  CHECK(p.at("terms").at(0).at("state") == "wait");
  CHECK(p.at("baseline").at("p50_us").get<double>() == 100);
}

// reports/h200-stalls: fa-bench bf16 hdim 128 on the H200, torch:cudnn against fused-sm90, sampled with
// --stalls. Figures read off the file (docs/why.md quotes the same).
TEST_CASE("why: torch:cudnn -> fused-sm90 on the H200 fixture", "[fixture]") {
  const Results res = read_results(std::string(ATTNPROF_SOURCE_DIR) + "/reports/h200-stalls/results.json");
  const WhySide cudnn = why_side("torch:cudnn", "torch:cudnn", {&res}, {"results.json"});
  const WhySide sm90 = why_side("fused-sm90", "fused-sm90", {&res}, {"results.json"});
  const WhyReport r = why(cudnn, sm90);
  REQUIRE(r.points.size() == 6);
  CHECK(r.skipped.empty());
  for (const WhyPoint& p : r.points) {
    INFO(p.shape);
    CHECK(p.method == WhyMethod::warp_states);
    CHECK(p.gap_us > 0);  // fused-sm90 is the slower at every shape
    CHECK(p.terms_sum_us() == Approx(p.gap_us).epsilon(1e-9));
    CHECK(p.missing.empty());
  }
  const auto at = [&](std::string_view shape) -> const WhyPoint& {
    for (const WhyPoint& p : r.points)
      if (p.shape == shape) return p;
    FAIL("no point " << shape);
    return r.points.front();
  };

  SECTION("seq 16384, no mask: wait, then mio_throttle, offset by cuDNN's dispatch stalls") {
    const WhyPoint& p = at("b1 h16/16 s16384x16384 d128 bf16");
    CHECK(p.baseline_p50_us == Approx(3461.2).margin(0.1));
    CHECK(p.candidate_p50_us == Approx(3824.6).margin(0.1));
    CHECK(p.gap_us == Approx(363.4).margin(0.1));
    CHECK(p.speed_ratio == Approx(0.905).margin(0.001));
    REQUIRE(p.terms.size() >= 3);
    CHECK(p.terms[0].state == "wait");
    CHECK(p.terms[0].delta_us == Approx(559.0).margin(0.1));
    CHECK(p.terms[0].baseline_share == Approx(37942.0 / 210238));
    CHECK(p.terms[1].state == "mio_throttle");
    CHECK(p.terms[1].delta_us == Approx(384.4).margin(0.1));
    CHECK(p.terms[2].state == "dispatch_stall");
    CHECK(p.terms[2].delta_us == Approx(-263.0).margin(0.1));
    // fused-sm90's wait is the softmax's exp2 (device_math.cuh:28); cuDNN's is spread, no instruction
    // holding 5% of it.
    REQUIRE_FALSE(p.terms[0].candidate_spots.empty());
    CHECK(p.terms[0].candidate_spots[0].file == "device_math.cuh");
    CHECK(p.terms[0].candidate_spots[0].line == 28);
    CHECK(p.terms[0].candidate_spots[0].share_of_state == Approx(26585.0 / 68995));
    CHECK(p.terms[0].baseline_spots.empty());
    // cuDNN has no line info: its barrier time is at two SASS offsets.
    const StallTerm& barrier = term(p, "barrier");
    REQUIRE(barrier.baseline_spots.size() >= 2);
    CHECK(barrier.baseline_spots[0].line == 0);
    CHECK(barrier.baseline_spots[0].pc_offset == 11888);
    CHECK(barrier.baseline_spots[0].us == Approx(28471.0 / 210238 * p.baseline_p50_us));
    const WhyEvidence* cpi = evidence(p, "warp cycles per issued instruction");
    REQUIRE(cpi);
    CHECK(cpi->source == "warp samples");
    CHECK(cpi->baseline == Approx(210238.0 / 42652));
    CHECK(cpi->candidate == Approx(222942.0 / 31395));
  }
  SECTION("seq 16384, causal: long_scoreboard at fused-sm90's K/V ring, then wait") {
    const WhyPoint& p = at("b1 h16/16 s16384x16384 d128 causal bf16");
    CHECK(p.gap_us == Approx(139.1).margin(0.1));
    CHECK(p.terms[0].state == "long_scoreboard");
    CHECK(p.terms[0].delta_us == Approx(369.3).margin(0.1));
    CHECK(p.terms[1].state == "wait");
    CHECK(p.terms[1].delta_us == Approx(211.6).margin(0.1));
    CHECK(p.terms[2].state == "barrier");
    CHECK(p.terms[2].delta_us == Approx(-186.7).margin(0.1));
    REQUIRE_FALSE(p.terms[0].candidate_spots.empty());
    CHECK(p.terms[0].candidate_spots[0].file == "fused_sm90_kernel.cuh");
  }
  SECTION("seq 4096, no mask: wait and mio_throttle again") {
    const WhyPoint& p = at("b4 h16/16 s4096x4096 d128 bf16");
    CHECK(p.gap_us == Approx(119.7).margin(0.1));
    CHECK(p.terms[0].state == "wait");
    CHECK(p.terms[0].delta_us == Approx(129.5).margin(0.1));
    CHECK(p.terms[1].state == "mio_throttle");
    CHECK(p.terms[1].delta_us == Approx(108.0).margin(0.1));
  }
  SECTION("seq 1024, causal: cuDNN's barrier time is the largest term, and it is in fused-sm90's favour") {
    const WhyPoint& p = at("b16 h16/16 s1024x1024 d128 causal bf16");
    CHECK(p.gap_us == Approx(9.5).margin(0.1));
    CHECK(p.terms[0].state == "barrier");
    CHECK(p.terms[0].delta_us == Approx(-23.1).margin(0.1));
    CHECK(p.terms[1].state == "wait");
    CHECK(p.terms[1].delta_us == Approx(22.7).margin(0.1));
  }
}

TEST_CASE("why_against_fastest: the kernels sampled at a shape, each against the fastest of them") {
  Results res;
  res.context = test::gpu_context();
  res.records.push_back(sampled("slow", 150, {kernel_samples("slow", {{"selected", 10}, {"wait", 20}})}));
  res.records.push_back(sampled("fast", 100, {kernel_samples("fast", {{"selected", 10}, {"wait", 10}})}));
  Record unsampled = test::counted_record();  // faster still, but without warp states: not in the pairs
  unsampled.kernel = "unsampled";
  unsampled.latency.p50_us = 50;
  res.records.push_back(unsampled);
  Record alone = sampled("slow", 100, {kernel_samples("slow", {{"selected", 10}})});
  alone.shape.seq_q = alone.shape.seq_k = 4096;  // the only kernel sampled at its shape
  res.records.push_back(alone);
  const std::vector<WhyPair> pairs = why_against_fastest(res);
  REQUIRE(pairs.size() == 1);
  CHECK(pairs[0].baseline == "fast");
  CHECK(pairs[0].candidate == "slow");
  CHECK(pairs[0].point.gap_us == Approx(50));
  CHECK(term(pairs[0].point, "wait").delta_us == Approx(50));  // 50 us -> 100 us
}

TEST_CASE("why: the speed per SM cycle, where both sides' clocks under load were read") {
  const Context ctx = test::gpu_context();
  Record b = sampled("base", 100, {kernel_samples("void ns::base_kernel<1>(P)", {{"selected", 10}})});
  Record c = sampled("cand", 110, {kernel_samples("void ns::cand_kernel<1>(P)", {{"selected", 10}})});
  b.clock.sm_mhz_median = 0;  // one side unknown: no per-cycle figure
  c.clock.sm_mhz_median = 1600;
  CHECK_FALSE(why_point({&b, &ctx}, {&c, &ctx}, "base", "cand").speed_ratio_per_cycle.has_value());
  // The candidate took 10% longer at a 10% lower clock: the same speed per cycle.
  b.clock.sm_mhz_median = 1760;
  const WhyPoint p = why_point({&b, &ctx}, {&c, &ctx}, "base", "cand");
  CHECK(p.speed_ratio == Approx(100.0 / 110));
  CHECK(p.speed_ratio_per_cycle.value() == Approx(1.0));
  CHECK(p.baseline_sm_mhz == Approx(1760));
  CHECK(p.candidate_sm_mhz == Approx(1600));
}
