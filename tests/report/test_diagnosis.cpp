// Diagnosis rules: each verdict and each flag, triggered and not triggered.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "core/diagnosis.hpp"
#include "core/results.hpp"

using namespace attnprof::core;
using nlohmann::json;

namespace {

constexpr double kBw = 4e12;        // [bytes/s]
constexpr double kPeakBf16 = 8e14;  // [FLOP/s]; ridge 200 FLOP/B

Context gpu_context() {
  Context ctx;
  ctx.backend = "cuda";
  ctx.device.name = "Test GPU (not in the datasheet table)";
  ctx.ceilings.peak_bw_bytes_per_s = kBw;
  ctx.ceilings.peak_flops_per_s["bf16"] = kPeakBf16;
  ctx.ceilings.source = "measured";
  return ctx;
}

// A fused bf16 point that trips nothing: counters ok, compute-bound, full waves, verified, quiet.
Record fused_record() {
  Record r;
  r.shape = Shape{4, 16, 16, 2048, 2048, 128, false, DType::bf16};
  r.kernel = "fused";
  r.backend = "cuda";
  r.status = Status::ok;
  r.cost.flops = 1.0e11;
  r.cost.flops_dense = 1.0e11;
  r.cost.min_bytes_read = 1.0e8;
  r.cost.min_bytes_write = 0.5e8;
  r.latency.n = 50;
  r.latency.p50_us = 300;
  r.latency.p99_us = 310;
  r.latency.rel_stddev = 0.01;
  r.launch_overhead_us = 3;
  r.counters.status = "ok";
  r.counters.total[kMetricDramRead] = 1.0e8;
  r.counters.total[kMetricDramWrite] = 0.5e8;
  r.counters.total[kMetricTensorOpsBf16] = 1.0e11;
  r.counters.total[kMetricComputeSol] = 70;
  r.counters.total[kMetricMemorySol] = 15;
  r.occupancy.grid_blocks = 1056;
  r.occupancy.blocks_per_sm = 2;
  r.occupancy.sm_count = 132;
  r.occupancy.waves = 4.0;
  r.occupancy.theoretical_pct = 12.5;
  r.occupancy.limiter = "registers";
  r.verification.checked = true;
  r.verification.passed = true;
  return r;
}

bool has_flag(const json& d, std::string_view flag) {
  const auto& flags = d.at("flags");
  return std::any_of(flags.begin(), flags.end(), [&](const json& f) { return f == flag; });
}

std::string evidence_text(const json& d) {
  std::string all;
  for (const auto& line : d.at("evidence")) all += line.get<std::string>() + "\n";
  return all;
}

Results fixture() {
  return read_results(ATTNPROF_SOURCE_DIR "/tests/report/fixtures/synthetic_results.json");
}

}  // namespace

TEST_CASE("the clean baseline point raises no flag and is compute-bound") {
  const json d = diagnose(fused_record(), gpu_context());
  CHECK(d.at("verdict") == kVerdictCompute);
  CHECK(d.at("flags").empty());
  CHECK(d.at("metrics").at("flops_source") == "tensor-op counters");
  CHECK(d.at("metrics").at("bytes_source") == "DRAM counters");
  CHECK(d.at("metrics").at("intensity_flop_per_byte").get<double>() == Approx(1.0e11 / 1.5e8));
  CHECK(d.at("metrics").at("flops_vs_cost").get<double>() == Approx(1.0));
  CHECK_THAT(evidence_text(d), Catch::Contains("= 1.00x the cost model's"));
  CHECK_FALSE(d.at("next_step").get<std::string>().empty());
}

TEST_CASE("memory-bound when memory throughput leads by 10 points or more") {
  Record r = fused_record();
  r.counters.total[kMetricComputeSol] = 20;
  r.counters.total[kMetricMemorySol] = 75;
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictMemory);
  r.counters.total[kMetricMemorySol] = 29;  // under 60 both: not memory-bound
  CHECK(diagnose(r, gpu_context()).at("verdict") != kVerdictMemory);
}

