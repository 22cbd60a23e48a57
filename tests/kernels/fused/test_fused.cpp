// kernels/fused/fused.cu (and its per-head-dim instantiations fused_d*.cu): the mma.sync fused kernel
// against float64 at every head dim, causal or not, in bf16 and fp16, with each tile variant where it
// exists; unsupported shapes and unknown variants refused with a reason, never computed wrong. A GPU
// test: exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/cuda_kernel_check.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::Shape;
using namespace attnprof::gpu_test;

uint64_t g_seed = 0;

}  // namespace

TEST_CASE("fused (fast tiles) matches float64 at every head dim it instantiates") {
  ScopedEnv env("ATTNPROF_FUSED_CONFIG", "fast");
  const auto& fused = cuda_kernel("fused");
  uint64_t seed = g_seed;
  for (int64_t hdim : {32, 64, 96, 128, 192, 256})
    for (DType dtype : {DType::bf16, DType::fp16})
      for (bool causal : {false, true}) {
        check_matches_float64(fused, make_shape(2, 4, 2, 130, 130, hdim, causal, dtype), ++seed);
        check_matches_float64(fused, make_shape(1, 2, 1, 77, 300, hdim, causal, dtype), ++seed);  // seq_k > seq_q
      }
}

TEST_CASE("fused: each tile variant matches float64 at the head dims it exists at") {
  const auto& fused = cuda_kernel("fused");
  struct VariantHdims {
    const char* variant;
    std::vector<int64_t> hdims;
  };
  const VariantHdims variants[] = {{"small", {64, 128}},      {"warps8", {64, 128}},     {"m64n32", {192, 256}},
                                   {"m64n64", {192, 256}},    {"padded", {64, 128, 192, 256}},
                                   {"m64n64sw", {192, 256}}};
  uint64_t seed = g_seed + 1000;
  for (const auto& v : variants) {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", v.variant);
    for (int64_t hdim : v.hdims) {
      INFO(v.variant);
      check_matches_float64(fused, make_shape(1, 3, 1, 257, 257, hdim, true, DType::bf16), ++seed);
    }
  }
}

TEST_CASE("fused: fp32, an uninstantiated head dim and an unknown variant are refused, and never launched") {
  const auto& fused = cuda_kernel("fused");
  CHECK_FALSE(fused.unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::fp32)).empty());
  CHECK_FALSE(fused.unsupported_reason(make_shape(1, 2, 2, 64, 64, 80, false, DType::bf16)).empty());
  {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", "nonsense");
    CHECK_FALSE(fused.unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::bf16)).empty());
  }
  const Shape bad = make_shape(1, 1, 1, 16, 16, 80, false, DType::bf16);
  attnprof::kernels::CudaProblem problem(bad, 0);
  CHECK_THROWS(fused.launch(problem.args(nullptr)));
}

int main(int argc, char** argv) { return run_session("test_fused (CUDA)", argc, argv, g_seed); }
