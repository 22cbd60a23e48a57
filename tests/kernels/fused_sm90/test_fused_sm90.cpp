// kernels/fused_sm90/fused_sm90.cu (and its per-head-dim instantiations fused_sm90_d*.cu): the Hopper
// kernel (TMA, wgmma, warp-specialised) against float64 with each schedule on an sm_90 device; what it
// cannot run is refused with a reason everywhere. A GPU test: exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include "kernels/cuda_kernel_check.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::Shape;
using namespace attnprof::gpu_test;

uint64_t g_seed = 0;

}  // namespace

TEST_CASE("fused-sm90 matches float64 with every schedule on sm_90") {
  if (!device_is_sm90()) {
    WARN("not an sm_90 device: the schedules are not run");
    return;
  }
  const auto& sm90 = cuda_kernel("fused-sm90");
  uint64_t seed = g_seed;
  for (const char* schedule : {"overlap", "pingpong", "serial"}) {
    ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", schedule);
    for (int64_t hdim : {64, 128, 256})
      for (bool causal : {false, true}) {
        INFO(schedule);
        check_matches_float64(sm90, make_shape(2, 4, 2, 300, 300, hdim, causal, DType::bf16), ++seed);
        check_matches_float64(sm90, make_shape(1, 2, 1, 129, 1000, hdim, causal, DType::fp16), ++seed);
      }
  }
  // More work tiles than SMs: the persistent grid's CTAs each take several.
  check_matches_float64(sm90, make_shape(4, 16, 4, 1000, 1000, 128, true, DType::bf16), ++seed);
}

TEST_CASE("fused-sm90 refuses fp32, unsupported head dims and an unknown schedule, and never launches them") {
  const auto& sm90 = cuda_kernel("fused-sm90");
  CHECK_FALSE(sm90.unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::fp32)).empty());
  CHECK_FALSE(sm90.unsupported_reason(make_shape(1, 2, 2, 64, 64, 80, false, DType::bf16)).empty());
  CHECK_FALSE(sm90.unsupported_reason(make_shape(1, 2, 2, 64, 64, 512, false, DType::fp16)).empty());
  {
    ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", "nonsense");
    CHECK_FALSE(sm90.unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::bf16)).empty());
  }
  const Shape bad = make_shape(1, 1, 1, 16, 16, 80, false, DType::bf16);
  attnprof::kernels::CudaProblem problem(bad, 0);
  CHECK_THROWS(sm90.launch(problem.args(nullptr)));
}

int main(int argc, char** argv) { return run_session("test_fused_sm90 (CUDA)", argc, argv, g_seed); }
