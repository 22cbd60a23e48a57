// GPU correctness of the decode kernel (kernels/decode/) and of paged KV caches: "decode" against the
// float64 reference with the 2x-naive rule at seq_q 1-16, GQA groups 1-8 (and 7), hdim 64 and 128,
// causal or not, ragged seq_k, forced and heuristic split counts, contiguous and paged K/V (page sizes
// that do and do not divide the key tile; the pad of each last page holds NaN); a quantized KV cache
// (fp8 E4M3 and int8 at every scale granularity, over the same shapes, pages, split counts and
// windows); the reference's gather of a paged cache; and a shape of 2^31 elements per K and V tensor
// through every kernel that takes it. Outputs are poisoned before every call. Exits 77 (skipped) when
// no CUDA device is present.
// Seed: fresh per run and printed; ATTNPROF_TEST_SEED=<n> replays one.
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/shape.hpp"
#include "gpu_test_support.hpp"
#include "kernels/common/testbed.hpp"
#include "kernels/decode/decode_plan.hpp"
#include "kernels/registry.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::KvDType;
using attnprof::core::KvScale;
using attnprof::core::Shape;
using attnprof::core::Verification;
namespace kernels = attnprof::kernels;
using attnprof::gpu_test::make_shape;

uint64_t g_seed = 0;
constexpr int kMaxRowsChecked = 96;

const kernels::Kernel& kernel_named(const char* name) {
  const kernels::Kernel* k = kernels::find(kernels::Backend::cuda, name);
  REQUIRE(k != nullptr);
  return *k;
}

Verification run_case(const kernels::Kernel& kernel, const Shape& s, uint64_t seed) {
  REQUIRE(kernels::support_reason(kernel, s).empty());
  kernels::CudaProblem problem(s, kernel.workspace_bytes(s));
  problem.fill_inputs(seed, nullptr);
  problem.poison_outputs(nullptr);
  kernel.launch(problem.args(nullptr));
  return problem.verify(seed, kMaxRowsChecked, nullptr);
}

void check_case(const kernels::Kernel& kernel, const Shape& s) {
  const Verification v = run_case(kernel, s, g_seed);
  INFO(kernel.name() << " " << s.label() << ": max err " << v.o_max_abs_err << " (tolerance " << v.tolerance
                     << "), lse err " << v.lse_max_abs_err << ", unwritten " << v.unwritten);
  CHECK(v.checked);
  CHECK(v.unwritten == 0);
  CHECK(v.passed);
}

// `s` with its K and V stored quantized.
Shape quantized(Shape s, KvDType kv, KvScale scale) {
  s.kv_dtype = kv;
  s.kv_scale = scale;
  s.validate();
  return s;
}

// A quantized cache's call: within tolerance of the float64 attention of the stored values, every
// output written, and the quantization's own cost measured (the stored values differ from the inputs).
void check_quantized_case(const kernels::Kernel& kernel, const Shape& s, uint64_t seed) {
  const Verification v = run_case(kernel, s, seed);
  INFO(kernel.name() << " " << s.label() << " seed " << seed << ": max err " << v.o_max_abs_err << " (tolerance "
                     << v.tolerance << "), lse err " << v.lse_max_abs_err << ", unwritten " << v.unwritten
                     << ", quantization " << v.quant.o_max_abs_err);
  CHECK(v.checked);
  CHECK(v.unwritten == 0);
  CHECK(v.passed);
  CHECK(v.quant.checked);
  CHECK(v.quant.o_max_abs_err > 0);
}

// Decode and speculative-decoding shapes: ragged seq_k (no tile divides 1, 17, 1000, 4097), groups of
// 1, 4, 7 and 8 query heads per kv head, 16 positions x 8 heads (two row blocks of 32), and seq_q >
// seq_k with the causal mask (rows that see no key).
std::vector<Shape> decode_shapes(int64_t hdim, bool causal, DType dtype, int64_t page_size) {
  return {
      make_shape(1, 1, 1, 1, 1, hdim, causal, dtype, page_size),
      make_shape(2, 4, 1, 1, 17, hdim, causal, dtype, page_size),
      make_shape(3, 32, 8, 1, 1000, hdim, causal, dtype, page_size),
      make_shape(1, 28, 4, 1, 4097, hdim, causal, dtype, page_size),
      make_shape(2, 8, 8, 1, 33000, hdim, causal, dtype, page_size),
      make_shape(2, 16, 4, 3, 777, hdim, causal, dtype, page_size),
      make_shape(1, 64, 8, 16, 2049, hdim, causal, dtype, page_size),
      make_shape(2, 8, 2, 16, 5, hdim, causal, dtype, page_size),
  };
}

}  // namespace

