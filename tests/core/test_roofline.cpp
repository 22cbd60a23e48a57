#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "core/diagnosis.hpp"
#include "core/roofline.hpp"

using namespace attnprof::core;

TEST_CASE("datasheet lookup by key and by CUDA device name") {
  CHECK(find_datasheet("h200")->name == "NVIDIA H200");
  CHECK(find_datasheet("NVIDIA H200")->key == "h200");
  CHECK(find_datasheet("nvidia h200")->key == "h200");
  CHECK(find_datasheet("H200")->key == "h200");
  CHECK(find_datasheet("NVIDIA H100 80GB HBM3")->key == "h100-sxm");
  CHECK(find_datasheet("NVIDIA H100 PCIe")->key == "h100-pcie");
  CHECK(find_datasheet("NVIDIA A100-SXM4-80GB")->key == "a100-80gb");
  CHECK(find_datasheet("NVIDIA A100-SXM4-40GB")->key == "a100-40gb");
  CHECK(find_datasheet("NVIDIA L40S")->key == "l40s");
  CHECK(find_datasheet("NVIDIA B200")->key == "b200");
  CHECK(find_datasheet("NVIDIA GH200 480GB")->key == "gh200");
  CHECK_FALSE(find_datasheet("NVIDIA GeForce RTX 4090").has_value());
  CHECK_FALSE(find_datasheet("").has_value());
}

TEST_CASE("the table is well formed") {
  std::set<std::string> keys;
  for (const auto& d : datasheets()) {
    INFO(d.key);
    CHECK(keys.insert(d.key).second);
    CHECK(d.hbm_bytes_per_s > 1e11);
    CHECK(d.dense_bf16_flops_per_s > d.fp32_flops_per_s);
    CHECK(d.dense_fp16_flops_per_s > d.fp32_flops_per_s);
    CHECK(d.fp32_flops_per_s > 1e12);
  }
  CHECK(keys.size() >= 12);
}

TEST_CASE("H200 ridge point, attainable throughput and bound") {
  const Ceilings c = datasheet_ceilings(*find_datasheet("h200"));
  CHECK(c.source == "datasheet");
  CHECK(c.peak_bw_bytes_per_s == 4.8e12);
  CHECK(c.datasheet_bw_bytes_per_s == 4.8e12);
  CHECK(peak_flops_for(c, DType::bf16) == Approx(989.4e12));
  CHECK(peak_flops_for(c, DType::fp32) == Approx(67e12));
  CHECK(ridge_point(c, DType::bf16) == Approx(989.4e12 / 4.8e12));  // 206.1 FLOP/B
  CHECK(ridge_point(c, DType::fp32) == Approx(67e12 / 4.8e12));     // 14.0 FLOP/B
  CHECK(attainable_flops(c, DType::bf16, 100) == Approx(4.8e14));
  CHECK(attainable_flops(c, DType::bf16, 1000) == Approx(989.4e12));
  CHECK(bound_of(c, DType::bf16, 100) == Bound::memory);
  CHECK(bound_of(c, DType::bf16, 1000) == Bound::compute);
  CHECK(bound_of(c, DType::bf16, ridge_point(c, DType::bf16)) == Bound::compute);
  CHECK(bound_of(c, DType::fp32, 100) == Bound::compute);
  CHECK(to_string(Bound::memory) == "memory");
  CHECK(to_string(Bound::compute) == "compute");
  // 1 GFLOP over 1 GB: memory-bound, 1e9 / 4.8e12 s; 1 TFLOP over 1 GB: compute-bound.
  CHECK(roofline_floor_s(c, DType::bf16, 1e9, 1e9) == Approx(1e9 / 4.8e12));
  CHECK(roofline_floor_s(c, DType::bf16, 1e12, 1e9) == Approx(1e12 / 989.4e12));
}

