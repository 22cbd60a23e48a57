#include <catch2/catch.hpp>

#include <set>

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
}