TEST_CASE("decode matches float64: contiguous K/V, every dtype, head dim and mask") {
  const kernels::Kernel& decode = kernel_named("decode");
  for (DType dtype : {DType::bf16, DType::fp16})
    for (int64_t hdim : {64, 128})
      for (bool causal : {false, true})
        for (const Shape& s : decode_shapes(hdim, causal, dtype, 0)) check_case(decode, s);
}

TEST_CASE("decode matches float64 from a shuffled paged cache, page sizes that do and do not divide the tile") {
  const kernels::Kernel& decode = kernel_named("decode");
  for (int64_t page : {16, 64, 100, 256})
    for (bool causal : {false, true})
      for (const Shape& s : decode_shapes(128, causal, DType::bf16, page)) check_case(decode, s);
  for (const Shape& s : decode_shapes(64, true, DType::fp16, 16)) check_case(decode, s);
}

TEST_CASE("decode matches float64 at every forced split count, including one split and more than the heuristic") {
  const kernels::Kernel& decode = kernel_named("decode");
  for (int64_t splits : {1, 2, 3, 7, 64, 128}) {
    check_case(decode, make_shape(2, 32, 8, 1, 8191, 128, true, DType::bf16, 0, splits));
    check_case(decode, make_shape(1, 16, 2, 4, 3000, 64, true, DType::fp16, 64, splits));
    // Pages of four tiles: most splits start inside a page.
    check_case(decode, make_shape(1, 16, 2, 4, 3000, 64, true, DType::fp16, 256, splits));
  }
  // The plan records what ran: the forced count (capped by the tiles), else the heuristic's.
  CHECK(decode.plan(make_shape(1, 32, 8, 1, 8192, 128, false, DType::bf16, 0, 5)).at("kv_splits") == 5);
  CHECK(decode.plan(make_shape(1, 32, 8, 1, 100, 128, false, DType::bf16, 0, 9)).at("kv_splits") == 2);
  CHECK(decode.plan(make_shape(1, 32, 8, 1, 32768, 128, false, DType::bf16)).at("kv_splits") > 8);
  // One launch whatever the split count: the last split of each row block combines in the same launch.
  CHECK(decode.stage_names(make_shape(1, 32, 8, 1, 32768, 128, false, DType::bf16)).size() == 1);
  CHECK(decode.launch_info(make_shape(1, 32, 8, 1, 32768, 128, false, DType::bf16)).size() == 1);
  CHECK(decode.stage_names(make_shape(1, 32, 8, 1, 8192, 128, false, DType::bf16, 0, 1)).size() == 1);
}

TEST_CASE("decode's split counters are back at zero after every call: repeated calls on one workspace verify") {
  const kernels::Kernel& decode = kernel_named("decode");
  for (const Shape& s : {make_shape(1, 32, 8, 1, 8192, 128, false, DType::bf16),
                         make_shape(3, 64, 8, 16, 2049, 64, true, DType::fp16, 0, 7)}) {
    INFO(s.label());
    const size_t bytes = decode.workspace_bytes(s);
    REQUIRE(bytes > 0);
    kernels::CudaProblem problem(s, bytes);
    const kernels::AttentionArgs args = problem.args(nullptr);
    REQUIRE(decode.plan(s).at("kv_splits") > 1);
    const std::map<std::string, int64_t> plan = decode.plan(s);
    const int64_t m_blocks = (plan.at("packed_rows") + plan.at("block_m") - 1) / plan.at("block_m");
    const auto counters = static_cast<size_t>(s.batch * s.kv_heads * m_blocks);  // at the workspace's end
    for (int call = 0; call < 4; ++call) {
      const uint64_t seed = g_seed + static_cast<uint64_t>(call);
      problem.fill_inputs(seed, nullptr);
      problem.poison_outputs(nullptr);
      decode.launch(args);
      const Verification v = problem.verify(seed, kMaxRowsChecked, nullptr);
      INFO("call " << call << ": max err " << v.o_max_abs_err << ", unwritten " << v.unwritten);
      CHECK(v.passed);
      CHECK(v.unwritten == 0);
      std::vector<uint32_t> host(counters, 1u);
      REQUIRE(cudaMemcpy(host.data(), static_cast<const unsigned char*>(args.workspace) + bytes - counters * sizeof(uint32_t),
                         counters * sizeof(uint32_t), cudaMemcpyDeviceToHost) == cudaSuccess);
      CHECK(std::count(host.begin(), host.end(), 0u) == static_cast<long>(counters));
    }
  }
}