TEST_CASE("compute-bound when compute throughput leads; saturation is reported over 80%") {
  Record r = fused_record();
  r.counters.total[kMetricComputeSol] = 85;
  const json d = diagnose(r, gpu_context());
  CHECK(d.at("verdict") == kVerdictCompute);
  CHECK(d.at("metrics").at("saturated") == "compute");
  r.counters.total[kMetricComputeSol] = 70;
  CHECK(diagnose(r, gpu_context()).at("metrics").at("saturated").is_null());
  r.counters.total[kMetricComputeSol] = 15;
  r.counters.total[kMetricMemorySol] = 70;
  CHECK(diagnose(r, gpu_context()).at("verdict") != kVerdictCompute);
}

TEST_CASE("within 10 points the roofline position decides") {
  Record r = fused_record();
  r.counters.total[kMetricComputeSol] = 65;
  r.counters.total[kMetricMemorySol] = 70;
  // Intensity 1e11 / 1.5e8 = 667 FLOP/B, above the ridge (200): compute side.
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictCompute);
  r.counters.total[kMetricDramRead] = 1.0e9;  // intensity 1e11 / 1.05e9 = 95: memory side
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictMemory);
}

TEST_CASE("latency-bound when both throughputs are under 60%, occupancy-bound when it is low") {
  Record r = fused_record();
  r.counters.total[kMetricComputeSol] = 30;
  r.counters.total[kMetricMemorySol] = 40;
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictOccupancy);  // 12.5%, registers
  r.occupancy.limiter.clear();
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictLatency);
  r.occupancy.limiter = "registers";
  r.occupancy.theoretical_pct = 75;
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictLatency);
  r.counters.total[kMetricMemorySol] = 61;
  CHECK(diagnose(r, gpu_context()).at("verdict") != kVerdictLatency);
}

TEST_CASE("launch-bound when the GPU time is under 10 us per kernel launch") {
  Record r = fused_record();
  r.latency.p50_us = 4;
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictLaunch);
  r.latency.p50_us = 12;  // one launch: 12 >= 10
  CHECK(diagnose(r, gpu_context()).at("verdict") != kVerdictLaunch);
  r.launches.resize(3);  // three launches: 12 < 30
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictLaunch);
  CHECK(diagnose(r, gpu_context()).at("metrics").at("launches_per_call") == 3);
  r.latency.p50_us = 31;
  CHECK(diagnose(r, gpu_context()).at("verdict") != kVerdictLaunch);
}

TEST_CASE("a host enqueue slower than the GPU time is host-bound, not launch-bound") {
  Record r = fused_record();
  r.latency.p50_us = 80;
  r.launch_overhead_us = 250;  // the whole call's host time, e.g. Python's
  const json d = diagnose(r, gpu_context());
  CHECK(d.at("verdict") != kVerdictLaunch);
  CHECK(has_flag(d, kFlagHostBound));
  CHECK_THAT(evidence_text(d), Catch::Contains("longer than its 80 us on the GPU"));
  r.launch_overhead_us = 60;
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagHostBound));
}

TEST_CASE("without ceilings or a known device there is no roofline verdict") {
  Context ctx;
  ctx.device.name = "Mystery accelerator";
  Record r = fused_record();
  r.counters.total.erase(kMetricComputeSol);
  const json d = diagnose(r, ctx);
  CHECK(d.at("verdict") == kVerdictUnknown);
  CHECK(d.at("metrics").at("pct_of_roof").is_null());
  CHECK_THAT(evidence_text(d), Catch::Contains("no compute/bandwidth ceilings"));
}

TEST_CASE("under-filled below one wave") {
  Record r = fused_record();
  r.occupancy.waves = 0.5;
  CHECK(has_flag(diagnose(r, gpu_context()), kFlagUnderFilled));
  r.occupancy.waves = 1.0;
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagUnderFilled));
}

TEST_CASE("tail effect from a mostly empty last wave") {
  Record r = fused_record();
  r.occupancy.waves = 1.03;  // 2 wave slots, 0.97 idle: 48%
  const json d = diagnose(r, gpu_context());
  CHECK(has_flag(d, kFlagTailEffect));
  CHECK(d.at("metrics").at("tail_idle_share").get<double>() == Approx(0.485));
  r.occupancy.waves = 15.5;  // 16 slots, 0.5 idle: 3%
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagTailEffect));
}