TEST_CASE("peak FLOP/s falls back to bf16, then fp16, when the dtype is absent") {
  Ceilings c;
  c.peak_bw_bytes_per_s = 1e12;
  c.peak_flops_per_s["bf16"] = 5e14;
  CHECK(peak_flops_for(c, DType::fp16) == 5e14);
  CHECK(peak_flops_for(c, DType::fp32) == 5e14);
  Ceilings only_fp16;
  only_fp16.peak_flops_per_s["fp16"] = 3e14;
  CHECK(peak_flops_for(only_fp16, DType::bf16) == 3e14);
  CHECK(peak_flops_for(Ceilings{}, DType::bf16) == 0);
  // Measured ceilings are used as given.
  c.peak_flops_per_s["fp16"] = 4e14;
  CHECK(ridge_point(c, DType::fp16) == Approx(400));
  // fp8 never borrows a 16-bit roof (its tensor rate is twice as high): its own figure, or none.
  CHECK(peak_flops_for(c, DType::fp8_e4m3) == 0);
  CHECK(attainable_flops(c, DType::fp8_e4m3, 1e6) == 0);
  c.peak_flops_per_s["fp8_e4m3"] = 1e15;
  CHECK(peak_flops_for(c, DType::fp8_e4m3) == 1e15);
}

TEST_CASE("the compute roof scales with the SM clock a point ran at; bandwidth does not") {
  Ceilings c = datasheet_ceilings(*find_datasheet("h200"));
  c.peak_bw_bytes_per_s = 4.4e12;
  c.peak_flops_per_s["bf16"] = 780e12;
  c.flops_per_s_per_mhz["bf16"] = 780e12 / 1650;  // the probe ran at 1650 MHz
  c.probe_sm_mhz["bf16"] = 1650;
  // At the probe's clock: the measured roof; at another clock: in proportion.
  CHECK(peak_flops_at_clock(c, DType::bf16, 1650) == Approx(780e12));
  CHECK(peak_flops_at_clock(c, DType::bf16, 1320) == Approx(780e12 * 0.8));
  const Ceilings at = ceilings_at_clock(c, 1320);
  CHECK(at.peak_bw_bytes_per_s == 4.4e12);
  CHECK(attainable_flops(at, DType::bf16, 1e6) == Approx(624e12));
  CHECK(ridge_point(at, DType::bf16) == Approx(624e12 / 4.4e12));
  // Never above the datasheet, whatever the clock.
  CHECK(peak_flops_at_clock(c, DType::bf16, 2500) == Approx(989.4e12));
  // No clock, or a dtype with no per-MHz figure: the roof as recorded.
  CHECK(peak_flops_at_clock(c, DType::bf16, 0) == Approx(780e12));
  CHECK(peak_flops_at_clock(c, DType::fp32, 1320) == Approx(67e12));
  CHECK(ceilings_at_clock(datasheet_ceilings(*find_datasheet("h200")), 1500).peak_flops_per_s.at("bf16") ==
        Approx(989.4e12));
}

TEST_CASE("the datasheet roof beside the measured one") {
  const Ceilings c = datasheet_ceilings(*find_datasheet("h200"));
  CHECK(datasheet_attainable_flops(c, DType::bf16, 100) == Approx(4.8e14));
  CHECK(datasheet_attainable_flops(c, DType::bf16, 1e4) == Approx(989.4e12));
  CHECK(datasheet_attainable_flops(Ceilings{}, DType::bf16, 100) == 0);
}

