// measure/cuda/occupancy.cpp, its arithmetic (no GPU needed): the block limit each resource sets, the
// limiter that binds, a launch without a function, and the dominant launch of a call.
// Against the CUDA occupancy API on a device: tests/gpu/test_gpu_measure.cpp.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "measure/cuda/occupancy.hpp"

namespace {

namespace m = attnprof::measure;
namespace kernels = attnprof::kernels;

// sm_90's per-SM limits (H100 SXM, 132 SMs).
m::SmResources h100() {
  m::SmResources r;
  r.sm_count = 132;
  r.max_threads_per_sm = 2048;
  r.max_blocks_per_sm = 32;
  r.registers_per_sm = 65536;
  r.max_registers_per_block = 65536;
  r.smem_per_sm = 233472;
  r.smem_reserved_per_block = 1024;
  return r;
}

}  // namespace

TEST_CASE("the occupancy limiter is the resource whose block limit binds") {
  m::SmResources h100;  // sm_90 per-SM limits
  h100.sm_count = 132;
  h100.max_threads_per_sm = 2048;
  h100.max_blocks_per_sm = 32;
  h100.registers_per_sm = 65536;
  h100.max_registers_per_block = 65536;
  h100.smem_per_sm = 233472;
  h100.smem_reserved_per_block = 1024;
  // 128 threads x 255 registers: 4 warps x 8192 registers -> 2 blocks by registers.
  auto limits = m::block_limits(h100, 128, 255, 0);
  REQUIRE(limits.by_registers == 2);
  REQUIRE(m::limiter_of(limits, 2) == "registers");
  // 100 KiB of shared memory per block -> 2 blocks.
  limits = m::block_limits(h100, 128, 32, 100 * 1024);
  REQUIRE(limits.by_shared_memory == 2);
  REQUIRE(m::limiter_of(limits, 2) == "shared_memory");
  // 1024 threads -> 2 blocks by threads.
  limits = m::block_limits(h100, 1024, 16, 0);
  REQUIRE(limits.by_threads == 2);
  REQUIRE(m::limiter_of(limits, 2) == "threads");
  // 32 threads, nothing else binding -> 32 blocks by the block limit.
  limits = m::block_limits(h100, 32, 16, 0);
  REQUIRE(m::limiter_of(limits, 32) == "blocks");
}

TEST_CASE("occupancy_of: a launch without a function keeps its shape and asks the device nothing") {
  kernels::LaunchInfo launch;
  launch.kernel_name = "plugin_kernel";
  launch.block_threads = 128;
  launch.grid_blocks = 528;
  const attnprof::core::Occupancy occ = m::occupancy_of(launch, h100());
  CHECK(occ.kernel == "plugin_kernel");
  CHECK(occ.threads_per_block == 128);
  CHECK(occ.grid_blocks == 528);
  CHECK(occ.sm_count == 132);
  CHECK(occ.blocks_per_sm == 0);
  CHECK(occ.limiter.empty());
}

TEST_CASE("dominant_launch: the largest grid among launches with a function; none without") {
  static const int kFunctions[3] = {};  // stand-ins: dominant_launch only compares, never calls
  CHECK(m::dominant_launch({}) == nullptr);
  std::vector<kernels::LaunchInfo> launches(4);
  const char* names[] = {"qk_gemm", "softmax", "pv_gemm", "unknown"};
  const int64_t grids[] = {64, 4096, 64, 100000};
  for (size_t i = 0; i < launches.size(); ++i) {
    launches[i].kernel_name = names[i];
    launches[i].grid_blocks = grids[i];
    launches[i].func = i < 3 ? &kFunctions[i] : nullptr;  // the largest grid has no function
  }
  const kernels::LaunchInfo* dominant = m::dominant_launch(launches);
  REQUIRE(dominant != nullptr);
  CHECK(dominant->kernel_name == "softmax");
  launches.resize(1);
  launches[0].func = nullptr;
  CHECK(m::dominant_launch(launches) == nullptr);
}

TEST_CASE("dominant_launch: the longest recorded launch where the records line up with the declared ones") {
  static const int kFunctions[3] = {};
  // A backward call: a preprocess of the most blocks, the main stage that takes the time, a conversion.
  std::vector<kernels::LaunchInfo> launches(3);
  const char* names[] = {"bwd_preprocess", "bwd_main", "bwd_dq_convert"};
  const int64_t grids[] = {16384, 4096, 16384};
  const double durations[] = {93.6, 2890.0, 72.5};
  std::vector<attnprof::core::Launch> recorded(3);
  for (size_t i = 0; i < launches.size(); ++i) {
    launches[i].kernel_name = names[i];
    launches[i].grid_blocks = grids[i];
    launches[i].func = &kFunctions[i];
    recorded[i].duration_us = durations[i];
  }
  CHECK(m::dominant_launch(launches)->kernel_name == "bwd_preprocess");  // no records: the largest grid
  CHECK(m::dominant_launch(launches, recorded)->kernel_name == "bwd_main");
  // Records that do not line up (a library's extra launch) or carry no durations: the largest grid.
  recorded.push_back({});
  CHECK(m::dominant_launch(launches, recorded)->kernel_name == "bwd_preprocess");
  recorded.resize(3);
  for (auto& r : recorded) r.duration_us = 0;
  CHECK(m::dominant_launch(launches, recorded)->kernel_name == "bwd_preprocess");
  // The longest launch declares no function (a library's): nothing to query, the caller uses its record.
  recorded[1].duration_us = 10;
  launches[1].func = nullptr;
  CHECK(m::dominant_launch(launches, recorded) == nullptr);
}

TEST_CASE("smem_refusal: a block over the device's opt-in shared memory is refused, with both sizes") {
  using attnprof::measure::smem_refusal;
  // The decode kernel's bf16 hdim-128 CTA (102 KiB dynamic) on a 99 KiB part (sm_86/sm_89), and on an H100.
  const std::string why = smem_refusal("decode_split_kernel<bf16, d128, m1>", 0, 104448, 101376);
  CHECK(why == "decode_split_kernel<bf16, d128, m1> needs 104448 bytes of shared memory per block (102.0 KiB); "
               "this GPU allows 101376 (99.0 KiB)");
  CHECK(smem_refusal("decode_split_kernel<bf16, d128, m1>", 0, 104448, 232448).empty());
  CHECK(smem_refusal("k", 128, 101248, 101376).empty());       // static + dynamic exactly at the limit
  CHECK_FALSE(smem_refusal("k", 129, 101248, 101376).empty());  // one byte over
  CHECK(smem_refusal("k", 0, 1 << 20, 0).empty());              // the device's limit unknown: no refusal
  CHECK(smem_refusal("", 0, 2048, 1024).starts_with("a launch needs 2048 bytes"));
}
