// kernels/fused_sm90/fused_sm90_bwd.cu (the backward's main stage on wgmma, fused_sm90_bwd_kernel.cuh)
// through fused-sm90's backward: dQ, dK and dV of small problems against the float64 backward of
// tests/kernels/backward_support.hpp on an sm_90 device, at hdim 64 and 128, bf16 and fp16, causal or
// not (bottom-right, seq_q above and below seq_k), grouped-query heads, sliding windows, lengths that are
// and are not multiples of the tiles; fwd_bwd, and bwd alone on the forward's O and LSE. What it does
// not run is refused with a reason everywhere. A GPU test: exits 77 without a CUDA device.
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

void check_backward(const Shape& shape, uint64_t seed) { backward::check_backward("fused-sm90", shape, seed); }

}  // namespace

TEST_CASE("fused-sm90 backward matches float64 at hdim 64 and 128, bf16 and fp16") {
  if (!device_is_sm90()) {
    WARN("not an sm_90 device: the backward is not run");
    return;
  }
  check_dense_backward_suite("fused-sm90", g_seed);
}

TEST_CASE("fused-sm90 backward with sliding windows") {
  if (!device_is_sm90()) {
    WARN("not an sm_90 device: the backward is not run");
    return;
  }
  uint64_t seed = g_seed + 1000;
  for (int64_t hdim : {64, 128})
    for (bool causal : {false, true}) {
      check_backward(with_window(make_shape(1, 4, 2, 200, 200, hdim, causal, DType::bf16), 33), ++seed);
      check_backward(with_window(make_shape(1, 2, 1, 150, 290, hdim, causal, DType::fp16), 100), ++seed);
    }
}

TEST_CASE("fused-sm90 backward: its stages, plan and workspace; what it does not run is refused with a reason") {
  const kn::Kernel& sm90 = cuda_kernel("fused-sm90");
  CHECK(sm90.runs_backward());
  Shape s = make_shape(2, 8, 2, 512, 512, 128, true, DType::bf16);
  s.pass = Pass::bwd;
  CHECK(sm90.stage_names(s) == std::vector<std::string>{"bwd_preprocess", "bwd_main", "bwd_dq_convert"});
  CHECK(sm90.plan(s).at("dq_atomic") == 1);
  CHECK(sm90.plan(s).at("bwd_block_n") == 128);
  CHECK(sm90.plan(s).at("bwd_block_m") == 64);  // 128 query rows per step at hdim 64
  Shape s64 = s;
  s64.hdim = 64;
  CHECK(sm90.plan(s64).at("bwd_block_m") == 128);
  // dq_accum (fp32, as Q) plus LSE and D per row of Q.
  CHECK(sm90.workspace_bytes(s) == static_cast<size_t>((s.q_elems() + 2 * s.lse_elems()) * 4));
  if (device_is_sm90()) {
    const std::vector<kn::LaunchInfo> infos = sm90.launch_info(s);
    REQUIRE(infos.size() == 3);
    CHECK(infos[1].kernel_name.find("fused_sm90_bwd_main_kernel") == 0);
    CHECK(infos[1].grid_blocks == 4 * 2 * 2);  // 512 keys in blocks of 128, batch 2, 2 kv heads
  }
  s.pass = Pass::fwd_bwd;
  CHECK(sm90.stage_names(s) == std::vector<std::string>{"fwd", "bwd_preprocess", "bwd_main", "bwd_dq_convert"});
  s.pass = Pass::fwd;
  CHECK(sm90.stage_names(s) == std::vector<std::string>{"fused-sm90"});
  CHECK(sm90.plan(s).empty());
  for (int64_t hdim : {32, 96, 192, 256}) {
    Shape other = make_shape(1, 2, 2, 64, 64, hdim, false, DType::bf16);
    other.pass = Pass::bwd;
    const std::string why = sm90.unsupported_reason(other);
    INFO(why);
    CHECK(why.find("backward runs hdim 64 and 128") != std::string::npos);
  }
  Shape fp8 = make_shape(1, 2, 2, 64, 64, 128, false, DType::fp8_e4m3);
  fp8.pass = Pass::bwd;
  CHECK(sm90.unsupported_reason(fp8).find("backward runs fp16 and bf16") != std::string::npos);
}

int main(int argc, char** argv) { return run_session("test_fused_sm90_bwd (CUDA)", argc, argv, g_seed); }