TEST_CASE("merging measured ceilings: best HBM probe, one tensor roof per MHz for fp16 and bf16") {
  MeasuredCeilings m;
  m.hbm_bytes_per_s = 4.45e12;
  m.copy_bytes_per_s = 4.0e12;
  m.l2_bytes_per_s = 9e12;
  m.launch_latency_us = 1.8;
  m.mma_fp16 = {600e12, 1900};
  m.mma_bf16 = {580e12, 1900};
  m.gemm_fp16 = {765e12, 1700};
  m.gemm_bf16 = {800e12, 1755};  // 456 GFLOP/s per MHz: the best per cycle, and fp16's roof too
  m.fma_fp32 = {60e12, 1980};
  const Ceilings c = merge_with_datasheet(m, "NVIDIA H200");
  CHECK(c.source == "measured+datasheet");
  CHECK(c.peak_bw_bytes_per_s == 4.45e12);
  CHECK(c.l2_bw_bytes_per_s == 9e12);
  CHECK(c.launch_latency_us == 1.8);
  CHECK(c.datasheet_bw_bytes_per_s == 4.8e12);
  const double best = std::max({765e12 / 1700, 800e12 / 1755, 600e12 / 1900, 580e12 / 1900});
  CHECK(best == Approx(800e12 / 1755));
  CHECK(c.flops_per_s_per_mhz.at("bf16") == Approx(best));
  CHECK(c.flops_per_s_per_mhz.at("fp16") == Approx(best));
  CHECK(c.peak_flops_per_s.at("bf16") == c.peak_flops_per_s.at("fp16"));
  CHECK(c.probe_sm_mhz.at("fp16") == 1755);
  CHECK(c.flops_per_s_per_mhz.at("fp32") == Approx(60e12 / 1980));
  // Scaled to one clock, fp16 and bf16 points meet the same roof.
  CHECK(peak_flops_at_clock(c, DType::fp16, 1600) == peak_flops_at_clock(c, DType::bf16, 1600));

  // A probe that read no clock still sets the roof by its FLOP/s, with no per-MHz figure.
  MeasuredCeilings unclocked;
  unclocked.hbm_bytes_per_s = 4e12;
  unclocked.gemm_bf16 = {700e12, 0};
  const Ceilings u = merge_with_datasheet(unclocked, "no such GPU");
  CHECK(u.source == "measured");
  CHECK(u.peak_flops_per_s.at("bf16") == 700e12);
  CHECK(u.flops_per_s_per_mhz.empty());
  CHECK(u.datasheet_flops_per_s.empty());

  // Implausible probes (over 1.25x the datasheet) are rejected, the datasheet kept, the source says so.
  MeasuredCeilings wild;
  wild.hbm_bytes_per_s = 7e12;
  wild.mma_bf16 = {2000e12, 1800};
  const Ceilings w = merge_with_datasheet(wild, "NVIDIA H200");
  CHECK(w.peak_bw_bytes_per_s == 4.8e12);
  CHECK(w.peak_flops_per_s.at("bf16") == Approx(989.4e12));
  CHECK(w.flops_per_s_per_mhz.count("bf16") == 0);
  CHECK(w.source.find("bandwidth probe rejected") != std::string::npos);
  CHECK(w.source.find("mma.sync bf16 probe rejected") != std::string::npos);
}

TEST_CASE("the diagnosis puts % of roof at the point's SM clock, the datasheet's beside it") {
  Context ctx;
  ctx.device.name = "NVIDIA H200";
  ctx.ceilings = datasheet_ceilings(*find_datasheet("h200"));
  ctx.ceilings.source = "measured+datasheet";
  ctx.ceilings.peak_bw_bytes_per_s = 4.4e12;
  ctx.ceilings.peak_flops_per_s["bf16"] = 800e12;
  ctx.ceilings.flops_per_s_per_mhz["bf16"] = 800e12 / 1800;
  Record r;
  r.kernel = "fused";
  r.backend = attnprof::core::BackendKind::cuda;
  r.shape.dtype = DType::bf16;
  r.cost.flops = 1e12;
  r.cost.min_bytes_read = 1e9;  // intensity 1000 FLOP/B: compute-bound
  r.latency.p50_us = 2000;      // 500 TFLOP/s
  r.clock.sm_mhz_median = 1500;
  const DiagnosisMetrics m = diagnose(r, ctx).metrics;
  const double roof = 800e12 / 1800 * 1500;  // 667 TFLOP/s at 1500 MHz
  REQUIRE(m.peak_flops_per_s.has_value());
  CHECK(*m.peak_flops_per_s == Approx(roof));
  REQUIRE(m.pct_of_roof.has_value());
  CHECK(*m.pct_of_roof == Approx(500e12 / roof * 100));  // 75%
  CHECK(m.roof_sm_mhz == 1500);
  REQUIRE(m.pct_of_datasheet_roof.has_value());
  CHECK(*m.pct_of_datasheet_roof == Approx(500e12 / 989.4e12 * 100));
  // The roof is already at the point's clock: the clock-scaled share is the same figure.
  CHECK(m.pct_of_clock_scaled_roof == m.pct_of_roof);
  // Without a clock reading: the roof as recorded, and no clock named.
  r.clock.sm_mhz_median = 0;
  const DiagnosisMetrics unclocked = diagnose(r, ctx).metrics;
  REQUIRE(unclocked.pct_of_roof.has_value());
  CHECK(*unclocked.pct_of_roof == Approx(500e12 / 800e12 * 100));
  CHECK_FALSE(unclocked.roof_sm_mhz.has_value());
}

