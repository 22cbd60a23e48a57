// kernels/common/testbed.cu: the CUDA testbed's check catches what a wrong kernel leaves: outputs never
// written (poisoned), outputs written wrong, and passes a correct kernel's; it allocates what the shape
// needs, a paged shape's page pools and block table included, fp8 prefill's bytes, scales and bf16 O. A
// GPU test: exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <vector>

#include "kernels/common/quant.hpp"
#include "kernels/common/random.hpp"
#include "kernels/cuda_kernel_check.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::Shape;
using attnprof::kernels::CudaProblem;
using namespace attnprof::gpu_test;

uint64_t g_seed = 0;

}  // namespace

TEST_CASE("testbed: nothing written fails with every element unwritten; the reference's call passes") {
  const Shape s = make_shape(2, 4, 2, 70, 90, 64, true, DType::bf16);
  CudaProblem problem(s, cuda_kernel("reference"));
  problem.fill_inputs(g_seed, nullptr);
  problem.poison_outputs(nullptr);
  const attnprof::core::Verification none = problem.verify(g_seed, kRowsChecked, nullptr);
  CHECK(none.checked);
  CHECK_FALSE(none.passed);
  CHECK(none.unwritten == s.o_elems() + s.lse_elems());
  cuda_kernel("reference").launch(problem.args(nullptr));
  const attnprof::core::Verification v = problem.verify(g_seed, kRowsChecked, nullptr);
  CHECK(v.passed);
  CHECK(v.unwritten == 0);
  CHECK(v.rows_checked >= 1);
  CHECK(v.rows_checked <= s.lse_elems());
}

TEST_CASE("testbed: outputs written but wrong fail, with the error reported") {
  const Shape s = make_shape(1, 2, 2, 64, 64, 128, false, DType::fp16);
  CudaProblem problem(s, cuda_kernel("reference"));
  problem.fill_inputs(g_seed + 1, nullptr);
  const attnprof::kernels::AttentionArgs args = problem.args(nullptr);
  cuda_kernel("reference").launch(args);
  // Every O element set to 0.25 (fp16 bits 0x3400): written, finite, and wrong.
  const std::vector<uint16_t> quarter(static_cast<size_t>(s.o_elems()), 0x3400);
  REQUIRE(cudaMemcpy(args.o, quarter.data(), quarter.size() * sizeof(uint16_t), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  const attnprof::core::Verification v = problem.verify(g_seed + 1, kRowsChecked, nullptr);
  CHECK(v.unwritten == 0);
  CHECK_FALSE(v.passed);
  CHECK(v.o_max_abs_err > v.tolerance);
}

TEST_CASE("testbed: allocations cover the tensors, a paged shape's pools and its block table") {
  const Shape dense = make_shape(2, 8, 2, 100, 1000, 128, false, DType::bf16);
  const CudaProblem d(dense, 0);
  const size_t dense_bytes =
      2 * static_cast<size_t>(dense.q_elems() + dense.kv_elems() + dense.v_elems() + dense.o_elems()) +
      4 * static_cast<size_t>(dense.lse_elems());
  CHECK(d.allocated_bytes() >= dense_bytes);
  const Shape paged = make_shape(2, 8, 2, 1, 1000, 128, false, DType::bf16, 48);
  const CudaProblem p(paged, cuda_kernel("decode"));
  CHECK(p.allocated_bytes() >= 2 * static_cast<size_t>(paged.kv_buffer_elems() + paged.v_buffer_elems()) +
                                   4 * static_cast<size_t>(paged.block_table_elems()));
  check_matches_float64(cuda_kernel("decode"), paged, g_seed + 2);
}

TEST_CASE("testbed: fp8 prefill gets Q, K and V as E4M3 bytes with one scale each and O in bf16, poisoned") {
  const Shape s = make_shape(1, 4, 2, 96, 96, 64, true, DType::fp8_e4m3);
  CudaProblem problem(s, cuda_kernel("reference"));
  CHECK(problem.allocated_bytes() >= static_cast<size_t>(s.q_elems() + s.kv_elems() + s.v_elems()) + 3 * sizeof(float) +
                                         2 * static_cast<size_t>(s.o_elems()) + 4 * static_cast<size_t>(s.lse_elems()));
  problem.fill_inputs(g_seed + 3, nullptr);
  problem.poison_outputs(nullptr);
  const attnprof::kernels::AttentionArgs args = problem.args(nullptr);
  REQUIRE(args.q_scale != nullptr);
  REQUIRE(args.k_scale != nullptr);
  REQUIRE(args.v_scale != nullptr);
  // The scales uploaded are quant.hpp's static ones; every byte of Q is the quantizer's.
  float scales[3] = {0, 0, 0};
  REQUIRE(cudaMemcpy(&scales[0], args.q_scale, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(&scales[1], args.k_scale, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(&scales[2], args.v_scale, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (float x : scales) CHECK(x == attnprof::kernels::q_tensor_scale());
  std::vector<uint8_t> q(static_cast<size_t>(s.q_elems()));
  REQUIRE(cudaMemcpy(q.data(), args.q, q.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  int64_t mismatches = 0;
  for (size_t e = 0; e < q.size(); ++e)
    mismatches += q[e] != attnprof::kernels::quantize(attnprof::core::KvDType::fp8_e4m3,
                                                      attnprof::kernels::input_value(g_seed + 3, 0, e), scales[0]);
  CHECK(mismatches == 0);
  // Poisoned bf16 O: every element unwritten until the reference writes it.
  const attnprof::core::Verification none = problem.verify(g_seed + 3, kRowsChecked, nullptr);
  CHECK_FALSE(none.passed);
  CHECK(none.unwritten == s.o_elems() + s.lse_elems());
  cuda_kernel("reference").launch(args);
  const attnprof::core::Verification v = problem.verify(g_seed + 3, kRowsChecked, nullptr);
  CHECK(v.passed);
  CHECK(v.o_max_bound_ratio.has_value());
  CHECK(v.quant.checked);
}

int main(int argc, char** argv) { return run_session("test_testbed (CUDA)", argc, argv, g_seed); }
