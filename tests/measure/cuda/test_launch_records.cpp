// measure/cuda/launch_records.cpp: CUPTI's activity records of a call, one per launch in launch order
// with its grid, block and GPU time; the theoretical occupancy of a record from its resources; the
// longest launch of a call. A GPU test: exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "gpu/gpu_test_support.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/launch_records.hpp"
#include "measure/cuda/occupancy.hpp"
#include "measure/cuda/probe_kernels.hpp"

namespace m = attnprof::measure;
namespace probes = attnprof::measure::probes;

namespace {
uint64_t g_seed = 0;
}  // namespace

TEST_CASE("record_launches: every launch of the call, in order, with its grid, block and time") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m::Stream stream;
  constexpr size_t kBytes = size_t{256} << 20;
  m::DeviceBuffer buffer(kBytes);
  const m::LaunchRecording rec = m::record_launches(
      [&] {
        probes::launch_empty(stream.get());
        probes::launch_fill(buffer.get(), kBytes, 264, 512, stream.get());
        probes::launch_empty(stream.get());
      },
      stream.get());
  REQUIRE(rec.error.empty());
  REQUIRE(rec.launches.size() == 3);
  CHECK(rec.launches[0].name.find("empty_kernel") != std::string::npos);
  CHECK(rec.launches[1].name.find("fill_kernel") != std::string::npos);
  CHECK(rec.launches[2].name.find("empty_kernel") != std::string::npos);
  CHECK(rec.launches[1].grid == std::array<int64_t, 3>{264, 1, 1});
  CHECK(rec.launches[1].block == std::array<int64_t, 3>{512, 1, 1});
  for (const auto& l : rec.launches) CHECK(l.duration_us > 0);
  const attnprof::core::Launch* longest = m::longest_launch(rec.launches);
  REQUIRE(longest != nullptr);
  CHECK(longest == &rec.launches[1]);  // 256 MiB written against nothing
  CHECK(m::longest_launch({}) == nullptr);
}

TEST_CASE("occupancy_of_record: blocks per SM from the record's resources, the limiter, the waves") {
  m::SmResources sm;  // sm_90's per-SM limits
  sm.sm_count = 132;
  sm.max_threads_per_sm = 2048;
  sm.max_blocks_per_sm = 32;
  sm.registers_per_sm = 65536;
  sm.max_registers_per_block = 65536;
  sm.smem_per_sm = 233472;
  sm.smem_reserved_per_block = 1024;
  attnprof::core::Launch l;
  l.name = "attention";
  l.grid = {528, 1, 1};
  l.block = {128, 1, 1};
  l.registers_per_thread = 255;  // 4 warps x 8192 registers: 2 blocks by registers
  const attnprof::core::Occupancy occ = m::occupancy_of_record(l, sm);
  CHECK(occ.kernel == "attention");
  CHECK(occ.blocks_per_sm == 2);
  CHECK(occ.limiter == "registers");
  CHECK(occ.theoretical_pct == Approx(100.0 * 8 / 64));
  CHECK(occ.waves == Approx(2.0));
  l.block = {0, 1, 1};
  CHECK(m::occupancy_of_record(l, sm).blocks_per_sm == 0);  // no threads: nothing to compute
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_launch_records", argc, argv, g_seed); }