TEST_CASE("decode reads a quantized KV cache: fp8 E4M3 and int8, every scale, head dim, mask and GQA group") {
  const kernels::Kernel& decode = kernel_named("decode");
  REQUIRE(decode.reads_quantized_kv());
  uint64_t seed = g_seed;
  for (KvDType kv : {KvDType::fp8_e4m3, KvDType::int8})
    for (KvScale scale : {KvScale::tensor, KvScale::head, KvScale::token})
      for (int64_t hdim : {64, 128})
        for (bool causal : {false, true})
          for (const Shape& s : decode_shapes(hdim, causal, hdim == 64 ? DType::fp16 : DType::bf16, 0))
            check_quantized_case(decode, quantized(s, kv, scale), ++seed);
}

TEST_CASE("decode reads a quantized KV cache from a shuffled paged cache, at forced split counts and with windows") {
  const kernels::Kernel& decode = kernel_named("decode");
  uint64_t seed = g_seed + 100000;
  for (KvDType kv : {KvDType::fp8_e4m3, KvDType::int8}) {
    const auto check = [&](const Shape& s, KvScale scale) {
      check_quantized_case(decode, quantized(s, kv, scale), ++seed);
    };
    // Pages of whole tiles (64, 256) and of part of one (16, 100); per-token scales follow the pages.
    for (int64_t page : {16, 64, 100, 256}) {
      for (const Shape& s : decode_shapes(128, true, DType::bf16, page)) check(s, KvScale::token);
      for (const Shape& s : decode_shapes(64, false, DType::fp16, page)) check(s, KvScale::head);
    }
    // One split (the CTA writes O), and more than the heuristic's (the last split combines); one and
    // two MMA tiles.
    for (int64_t splits : {1, 2, 3, 7, 64, 128}) {
      check(make_shape(2, 32, 8, 1, 8191, 128, true, DType::bf16, 0, splits), KvScale::token);
      check(make_shape(1, 16, 2, 4, 3000, 64, true, DType::fp16, 64, splits), KvScale::head);
      check(make_shape(1, 64, 8, 16, 2049, 128, false, DType::bf16, 256, splits), KvScale::token);
      check(make_shape(2, 16, 4, 3, 777, 128, true, DType::fp16, 16, splits), KvScale::tensor);
    }
    for (int64_t window : {1, 100, 4096})
      for (int64_t page : {0, 100}) {
        check(make_shape(3, 32, 8, 1, 1000, 128, false, DType::bf16, page, 0, window), KvScale::token);
        check(make_shape(1, 64, 8, 16, 2049, 64, true, DType::fp16, page, 0, window), KvScale::head);
      }
  }
  // The plan and launch of a quantized point: its own stages and shared memory, swizzled rows.
  const Shape s = quantized(make_shape(1, 32, 8, 1, 32768, 128, false, DType::bf16), KvDType::int8, KvScale::token);
  CHECK(decode.plan(s).at("stages") == attnprof::kernels::decode::kStagesQuant);
  CHECK(decode.plan(s).at("smem_swizzled") == 1);
  REQUIRE(decode.launch_info(s).size() == 1);
  CHECK(decode.launch_info(s).front().kernel_name.find(", kv int8") != std::string::npos);
  CHECK(decode.launch_info(s).front().dynamic_smem_bytes == attnprof::kernels::decode::smem_bytes_quant(1, 128));
}

