// kernels/decode/decode.cu: the split-KV decode kernel against float64 on contiguous and paged caches,
// at its own split count and at forced ones; its split counters back at zero after every call; prefill
// shapes refused. A GPU test: exits 77 without a CUDA device. (The plan it follows, decode_plan.hpp, is
// tested on the host in test_decode_plan.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/cuda_kernel_check.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::Shape;
using namespace attnprof::gpu_test;

uint64_t g_seed = 0;

}  // namespace

TEST_CASE("decode matches float64, contiguous and paged, at its own and at forced split counts") {
  const auto& decode = cuda_kernel("decode");
  CHECK(decode.reads_paged_kv());
  CHECK(decode.splits_kv());
  uint64_t seed = g_seed;
  for (int64_t page_size : {0, 16, 48})
    for (int64_t hdim : {64, 128})
      for (bool causal : {false, true}) {
        check_matches_float64(decode, make_shape(3, 32, 8, 1, 1000, hdim, causal, DType::bf16, page_size), ++seed);
        check_matches_float64(decode, make_shape(2, 16, 4, 4, 4097, hdim, causal, DType::fp16, page_size), ++seed);
      }
  for (int64_t splits : {1, 2, 7, 64})
    check_matches_float64(decode, make_shape(2, 8, 2, 1, 3000, 128, false, DType::bf16, 0, splits), ++seed);
}

TEST_CASE("decode and reference read a quantized KV cache: fp8 E4M3 and int8, every scale granularity") {
  using attnprof::core::KvDType;
  using attnprof::core::KvScale;
  const auto& decode = cuda_kernel("decode");
  const auto& reference = cuda_kernel("reference");
  CHECK(decode.reads_quantized_kv());
  uint64_t seed = g_seed + 1000;
  for (KvDType kv : {KvDType::fp8_e4m3, KvDType::int8})
    for (KvScale scale : {KvScale::tensor, KvScale::head, KvScale::token})
      for (int64_t page_size : {0, 16, 64}) {
        Shape a = make_shape(3, 32, 8, 1, 1000, 128, false, DType::bf16, page_size);
        Shape b = make_shape(2, 16, 4, 4, 4097, 64, true, DType::fp16, page_size);
        Shape c = make_shape(2, 8, 2, 1, 3000, 128, false, DType::bf16, page_size, 7);  // split, combined
        for (Shape* s : {&a, &b, &c}) {
          s->kv_dtype = kv;
          s->kv_scale = scale;
          const attnprof::core::Verification v = run_checked(decode, *s, ++seed);
          INFO(s->label() << ": O max err " << v.o_max_abs_err << " (tolerance " << v.tolerance << "), quantization "
                          << v.quant.o_max_abs_err);
          CHECK(v.passed);
          CHECK(v.quant.checked);
          CHECK(v.quant.o_max_abs_err > 0);
        }
        check_matches_float64(reference, a, ++seed);
      }
}

TEST_CASE("decode: the split counters are zero again after every call on one workspace") {
  const auto& decode = cuda_kernel("decode");
  const Shape s = make_shape(1, 32, 8, 1, 8192, 128, false, DType::bf16);
  const std::map<std::string, int64_t> plan = decode.plan(s);
  REQUIRE(plan.at("kv_splits") > 1);
  const size_t bytes = decode.workspace_bytes(s);
  attnprof::kernels::CudaProblem problem(s, bytes);
  const attnprof::kernels::AttentionArgs args = problem.args(nullptr);
  const int64_t m_blocks = (plan.at("packed_rows") + plan.at("block_m") - 1) / plan.at("block_m");
  const auto counters = static_cast<size_t>(s.batch * s.kv_heads * m_blocks);  // at the workspace's end
  for (int call = 0; call < 3; ++call) {
    const uint64_t seed = g_seed + 100 + static_cast<uint64_t>(call);
    problem.fill_inputs(seed, nullptr);
    problem.poison_outputs(nullptr);
    decode.launch(args);
    CHECK(problem.verify(seed, kRowsChecked, nullptr).passed);
    std::vector<uint32_t> host(counters, 1u);
    REQUIRE(cudaMemcpy(host.data(),
                       static_cast<const unsigned char*>(args.workspace) + bytes - counters * sizeof(uint32_t),
                       counters * sizeof(uint32_t), cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(std::count(host.begin(), host.end(), 0u) == static_cast<long>(counters));
  }
}

TEST_CASE("decode refuses prefill shapes with a reason") {
  const auto& decode = cuda_kernel("decode");
  CHECK_FALSE(decode.unsupported_reason(make_shape(1, 8, 8, 1024, 1024, 128, true, DType::bf16)).empty());
  CHECK_FALSE(decode.unsupported_reason(make_shape(1, 8, 8, 1, 1024, 128, false, DType::fp32)).empty());
}

int main(int argc, char** argv) { return run_session("test_decode (CUDA)", argc, argv, g_seed); }