TEST_CASE("fp8 datasheet figures: only the parts with fp8 tensor cores, each above the 16-bit figure") {
  CHECK(find_datasheet("h200")->dense_fp8_flops_per_s == Approx(1979e12));
  CHECK(find_datasheet("h100-sxm")->dense_fp8_flops_per_s == Approx(1979e12));
  CHECK(find_datasheet("b200")->dense_fp8_flops_per_s == Approx(4500e12));
  CHECK(find_datasheet("l4")->dense_fp8_flops_per_s > 0);  // Ada, sm_89
  for (const char* ampere : {"a100-40gb", "a100-80gb", "a100-80gb-pcie", "a10", "a30"}) {
    INFO(ampere);
    CHECK(find_datasheet(ampere)->dense_fp8_flops_per_s == 0);
    CHECK(datasheet_ceilings(*find_datasheet(ampere)).peak_flops_per_s.count("fp8_e4m3") == 0);
  }
  for (const auto& d : datasheets()) {
    INFO(d.key);
    if (d.dense_fp8_flops_per_s > 0) CHECK(d.dense_fp8_flops_per_s > 1.9 * d.dense_bf16_flops_per_s);
  }
  const Ceilings h200 = datasheet_ceilings(*find_datasheet("h200"));
  CHECK(h200.peak_flops_per_s.at("fp8_e4m3") == Approx(1979e12));
  CHECK(h200.datasheet_flops_per_s.at("fp8_e4m3") == Approx(1979e12));
}

TEST_CASE("the roof per dtype: fp8 points take the fp8 roof, never a 16-bit one; others unchanged") {
  const Ceilings h200 = datasheet_ceilings(*find_datasheet("h200"));
  CHECK(peak_flops_for(h200, DType::fp8_e4m3) == Approx(1979e12));
  CHECK(peak_flops_for(h200, DType::bf16) == Approx(989.4e12));
  CHECK(peak_flops_for(h200, DType::fp16) == Approx(989.4e12));
  CHECK(peak_flops_for(h200, DType::fp32) == Approx(67e12));
  CHECK(missing_roof(h200, DType::fp8_e4m3).empty());
  // Every function that picks a roof by dtype goes through it.
  CHECK(ridge_point(h200, DType::fp8_e4m3) == Approx(1979e12 / 4.8e12));  // 412 FLOP/B
  CHECK(bound_of(h200, DType::fp8_e4m3, 300) == Bound::memory);             // past bf16's ridge (206), not fp8's
  CHECK(bound_of(h200, DType::bf16, 300) == Bound::compute);
  CHECK(attainable_flops(h200, DType::fp8_e4m3, 1e4) == Approx(1979e12));
  CHECK(roofline_floor_s(h200, DType::fp8_e4m3, 1e12, 1e6) == Approx(1e12 / 1979e12));
  CHECK(datasheet_attainable_flops(h200, DType::fp8_e4m3, 1e4) == Approx(1979e12));

  // Ceilings without an fp8 figure (measured before the fp8 probes): no fp8 roof, not bf16's.
  Ceilings old;
  old.peak_bw_bytes_per_s = 4.4e12;
  old.peak_flops_per_s = {{"bf16", 800e12}, {"fp16", 800e12}, {"fp32", 55e12}};
  old.datasheet_flops_per_s = {{"bf16", 989.4e12}, {"fp16", 989.4e12}, {"fp32", 67e12}};
  CHECK(peak_flops_for(old, DType::fp8_e4m3) == 0);
  CHECK(datasheet_attainable_flops(old, DType::fp8_e4m3, 1e4) == 0);
  CHECK_THAT(missing_roof(old, DType::fp8_e4m3),
             Catch::StartsWith("no fp8_e4m3 roof: these ceilings were measured without the fp8 probes"));
  CHECK(peak_flops_for(old, DType::bf16) == 800e12);
  CHECK(missing_roof(old, DType::bf16).empty());
  // An fp8 figure alone does not stand in for the 16-bit dtypes either way round: they keep theirs.
  Ceilings only_fp8;
  only_fp8.peak_flops_per_s["fp8_e4m3"] = 1.5e15;
  CHECK(peak_flops_for(only_fp8, DType::fp8_e4m3) == 1.5e15);
  CHECK(peak_flops_for(only_fp8, DType::bf16) == 0);
  CHECK_THAT(missing_roof(only_fp8, DType::bf16), Catch::StartsWith("no bf16 roof"));
}

