// core/explain.cpp: `attnprof explain`'s analytic picture: both kernel kinds' costs placed on the
// datasheet roofline, each figure consistent with the cost model and the roofline it comes from; the
// table and the JSON carry them; an unknown GPU or an impossible shape is an InputError.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/explain.hpp"
#include "core/roofline.hpp"

using namespace attnprof::core;

TEST_CASE("explain: reference then fused, each on the datasheet roofline of the GPU asked for") {
  const Shape s{8, 16, 16, 4096, 4096, 128, true, DType::bf16};
  const Explanation e = explain("h200", s);
  CHECK(e.gpu.key == "h200");
  CHECK(e.shape == s);
  REQUIRE(e.kernels.size() == 2);
  CHECK(e.kernels[0].kernel == "reference");
  CHECK(e.kernels[0].kind == KernelKind::materialized);
  CHECK(e.kernels[1].kernel == "fused");
  CHECK(e.kernels[1].kind == KernelKind::fused);
  for (const KernelExplanation& k : e.kernels) {
    INFO(k.kernel);
    const Cost cost = cost_of(s, k.kind);
    CHECK(k.cost.flops == cost.flops);
    CHECK(k.cost.min_bytes_read == cost.min_bytes_read);
    const double peak = peak_flops_for(e.ceilings, s.dtype);
    const double bytes = cost.min_bytes_read + cost.min_bytes_write;
    CHECK(k.floor_latency_us ==
          Approx(1e6 * std::max(cost.flops / peak, bytes / e.ceilings.peak_bw_bytes_per_s)).epsilon(1e-9));
    CHECK(k.attainable_flops_per_s ==
          Approx(std::min(peak, e.ceilings.peak_bw_bytes_per_s * cost.intensity)).epsilon(1e-9));
    CHECK(k.ridge_flops_per_byte == Approx(peak / e.ceilings.peak_bw_bytes_per_s).epsilon(1e-9));
    CHECK(k.bound == (cost.intensity >= k.ridge_flops_per_byte ? Bound::compute : Bound::memory));
  }
  // The fused kernel keeps S and P on chip: higher intensity, no S/P bytes, compute-bound at this size.
  CHECK(e.kernels[1].cost.intensity > e.kernels[0].cost.intensity);
  CHECK(e.kernels[1].cost.sp_bytes == 0);
  CHECK(e.kernels[0].cost.sp_bytes > 0);
  CHECK(e.kernels[1].bound == Bound::compute);
  // A device name as CUDA reports it finds the same sheet.
  CHECK(explain("NVIDIA H200", s).gpu.key == "h200");
}

TEST_CASE("explain: the JSON (the table is report::render_explanation, golden-tested in tests/report)") {
  const Shape s{1, 8, 8, 512, 512, 64, false, DType::fp16};
  const Explanation e = explain("h200", s);
  const nlohmann::json j = e;
  CHECK(j.at("gpu").at("key") == "h200");
  CHECK(j.at("label") == s.label());
  REQUIRE(j.at("kernels").size() == 2);
  CHECK(j.at("kernels")[0].at("kind") == "materialized");
  CHECK(j.at("kernels")[1].at("floor_latency_us").get<double>() == Approx(e.kernels[1].floor_latency_us));
  CHECK(to_string(KernelKind::fused) == "fused");
}

TEST_CASE("explain: an unknown GPU lists the known keys; an impossible shape is refused") {
  const Shape s{1, 8, 8, 512, 512, 64, false, DType::bf16};
  CHECK_THROWS_WITH(explain("tpu-v5", s), Catch::Contains("unknown GPU 'tpu-v5'") && Catch::Contains("h200"));
  CHECK_THROWS_AS(explain("h200", Shape{1, 8, 3, 512, 512, 64, false, DType::bf16}), attnprof::InputError);
}

TEST_CASE("explain: an fp8 shape on the GPU's fp8 roof; a GPU without fp8 tensor cores is an InputError") {
  Shape s{8, 16, 16, 4096, 4096, 128, false, DType::fp8_e4m3};
  imply_fp8_kv_format(s);
  const Explanation e = explain("h200", s);
  for (const KernelExplanation& k : e.kernels) {
    INFO(k.kernel);
    CHECK(k.ridge_flops_per_byte == Approx(1979e12 / 4.8e12));
    CHECK(k.attainable_flops_per_s == Approx(std::min(1979e12, 4.8e12 * k.cost.intensity)));
  }
  CHECK_THROWS_AS(explain("a100-80gb", s), attnprof::InputError);
  CHECK_THROWS_WITH(explain("a100-80gb", s), "a100-80gb has no fp8_e4m3 roof in the datasheet table (fp8 tensor "
                                             "cores came with sm_89)");
}
