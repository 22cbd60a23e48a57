// kernels/fused/fused.cu's backward pass (fused_bwd_kernel.cuh, fused_bwd_d64.cu, fused_bwd_d128.cu):
// dQ, dK and dV of small problems against the float64 backward of tests/kernels/backward_support.hpp,
// at hdim 64 and 128, bf16 and fp16, causal or not (bottom-right, seq_q above and below seq_k),
// grouped-query heads, sliding windows and packed batches, lengths that are and are not multiples of the
// tiles; fwd_bwd, and bwd alone on the forward's O and LSE. Prints each problem's max errors. A GPU
// test: exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/backward_support.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::Pass;
using attnprof::core::Shape;
using namespace attnprof::gpu_test;
using namespace attnprof::gpu_test::backward;
namespace kn = attnprof::kernels;

uint64_t g_seed = 0;

void check_backward(const Shape& shape, uint64_t seed) { backward::check_backward("fused", shape, seed); }

}  // namespace

TEST_CASE("fused backward matches float64 at hdim 64 and 128, bf16 and fp16") {
  check_dense_backward_suite("fused", g_seed);
}

TEST_CASE("fused backward with sliding windows and packed batches") {
  uint64_t seed = g_seed + 1000;
  for (int64_t hdim : {64, 128})
    for (bool causal : {false, true}) {
      check_backward(with_window(make_shape(1, 4, 2, 200, 200, hdim, causal, DType::bf16), 33), ++seed);
      check_backward(with_window(make_shape(1, 2, 1, 150, 290, hdim, causal, DType::bf16), 100), ++seed);
      check_backward(make_packed({1, 130, 64, 257}, 4, 2, hdim, causal, DType::bf16), ++seed);
      check_backward(make_packed({300, 7, 129}, 2, 1, hdim, causal, DType::fp16, 50), ++seed);
    }
}

TEST_CASE("fused backward: its stages, plan and workspace; other head dims refused with a reason") {
  const kn::Kernel& fused = cuda_kernel("fused");
  CHECK(fused.runs_backward());
  Shape s = make_shape(2, 8, 2, 512, 512, 128, true, DType::bf16);
  s.pass = Pass::bwd;
  CHECK(fused.stage_names(s) == std::vector<std::string>{"bwd_preprocess", "bwd_main", "bwd_dq_convert"});
  CHECK(fused.launch_info(s).size() == 3);
  CHECK(fused.plan(s).at("dq_atomic") == 1);
  // dq_accum (fp32, as Q) plus LSE and D per row of Q.
  CHECK(fused.workspace_bytes(s) == static_cast<size_t>((s.q_elems() + 2 * s.lse_elems()) * 4));
  s.pass = Pass::fwd_bwd;
  CHECK(fused.stage_names(s).size() == 4);
  CHECK(fused.launch_info(s).size() == 4);
  s.pass = Pass::fwd;
  CHECK(fused.workspace_bytes(s) == 0);
  CHECK(fused.stage_names(s).size() == 1);
  for (int64_t hdim : {32, 96, 192, 256}) {
    Shape other = make_shape(1, 2, 2, 64, 64, hdim, false, DType::bf16);
    CHECK(kn::support_reason(fused, other).empty());
    other.pass = Pass::bwd;
    const std::string why = kn::support_reason(fused, other);
    INFO(why);
    CHECK(why.find("backward runs hdim 64 and 128") != std::string::npos);
  }
}

int main(int argc, char** argv) { return run_session("test_fused_bwd_kernel (CUDA)", argc, argv, g_seed); }