namespace {

// The H200's measured 16-bit and fp32 probes of the merge test above.
MeasuredCeilings h200_probes() {
  MeasuredCeilings m;
  m.hbm_bytes_per_s = 4.45e12;
  m.mma_fp16 = {600e12, 1900};
  m.mma_bf16 = {580e12, 1900};
  m.gemm_fp16 = {765e12, 1700};
  m.gemm_bf16 = {800e12, 1755};
  m.fma_fp32 = {60e12, 1980};
  return m;
}

}  // namespace

TEST_CASE("merging the fp8 probes: their own roof, the better per MHz, checked at 1.25x its own datasheet") {
  MeasuredCeilings m = h200_probes();
  m.mma_fp8_e4m3 = {560e12, 1900};     // 295 GFLOP/s per MHz: Hopper runs it through the 16-bit path
  m.gemm_fp8_e4m3 = {1400e12, 1600};  // 875 GFLOP/s per MHz: the roof
  const Ceilings c = merge_with_datasheet(m, "NVIDIA H200");
  CHECK(c.source == "measured+datasheet");
  CHECK(c.peak_flops_per_s.at("fp8_e4m3") == 1400e12);
  CHECK(c.flops_per_s_per_mhz.at("fp8_e4m3") == Approx(1400e12 / 1600));
  CHECK(c.probe_sm_mhz.at("fp8_e4m3") == 1600);
  CHECK(c.datasheet_flops_per_s.at("fp8_e4m3") == Approx(1979e12));
  // Not shared with the 16-bit roof, which the fp8 probes do not move.
  CHECK(c.flops_per_s_per_mhz.at("bf16") == Approx(800e12 / 1755));
  CHECK(c.peak_flops_per_s.at("bf16") == 800e12);
  CHECK(merge_with_datasheet(h200_probes(), "NVIDIA H200").flops_per_s_per_mhz == [&] {
    auto without_fp8 = c.flops_per_s_per_mhz;
    without_fp8.erase("fp8_e4m3");
    return without_fp8;
  }());
  // At a point's clock the fp8 roof scales like the others, capped at its datasheet figure.
  CHECK(peak_flops_at_clock(c, DType::fp8_e4m3, 1200) == Approx(1400e12 / 1600 * 1200));
  CHECK(peak_flops_at_clock(c, DType::fp8_e4m3, 2400) == Approx(1979e12));
  // Every compute probe is kept, by its name, with its clock.
  REQUIRE(c.compute_probes.size() == 7);
  CHECK(c.compute_probes.at("mma_fp8_e4m3").flops_per_s == 560e12);
  CHECK(c.compute_probes.at("gemm_fp8_e4m3").sm_mhz == 1600);
  CHECK(c.compute_probes.at("gemm_bf16").flops_per_s == 800e12);
  CHECK(c.compute_probes.at("fma_fp32").sm_mhz == 1980);

  // 1.24x the datasheet is accepted; 1.26x measured nothing real and is rejected, the datasheet kept.
  MeasuredCeilings near = h200_probes();
  near.gemm_fp8_e4m3 = {1.24 * 1979e12, 1980};
  CHECK(merge_with_datasheet(near, "NVIDIA H200").peak_flops_per_s.at("fp8_e4m3") == Approx(1.24 * 1979e12));
  MeasuredCeilings wild = h200_probes();
  wild.mma_fp8_e4m3 = {1.26 * 1979e12, 1980};
  const Ceilings w = merge_with_datasheet(wild, "NVIDIA H200");
  CHECK(w.peak_flops_per_s.at("fp8_e4m3") == Approx(1979e12));
  CHECK(w.flops_per_s_per_mhz.count("fp8_e4m3") == 0);
  CHECK_THAT(w.source, Catch::Contains("mma.sync fp8_e4m3 probe rejected as implausible"));
  // Checked against the fp8 figure, not the 16-bit one: 1.5 PFLOP/s is 1.5x bf16's datasheet, fine for fp8.
  MeasuredCeilings fast = h200_probes();
  fast.gemm_fp8_e4m3 = {1500e12, 1700};
  const Ceilings f = merge_with_datasheet(fast, "NVIDIA H200");
  CHECK(f.peak_flops_per_s.at("fp8_e4m3") == 1500e12);
  CHECK_THAT(f.source, !Catch::Contains("rejected"));
}