TEST_CASE("tail effect from a mostly empty last query tile of the fused kernel") {
  Record r = fused_record();
  r.shape.seq_q = r.shape.seq_k = 2050;  // last tile: 2 of 128 rows
  json d = diagnose(r, gpu_context());
  CHECK(has_flag(d, kFlagTailEffect));
  CHECK(d.at("metrics").at("last_query_tile_rows") == 2);
  CHECK_THAT(evidence_text(d), Catch::Contains("with 2 rows"));
  r.shape.seq_q = 2100;  // 52 rows: under half
  CHECK(has_flag(diagnose(r, gpu_context()), kFlagTailEffect));
  r.shape.seq_q = 2112;  // 64 rows: half full, not "mostly empty"
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagTailEffect));
  r.shape.seq_q = 2048;
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagTailEffect));
  r.shape.seq_q = 2050;  // the reference has no query tiles
  r.cost.sp_bytes = 1;
  r.cost.min_bytes_read += 1e9;
  CHECK(diagnose(r, gpu_context()).at("metrics").at("last_query_tile_rows").is_null());
}

TEST_CASE("excess traffic from measured DRAM bytes over the minimum") {
  Record r = fused_record();
  r.counters.total[kMetricDramRead] = 2.5e8;  // 3.0e8 / 1.5e8 = 2x
  json d = diagnose(r, gpu_context());
  CHECK(has_flag(d, kFlagExcessTraffic));
  CHECK(d.at("metrics").at("excess_traffic_ratio").get<double>() == Approx(2.0));
  r.counters.total[kMetricDramRead] = 1.15e8;  // 1.1x
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagExcessTraffic));
}

TEST_CASE("the L2 tail counts against the minimum, not in the roofline's bytes") {
  Record r = fused_record();
  r.counters.total[kMetricDramRead] = 1.15e8;  // read + write 1.65e8 = 1.1x the minimum 1.5e8
  r.counters.dram_write_tail_bytes = 0.5e8;    // with the tail 2.15e8: 1.43x
  const json d = diagnose(r, gpu_context());
  CHECK(d.at("metrics").at("dram_write_tail_bytes").get<double>() == 0.5e8);
  CHECK(d.at("metrics").at("excess_traffic_ratio").get<double>() == Approx(2.15 / 1.5));
  CHECK(has_flag(d, kFlagExcessTraffic));
  CHECK(d.at("metrics").at("dram_bytes").get<double>() == Approx(1.65e8));  // the ranges' bytes
  CHECK_THAT(evidence_text(d), Catch::Contains("after it (lines it left dirty in L2)"));
  r.counters.dram_write_tail_bytes.reset();
  const json without = diagnose(r, gpu_context());
  CHECK(without.at("metrics").at("dram_write_tail_bytes").is_null());
  CHECK(without.at("metrics").at("excess_traffic_ratio").get<double>() == Approx(1.1));
  CHECK_FALSE(has_flag(without, kFlagExcessTraffic));
}

TEST_CASE("excess traffic for a materialised kernel from its S/P share, counters or not") {
  Record r = fused_record();
  r.kernel = "reference";
  r.cost.sp_bytes = 9e8;
  r.cost.min_bytes_read = 6e8;
  r.cost.min_bytes_write = 4.5e8;  // S/P 9e8 of 1.05e9 = 86%
  r.counters = Counters{};
  json d = diagnose(r, gpu_context());
  CHECK(has_flag(d, kFlagExcessTraffic));
  CHECK(d.at("metrics").at("sp_share").get<double>() == Approx(9e8 / 1.05e9));
  CHECK_THAT(evidence_text(d), Catch::Contains("S and P are 86% of the minimum bytes"));
  r.cost.sp_bytes = 1e8;  // 10%
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagExcessTraffic));
}

