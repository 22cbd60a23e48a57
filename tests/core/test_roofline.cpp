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