TEST_CASE("merging the fp8 probes: no datasheet entry, and probes that did not run") {
  // A GPU the table does not list: the measured fp8 roof stands alone, checked against nothing.
  MeasuredCeilings unlisted = h200_probes();
  unlisted.gemm_fp8_e4m3 = {600e12, 2500};
  const Ceilings u = merge_with_datasheet(unlisted, "NVIDIA GeForce RTX 4090");
  CHECK(u.source == "measured");
  CHECK(u.peak_flops_per_s.at("fp8_e4m3") == 600e12);
  CHECK(u.flops_per_s_per_mhz.at("fp8_e4m3") == Approx(600e12 / 2500));
  CHECK(u.datasheet_flops_per_s.empty());
  CHECK(u.compute_probes.count("mma_fp8_e4m3") == 0);  // neither measured nor said why: not recorded

  // An A100: no fp8 tensor cores, so neither probe ran and there is no fp8 roof, only the reason.
  MeasuredCeilings ampere = h200_probes();
  ampere.mma_fp8_e4m3.not_run = ampere.gemm_fp8_e4m3.not_run = "sm_80 has no fp8 tensor cores (sm_89 and later)";
  const Ceilings a = merge_with_datasheet(ampere, "NVIDIA A100-SXM4-80GB");
  CHECK(a.peak_flops_per_s.count("fp8_e4m3") == 0);
  CHECK(peak_flops_for(a, DType::fp8_e4m3) == 0);
  CHECK(a.compute_probes.at("gemm_fp8_e4m3").not_run == "sm_80 has no fp8 tensor cores (sm_89 and later)");
  CHECK(missing_roof(a, DType::fp8_e4m3) ==
        "no fp8_e4m3 roof: mma.sync fp8_e4m3 not run (sm_80 has no fp8 tensor cores (sm_89 and later)); "
        "GEMM fp8_e4m3 not run (sm_80 has no fp8 tensor cores (sm_89 and later))");
  CHECK_THAT(a.source, !Catch::Contains("fp8"));  // the A100's datasheet has no fp8 figure to fall back to

  // An H200 whose fp8 probes could not run (the library refused, the build lacks sm_89+ code): the
  // datasheet's fp8 figure is the roof, and the source says so.
  MeasuredCeilings refused = h200_probes();
  refused.mma_fp8_e4m3.not_run = "this build has no sm_89+ code for the device";
  refused.gemm_fp8_e4m3.not_run = "cublasLtMatmulAlgoGetHeuristic: CUBLAS_STATUS_NOT_SUPPORTED";
  const Ceilings r = merge_with_datasheet(refused, "NVIDIA H200");
  CHECK(r.peak_flops_per_s.at("fp8_e4m3") == Approx(1979e12));
  CHECK(r.flops_per_s_per_mhz.count("fp8_e4m3") == 0);
  CHECK_THAT(r.source, Catch::Contains("fp8_e4m3 roof from the datasheet (its probes did not run)"));
  // One probe missing: the other sets the roof.
  MeasuredCeilings one = refused;
  one.mma_fp8_e4m3 = {560e12, 1900};
  const Ceilings o = merge_with_datasheet(one, "NVIDIA H200");
  CHECK(o.peak_flops_per_s.at("fp8_e4m3") == 560e12);
  CHECK(o.flops_per_s_per_mhz.at("fp8_e4m3") == Approx(560e12 / 1900));
  CHECK_THAT(o.source, !Catch::Contains("fp8"));
}

