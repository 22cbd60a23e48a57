// kernels/reference/reference.cu: the materialised CUDA reference (QK^T, softmax, PV as three
// launches) against float64 on ragged, GQA and causal shapes, with a value head dim of its own and a
// sliding window; fp32 refused with a reason; fp8 prefill within its per-element bound. A GPU test: exits 77
// without a CUDA device.
#include <catch2/catch.hpp>

#include "kernels/cuda_kernel_check.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::Shape;
using namespace attnprof::gpu_test;

uint64_t g_seed = 0;

}  // namespace

TEST_CASE("reference: three stages, and matches float64 on ragged, GQA and causal shapes") {
  const auto& reference = cuda_kernel("reference");
  CHECK(reference.stage_names(make_shape(1, 1, 1, 64, 64, 64, false, DType::bf16)).size() == 3);
  uint64_t seed = g_seed;
  for (DType dtype : {DType::bf16, DType::fp16})
    for (bool causal : {false, true})
      for (const Shape& s : {make_shape(1, 1, 1, 1, 1, 64, causal, dtype), make_shape(2, 4, 1, 17, 17, 128, causal, dtype),
                             make_shape(1, 4, 2, 100, 333, 96, causal, dtype),   // seq_k > seq_q
                             make_shape(2, 2, 2, 333, 100, 256, causal, dtype),  // causal rows that see no key
                             make_shape(1, 2, 1, 1025, 1025, 32, causal, dtype)})
        check_matches_float64(reference, s, ++seed);
}

TEST_CASE("reference: a value head dim of its own and a sliding window match float64; fp32 refused") {
  const auto& reference = cuda_kernel("reference");
  CHECK(reference.runs_distinct_hdim_v());
  Shape mla = make_shape(1, 4, 4, 130, 130, 192, true, DType::bf16);
  mla.hdim_v = 128;
  mla.validate();
  check_matches_float64(reference, mla, g_seed + 100);
  check_matches_float64(reference, make_shape(1, 2, 1, 300, 300, 64, true, DType::bf16, 0, 0, 33), g_seed + 101);
  CHECK_FALSE(reference.unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::fp32)).empty());
}

TEST_CASE("reference: fp8 prefill (Q, K and V in E4M3 dequantized to bf16, O in bf16) within each element's bound") {
  const auto& reference = cuda_kernel("reference");
  CHECK(reference.runs_fp8());
  uint64_t seed = g_seed + 200;
  for (bool causal : {false, true})
    for (const Shape& s : {make_shape(1, 2, 2, 64, 64, 64, causal, DType::fp8_e4m3),
                           make_shape(2, 8, 2, 200, 200, 128, causal, DType::fp8_e4m3),  // GQA
                           make_shape(1, 4, 1, 17, 300, 256, causal, DType::fp8_e4m3)}) {
      CHECK(reference.stage_names(s).front() == "dequant_qkv");
      const auto v = run_checked(reference, s, ++seed);
      INFO(s.label() << ": O max err " << v.o_max_abs_err << " (largest bound " << v.tolerance << ", worst ratio "
                     << v.o_max_bound_ratio.value_or(-1) << "), quantization " << v.quant.o_max_abs_err);
      CHECK(v.unwritten == 0);
      CHECK(v.passed);
      CHECK(v.o_max_bound_ratio.has_value());
      CHECK(v.quant.checked);
      CHECK(v.quant.o_max_abs_err > 0);
    }
  // The CUDA reference runs dense fp8 batches only.
  CHECK_FALSE(attnprof::kernels::support_reason(reference, make_packed({40, 9}, 2, 2, 64, true, DType::fp8_e4m3)).empty());
}

int main(int argc, char** argv) { return run_session("test_reference (CUDA)", argc, argv, g_seed); }