TEST_CASE("decode with a quantized cache: split counters back at zero after every call on one workspace") {
  const kernels::Kernel& decode = kernel_named("decode");
  const Shape s = quantized(make_shape(1, 32, 8, 1, 8192, 128, false, DType::bf16), KvDType::fp8_e4m3, KvScale::token);
  const size_t bytes = decode.workspace_bytes(s);
  REQUIRE(bytes > 0);
  kernels::CudaProblem problem(s, bytes);
  const kernels::AttentionArgs args = problem.args(nullptr);
  const std::map<std::string, int64_t> plan = decode.plan(s);
  REQUIRE(plan.at("kv_splits") > 1);
  const int64_t m_blocks = (plan.at("packed_rows") + plan.at("block_m") - 1) / plan.at("block_m");
  const auto counters = static_cast<size_t>(s.batch * s.kv_heads * m_blocks);  // at the workspace's end
  for (int call = 0; call < 3; ++call) {
    const uint64_t seed = g_seed + 200000 + static_cast<uint64_t>(call);
    problem.fill_inputs(seed, nullptr);
    problem.poison_outputs(nullptr);
    decode.launch(args);
    const Verification v = problem.verify(seed, kMaxRowsChecked, nullptr);
    INFO("call " << call << ": max err " << v.o_max_abs_err << ", unwritten " << v.unwritten);
    CHECK(v.passed);
    CHECK(v.unwritten == 0);
    std::vector<uint32_t> host(counters, 1u);
    const auto* counters_at = static_cast<const unsigned char*>(args.workspace) + bytes - counters * sizeof(uint32_t);
    REQUIRE(cudaMemcpy(host.data(), counters_at, counters * sizeof(uint32_t), cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(std::count(host.begin(), host.end(), 0u) == static_cast<long>(counters));
  }
}

// ATTNPROF_DECODE_CONFIG for the duration of a scope.
struct ScopedDecodeConfig {
  explicit ScopedDecodeConfig(const char* value) { setenv("ATTNPROF_DECODE_CONFIG", value, 1); }
  ~ScopedDecodeConfig() { unsetenv("ATTNPROF_DECODE_CONFIG"); }
};

TEST_CASE("decode with padded shared-memory rows matches float64: contiguous and paged, split and not") {
  const kernels::Kernel& decode = kernel_named("decode");
  const Shape probe = make_shape(1, 32, 8, 1, 8192, 128, false, DType::bf16);
  CHECK(decode.plan(probe).at("smem_swizzled") == 1);  // the default
  CHECK(decode.launch_info(probe).front().kernel_name.find("padded") == std::string::npos);
  const ScopedDecodeConfig padded("padded");
  CHECK(decode.plan(probe).at("smem_swizzled") == 0);
  CHECK(decode.launch_info(probe).front().kernel_name.find(", padded>") != std::string::npos);
  for (DType dtype : {DType::bf16, DType::fp16})
    for (int64_t hdim : {64, 128})
      for (bool causal : {false, true})
        for (const Shape& s : decode_shapes(hdim, causal, dtype, 0)) check_case(decode, s);
  for (int64_t page : {16, 64, 100})
    for (const Shape& s : decode_shapes(128, true, DType::bf16, page)) check_case(decode, s);
  for (int64_t splits : {1, 3, 64}) check_case(decode, make_shape(2, 32, 8, 1, 8191, 128, true, DType::bf16, 0, splits));
}

TEST_CASE("an unknown ATTNPROF_DECODE_CONFIG makes every decode point unsupported, naming it") {
  const kernels::Kernel& decode = kernel_named("decode");
  const ScopedDecodeConfig bad("diagonal");
  const std::string why = kernels::support_reason(decode, make_shape(1, 32, 8, 1, 8192, 128, false, DType::bf16));
  CHECK(why == "ATTNPROF_DECODE_CONFIG='diagonal' is not one of swizzled, padded");
}

TEST_CASE("the reference gathers a paged cache and matches float64") {
  const kernels::Kernel& reference = kernel_named("reference");
  CHECK(reference.stage_names(make_shape(1, 8, 2, 1, 100, 64, false, DType::bf16, 16)).front() == "gather_kv");
  for (int64_t page : {16, 100})
    for (const Shape& s : decode_shapes(128, true, DType::bf16, page)) check_case(reference, s);
}

TEST_CASE("kernels that read contiguous K/V only refuse a paged shape, and only decode takes kv_splits") {
  const Shape paged = make_shape(1, 8, 2, 1, 1000, 128, false, DType::bf16, 64);
  const Shape split = make_shape(1, 8, 2, 1, 1000, 128, false, DType::bf16, 0, 4);
  for (const char* name : {"fused", "fused-sm90"}) {
    const kernels::Kernel* k = kernels::find(kernels::Backend::cuda, name);
    if (k == nullptr) continue;
    CHECK(kernels::support_reason(*k, paged).find("paged") != std::string::npos);
    CHECK(kernels::support_reason(*k, split).find("kv_splits") != std::string::npos);
  }
  CHECK(kernels::support_reason(kernel_named("decode"), make_shape(1, 8, 2, 17, 17, 128, true, DType::bf16))
            .find("seq_q") != std::string::npos);
}

TEST_CASE("fused-auto runs decode at decode shapes and a prefill kernel at prefill shapes") {
  const kernels::Kernel& autok = kernel_named("fused-auto");
  const Shape decode_shape = make_shape(4, 32, 8, 1, 5000, 128, false, DType::bf16, 64);
  REQUIRE(!autok.launch_info(decode_shape).empty());
  CHECK(autok.launch_info(decode_shape).front().kernel_name.find("decode_split_kernel") == 0);
  check_case(autok, decode_shape);
  const Shape prefill = make_shape(1, 8, 2, 300, 300, 128, true, DType::bf16);
  REQUIRE(!autok.launch_info(prefill).empty());
  CHECK(autok.launch_info(prefill).front().kernel_name.find("decode") == std::string::npos);
}

TEST_CASE("2^31 elements per K and V tensor: 64 sequences of 32k keys run and match float64") {
  // K and V are 4 GiB each in bf16; Q, O tiny. Offsets past 2^31 elements in every kernel that runs it.
  const Shape big = make_shape(64, 32, 8, 1, 32768, 128, true, DType::bf16);
  REQUIRE(big.kv_elems() == int64_t{1} << 31);
  size_t free_bytes = 0, total_bytes = 0;
  REQUIRE(cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess);
  if (free_bytes < (size_t{20} << 30)) {
    WARN("fewer than 20 GiB free: the 2^31-element case is skipped");
    return;
  }
  for (const char* name : {"decode", "fused", "fused-sm90", "reference"}) {
    const kernels::Kernel* k = kernels::find(kernels::Backend::cuda, name);
    if (k == nullptr || !kernels::support_reason(*k, big).empty()) continue;
    check_case(*k, big);
  }
  Shape paged = big;
  paged.page_size = 64;
  check_case(kernel_named("decode"), paged);
}

TEST_CASE("decode with a sliding window matches float64, contiguous and paged, its splits covering only the window") {
  const kernels::Kernel& decode = kernel_named("decode");
  for (bool causal : {false, true})
    for (int64_t window : {1, 64, 100, 4096, 40000})
      for (int64_t page : {0, 16, 100, 256}) {
        check_case(decode, make_shape(3, 32, 8, 1, 1000, 128, causal, DType::bf16, page, 0, window));
        check_case(decode, make_shape(2, 16, 4, 3, 777, 64, causal, DType::fp16, page, 0, window));
        check_case(decode, make_shape(1, 64, 8, 16, 2049, 128, causal, DType::bf16, page, 0, window));
        check_case(decode, make_shape(2, 8, 8, 1, 33000, 64, causal, DType::fp16, page, 0, window));
      }
  for (int64_t splits : {1, 2, 7})
    check_case(decode, make_shape(2, 32, 8, 1, 8191, 128, true, DType::bf16, 0, splits, 1000));
  // 32k keys, window 4096: the plan streams 64 tiles from tile 448 on.
  const auto plan = decode.plan(make_shape(1, 32, 8, 1, 32768, 128, true, DType::bf16, 0, 0, 4096));
  CHECK(plan.at("first_key_tile") == 448);
  CHECK(plan.at("kv_splits") * plan.at("tiles_per_split") >= 64);
  CHECK((plan.at("kv_splits") - 1) * plan.at("tiles_per_split") < 64);
  const Shape windowed = make_shape(4, 32, 8, 1, 5000, 128, true, DType::bf16, 64, 0, 512);
  check_case(kernel_named("fused-auto"), windowed);
  check_case(kernel_named("reference"), windowed);
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_gpu_decode", argc, argv, g_seed); }