TEST_CASE("the diagnosis places an fp8 point on the fp8 roof, and says when the ceilings have none") {
  Context ctx;
  ctx.device.name = "NVIDIA H200";
  MeasuredCeilings m = h200_probes();
  m.gemm_fp8_e4m3 = {1400e12, 1600};
  ctx.ceilings = merge_with_datasheet(m, ctx.device.name);
  Record r;
  r.kernel = "fused";
  r.backend = attnprof::core::BackendKind::cuda;
  r.shape.dtype = DType::fp8_e4m3;
  r.cost.flops = 1e12;
  r.cost.min_bytes_read = 1e9;  // intensity 1000 FLOP/B: past the fp8 ridge too
  r.latency.p50_us = 1250;      // 800 TFLOP/s
  r.clock.sm_mhz_median = 1500;
  const DiagnosisMetrics fp8 = diagnose(r, ctx).metrics;
  const double roof = 1400e12 / 1600 * 1500;  // 1312.5 TFLOP/s at 1500 MHz
  REQUIRE(fp8.peak_flops_per_s.has_value());
  CHECK(*fp8.peak_flops_per_s == Approx(roof));
  REQUIRE(fp8.pct_of_roof.has_value());
  CHECK(*fp8.pct_of_roof == Approx(800e12 / roof * 100));
  CHECK(*fp8.pct_of_datasheet_roof == Approx(800e12 / 1979e12 * 100));

  // A bf16 point reads the same with or without the fp8 probes.
  r.shape.dtype = DType::bf16;
  Context without = ctx;
  without.ceilings = merge_with_datasheet(h200_probes(), ctx.device.name);
  const DiagnosisMetrics bf16 = diagnose(r, ctx).metrics, bf16_before = diagnose(r, without).metrics;
  CHECK(bf16.peak_flops_per_s == bf16_before.peak_flops_per_s);
  CHECK(bf16.pct_of_roof == bf16_before.pct_of_roof);
  CHECK(bf16.roof_bound == bf16_before.roof_bound);
  CHECK(*bf16.peak_flops_per_s == Approx(800e12 / 1755 * 1500));

  // Ceilings measured before the fp8 probes (an older results file): no fp8 roof, and the evidence says
  // so rather than placing the point on bf16's.
  r.shape.dtype = DType::fp8_e4m3;
  Context old = without;
  for (auto* figures : {&old.ceilings.peak_flops_per_s, &old.ceilings.datasheet_flops_per_s,
                        &old.ceilings.flops_per_s_per_mhz, &old.ceilings.probe_sm_mhz})
    figures->erase("fp8_e4m3");
  old.ceilings.compute_probes.clear();
  const Diagnosis d = diagnose(r, old);
  CHECK_FALSE(d.metrics.peak_flops_per_s.has_value());
  CHECK_FALSE(d.metrics.pct_of_roof.has_value());
  std::string evidence;
  for (const auto& line : d.evidence) evidence += line + '\n';
  CHECK_THAT(evidence, Catch::Contains("no fp8_e4m3 roof: these ceilings were measured without the fp8 probes"));
  CHECK_THAT(evidence, !Catch::Contains("no compute/bandwidth ceilings"));
  CHECK(d.verdict == Verdict::unknown);  // no counters either: nothing to place it by
  CHECK_THAT(d.next_step, Catch::Contains("the ceilings give it no roof (no fp8_e4m3 roof"));
}