TEST_CASE("throttled and noisy flags") {
  Record r = fused_record();
  r.clock.throttled_samples = 1;
  r.latency.rel_stddev = 0.1;
  json d = diagnose(r, gpu_context());
  CHECK(has_flag(d, kFlagThrottled));
  CHECK(has_flag(d, kFlagNoisy));
  r.clock.throttled_samples = 0;
  r.latency.rel_stddev = 0.02;
  d = diagnose(r, gpu_context());
  CHECK_FALSE(has_flag(d, kFlagThrottled));
  CHECK_FALSE(has_flag(d, kFlagNoisy));

  // Sampling that spent its time budget with the P50 known to +-1.5%: noisy, with the reason.
  r.latency.p50_us = 100;
  r.latency.p50_ci_low_us = 98.5;
  r.latency.p50_ci_high_us = 101.5;
  r.latency.n = 2000;
  r.sampling_stop = "time_budget";
  d = diagnose(r, gpu_context());
  CHECK(has_flag(d, kFlagNoisy));
  CHECK_THAT(evidence_text(d), Catch::Contains("P50 is known to +-1.5%"));
  CHECK_THAT(evidence_text(d), Catch::Contains("the timings kept drifting"));
  // With a clock batch 10% under the median clock, the dip is named as the cause.
  r.clock.sm_mhz_median = 1800;
  r.clock.sm_mhz_min = 1620;
  d = diagnose(r, gpu_context());
  CHECK(has_flag(d, kFlagNoisy));
  CHECK_THAT(evidence_text(d), Catch::Contains("the SM clock dipped to 1620 MHz, 10% under its median 1800 MHz"));
  // A 2% dip is the clock stepping, not named.
  r.clock.sm_mhz_min = 1764;
  CHECK_THAT(evidence_text(diagnose(r, gpu_context())), Catch::Contains("the timings kept drifting"));
  r.clock.sm_mhz_median = 0;
  r.clock.sm_mhz_min = 0;
  // The same interval after converging (a wider --target-ci), or a budget-stopped P50 known to 0.5%: not.
  r.sampling_stop = "converged";
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagNoisy));
  r.sampling_stop = "time_budget";
  r.latency.p50_ci_low_us = 99.5;
  r.latency.p50_ci_high_us = 100.5;
  CHECK_FALSE(has_flag(diagnose(r, gpu_context()), kFlagNoisy));
}

TEST_CASE("the SM clock under load is in the evidence when it is well below the maximum") {
  Record r = fused_record();
  r.clock.sm_mhz_unthrottled = 1980;
  r.clock.sm_mhz_median = 1700;
  json d = diagnose(r, gpu_context());
  CHECK(d.at("metrics").at("sm_mhz_median").get<double>() == 1700);
  CHECK_THAT(evidence_text(d), Catch::Contains("SM clock under load was 1700 MHz at the median, 86% of its 1980 MHz"));
  CHECK_FALSE(has_flag(d, kFlagThrottled));  // a lower clock is not a throttled sample
  r.clock.sm_mhz_median = 1900;  // 96%: not worth a line
  CHECK_THAT(evidence_text(diagnose(r, gpu_context())), !Catch::Contains("SM clock under load"));
  r.clock.sm_mhz_median = 0;  // not recorded (schema 1.0, CPU backend)
  d = diagnose(r, gpu_context());
  CHECK(d.at("metrics").at("sm_mhz_median").is_null());
  CHECK_THAT(evidence_text(d), !Catch::Contains("SM clock under load"));
}

TEST_CASE("unverified flag, and a failed verification is in the evidence") {
  Record r = fused_record();
  r.verification.checked = false;
  CHECK(has_flag(diagnose(r, gpu_context()), kFlagUnverified));
  r.verification.checked = true;
  r.verification.passed = false;
  r.status = Status::incorrect;
  r.verification.o_max_abs_err = 0.5;
  const json d = diagnose(r, gpu_context());
  CHECK_FALSE(has_flag(d, kFlagUnverified));
  CHECK_THAT(evidence_text(d), Catch::Contains("verification FAILED"));
}

TEST_CASE("counters unavailable: the cost model stands in and the evidence says so") {
  Record r = fused_record();
  r.counters.status = "unavailable";
  r.counters.reason = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  const json d = diagnose(r, gpu_context());
  CHECK(has_flag(d, kFlagCountersUnavailable));
  CHECK(d.at("metrics").at("flops_source") == "cost model");
  CHECK(d.at("metrics").at("bytes_source") == "cost-model minimum");
  CHECK(d.at("metrics").at("excess_traffic_ratio").is_null());
  CHECK(d.at("metrics").at("flops_vs_cost").is_null());
  CHECK_THAT(evidence_text(d), Catch::Contains("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));
  CHECK_THAT(evidence_text(d), Catch::Contains("come from the cost model"));
  // Derived speed of light: 1e11 FLOP in 300 us = 333 TFLOP/s = 42% of 800; 1.5e8 B = 12.5%.
  CHECK(d.at("metrics").at("compute_sol_pct").get<double>() == Approx(41.67).epsilon(0.01));
  CHECK(d.at("verdict") == kVerdictOccupancy);
  CHECK_FALSE(has_flag(diagnose(fused_record(), gpu_context()), kFlagCountersUnavailable));
}

TEST_CASE("CPU backend records are diagnosed from the cost model") {
  Record r = fused_record();
  r.backend = "cpu";
  r.counters = Counters{};
  r.occupancy = Occupancy{};
  r.latency.p50_us = 2.0e5;
  r.launch_overhead_us = 0;
  r.shape.seq_q = 2050;  // no query tiles on the CPU: no tile tail flag
  Context ctx;
  ctx.backend = "cpu";
  ctx.device.name = "CPU: test";
  json d = diagnose(r, ctx);
  CHECK(d.at("verdict") == kVerdictUnknown);
  CHECK(has_flag(d, kFlagCountersUnavailable));
  CHECK_FALSE(has_flag(d, kFlagTailEffect));
  CHECK_THAT(evidence_text(d), Catch::Contains("CPU backend: no hardware counters"));
  ctx.ceilings.peak_bw_bytes_per_s = 2e10;
  ctx.ceilings.peak_flops_per_s["bf16"] = 1e12;  // 1e11 FLOP in 0.2 s = 5e11 = 50%
  d = diagnose(r, ctx);
  CHECK(d.at("verdict") == kVerdictLatency);
  CHECK(d.at("metrics").at("pct_of_roof").get<double>() == Approx(50));
}

TEST_CASE("a datasheet found by device name stands in for missing ceilings") {
  Context ctx;
  ctx.device.name = "NVIDIA H200";
  const json d = diagnose(fused_record(), ctx);
  CHECK(d.at("verdict") != kVerdictUnknown);
  CHECK_THAT(d.at("metrics").at("roof_source").get<std::string>(), Catch::Contains("datasheet"));
}

TEST_CASE("flags come out in the documented order") {
  Record r = fused_record();
  r.counters.status = "unavailable";
  r.verification.checked = false;
  r.latency.rel_stddev = 0.2;
  r.clock.throttled_samples = 2;
  r.occupancy.waves = 0.3;
  const json d = diagnose(r, gpu_context());
  CHECK(d.at("flags") == json({"under-filled", "throttled", "noisy", "unverified",
                               "counters-unavailable"}));
}

TEST_CASE("annotate fills ok and incorrect records only") {
  Results res = fixture();
  annotate(res);
  for (const auto& r : res.records) {
    INFO(point_key(r));
    if (r.status == Status::ok || r.status == Status::incorrect)
      CHECK(r.diagnosis.is_object());
    else
      CHECK(r.diagnosis.is_null());
  }
}

TEST_CASE("the synthetic fixture's points get the verdicts they were built for") {
  Results res = fixture();
  annotate(res);
  auto find = [&](std::string_view label, std::string_view kernel) -> const json& {
    for (const auto& r : res.records)
      if (r.shape.label() == label && r.kernel == kernel) return r.diagnosis;
    FAIL("no point " << label << " | " << kernel);
    throw;
  };
  const json& ref_long = find("b4 h16/16 s8192x8192 d128 bf16", "reference");
  CHECK(ref_long.at("verdict") == kVerdictMemory);
  CHECK(has_flag(ref_long, kFlagExcessTraffic));
  CHECK(find("b4 h16/16 s8192x8192 d128 bf16", "fused").at("verdict") == kVerdictCompute);
  const json& ref_no_counters = find("b4 h16/16 s2048x2048 d128 bf16", "reference");
  CHECK(ref_no_counters.at("verdict") == kVerdictMemory);
  CHECK(has_flag(ref_no_counters, kFlagCountersUnavailable));
  CHECK(has_flag(ref_no_counters, kFlagThrottled));
  CHECK(has_flag(ref_no_counters, kFlagNoisy));
  const json& tail = find("b1 h16/16 s2050x2050 d128 bf16", "fused");
  CHECK(has_flag(tail, kFlagTailEffect));
  CHECK(tail.at("verdict") == kVerdictOccupancy);
  const json& tiny = find("b1 h1/1 s64x64 d64 bf16", "fused");
  CHECK(tiny.at("verdict") == kVerdictLaunch);
  CHECK(has_flag(tiny, kFlagUnderFilled));
  const json& odd = find("b2 h8/8 s1024x1024 d64 fp16", "<script>alert(1)</script>");
  CHECK(odd.at("verdict") == kVerdictLatency);
  CHECK(has_flag(odd, kFlagUnverified));
  CHECK_THAT(evidence_text(find("b4 h16/16 s4096x4096 d128 causal bf16", "fused")),
             Catch::Contains("verification FAILED"));
}

TEST_CASE("reference vs fused: speedup, bytes saved, intensity shift, S/P share of the gain") {
  const Results res = fixture();
  const json cmp = compare_kernels(res);
  REQUIRE(cmp.size() == 2);  // s8192 and s2048 have both kernels ok
  const json& c = cmp[0];
  CHECK(c.at("shape") == "b4 h16/16 s8192x8192 d128 bf16");
  CHECK(c.at("speedup").get<double>() == Approx(17250.0 / 5114.0));
  CHECK(c.at("bytes_source") == "DRAM counters");
  CHECK(c.at("bytes_saved").get<double>() > 0);
  CHECK(c.at("intensity_gain").get<double>() > 10);
  const Record* ref = nullptr;
  for (const auto& r : res.records)
    if (r.kernel == "reference" && r.shape.seq_q == 8192) ref = &r;
  REQUIRE(ref);
  const double sp_time_us = ref->cost.sp_bytes / res.context.ceilings.peak_bw_bytes_per_s * 1e6;
  CHECK(c.at("sp_time_us").get<double>() == Approx(sp_time_us));
  CHECK(c.at("sp_explained_share").get<double>() == Approx(sp_time_us / (17250.0 - 5114.0)));
  // The 2048 pair mixes a counter-less reference with a counted fused point, and says so.
  CHECK(cmp[1].at("bytes_source") == "cost-model minimum / DRAM counters");
}

TEST_CASE("a multi-launch call gets each launch's share, bandwidth and verdict, and names the dominant one") {
  Record r = fused_record();
  r.kernel = "reference";
  r.cost.sp_bytes = 1.2e8;
  for (const char* name : {"qk_gemm", "softmax", "pv_gemm"}) {
    Stage stage;
    stage.name = name;
    r.stages.push_back(stage);
  }
  auto launch = [](const char* name, double ns, double bytes, double c, double mem) {
    KernelCounters k;
    k.kernel = name;
    k.metrics[kMetricDuration] = ns;
    k.metrics[kMetricDramRead] = bytes * 0.5;
    k.metrics[kMetricDramWrite] = bytes * 0.5;
    k.metrics[kMetricComputeSol] = c;
    k.metrics[kMetricMemorySol] = mem;
    return k;
  };
  // 20 / 60 / 20 us; the softmax moves 2e8 bytes in 60 us = 3.33 TB/s at 85% memory throughput.
  r.counters.per_kernel = {launch("gemm_a", 20e3, 5e7, 45, 80), launch("softmax_vec", 60e3, 2e8, 30, 85),
                           launch("gemm_b", 20e3, 3e7, 35, 40)};
  const json d = diagnose(r, gpu_context());
  const json& launches = d.at("launches");
  REQUIRE(launches.size() == 3);
  CHECK(launches[1].at("name") == "softmax");  // stage names when the launches match the stages
  CHECK(launches[1].at("kernel") == "softmax_vec");
  CHECK(launches[1].at("time_share").get<double>() == Approx(0.6));
  CHECK(launches[1].at("dram_bytes_per_s").get<double>() == Approx(2e8 / 60e-6));
  CHECK(launches[0].at("verdict") == kVerdictMemory);
  CHECK(launches[1].at("verdict") == kVerdictMemory);
  CHECK(launches[2].at("verdict") == kVerdictLatency);
  CHECK(d.at("metrics").at("dominant_launch") == "softmax");
  CHECK(d.at("metrics").at("dominant_launch_time_share").get<double>() == Approx(0.6));
  CHECK(evidence_text(d).find("softmax 60% of GPU time memory-bound (compute 30%, memory 85%, 3.33 TB/s)") !=
        std::string::npos);

  SECTION("a single launch, or no counters, gives no breakdown") {
    r.counters.per_kernel.resize(1);
    CHECK(diagnose(r, gpu_context()).at("launches").empty());
    r.counters.per_kernel.clear();
    r.counters.status = "unavailable";
    const json none = diagnose(r, gpu_context());
    CHECK(none.at("launches").empty());
    CHECK(none.at("metrics").at("dominant_launch").is_null());
  }
}

TEST_CASE("a busy tensor pipe in a latency-bound fused kernel points at overlapping softmax with the MMAs") {
  Record r = fused_record();
  r.counters.total[kMetricComputeSol] = 52;
  r.counters.total[kMetricMemorySol] = 39;
  r.counters.total[kMetricTensorPipeActive] = 54;
  json d = diagnose(r, gpu_context());
  CHECK(d.at("verdict") == kVerdictOccupancy);
  CHECK(d.at("metrics").at("tensor_pipe_active_pct").get<double>() == Approx(54));
  CHECK_THAT(evidence_text(d), Catch::Contains("tensor pipe active 54% of cycles"));
  CHECK_THAT(d.at("next_step").get<std::string>(), Catch::Contains("tensor pipe runs 54% of cycles"));
  r.counters.total[kMetricTensorPipeActive] = 10;  // not MMA-heavy: overlap is not the lever
  CHECK_THAT(diagnose(r, gpu_context()).at("next_step").get<std::string>(),
             !Catch::Contains("ping-pong"));
}

TEST_CASE("a compute-bound kernel already on wgmma is not told to move to wgmma") {
  Record r = fused_record();  // compute-bound, 1e11 tensor ops counted
  r.counters.total[kMetricTensorInstHmma] = 1e11 / 65536;  // warpgroup MMAs
  json d = diagnose(r, gpu_context());
  CHECK(d.at("metrics").at("tensor_ops_per_instruction").get<double>() == Approx(65536));
  CHECK_THAT(d.at("next_step").get<std::string>(), Catch::Contains("on wgmma"));
  r.counters.total[kMetricTensorInstHmma] = 1e11 / 4096;  // mma.sync m16n8k16
  CHECK_THAT(diagnose(r, gpu_context()).at("next_step").get<std::string>(), Catch::Contains("a faster main loop"));
}

TEST_CASE("near the roof the roofline decides even when both speed-of-light units read under 60%") {
  Record r = fused_record();
  r.counters.total[kMetricComputeSol] = 55;
  r.counters.total[kMetricMemorySol] = 35;
  r.latency.p50_us = 160;  // 1e11 FLOP in 160 us = 625 TFLOP/s = 78% of the 800 TFLOP/s roof
  json d = diagnose(r, gpu_context());
  CHECK(d.at("verdict") == kVerdictCompute);
  CHECK_THAT(evidence_text(d), Catch::Contains("near the roof"));
  r.latency.p50_us = 300;  // 42% of the roof: latency / occupancy rules as before
  CHECK(diagnose(r, gpu_context()).at("verdict") == kVerdictOccupancy);
}

TEST_CASE("an occupancy-bound wgmma kernel is not told to cut registers") {
  Record r = fused_record();
  r.counters.total[kMetricComputeSol] = 45;
  r.counters.total[kMetricMemorySol] = 30;
  r.counters.total[kMetricTensorInstHmma] = 1e11 / 65536;
  json d = diagnose(r, gpu_context());
  CHECK(d.at("verdict") == kVerdictOccupancy);
  CHECK_THAT(d.at("next_step").get<std::string>(), Catch::Contains("by design"));
  CHECK_THAT(d.at("next_step").get<std::string>(), !Catch::Contains("use fewer registers"));
}
