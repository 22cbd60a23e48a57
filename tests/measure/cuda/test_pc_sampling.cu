// measure/cuda/pc_sampling.cpp: warp-state samples of kernels whose stall is known by construction.
//   - a dependent chain of scattered global loads over 256 MiB: long scoreboard, at the load's line;
//   - one warp of 32 computing while the block's other 31 wait at __syncthreads: barrier;
//   - a 32-way shared-memory bank conflict in a dependent read-modify-write loop: the shared-memory
//     path (short scoreboard or MIO throttle);
// and two points sampled back to back (sampling is enabled and disabled per point). Built with
// -lineinfo, so the hot line of the chain is the planted one. A GPU test: exits 77 without a device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/stalls.hpp"
#include "gpu/gpu_test_support.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/pc_sampling.hpp"

namespace core = attnprof::core;
namespace m = attnprof::measure;

namespace {

uint64_t g_seed = 0;
constexpr unsigned kChainEntries = 1u << 26;  // 256 MiB of 4-byte links: far beyond L2
constexpr int kChainSteps = 256;

// An affine map with an odd multiplier is a permutation modulo a power of two: links scattered over
// the whole buffer.
__global__ void fill_chain(unsigned* next) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < kChainEntries; i += gridDim.x * blockDim.x)
    next[i] = (i * 2654435761u + 12345u) & (kChainEntries - 1);
}

constexpr int kPlantedLine = __LINE__ + 5;  // the load inside the loop below
__global__ void chase(const unsigned* next, unsigned* out) {
  unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) * 7919u & (kChainEntries - 1);
#pragma unroll 1
  for (int s = 0; s < kChainSteps; ++s) {
    i = __ldcg(next + i);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = i;
}

__global__ void barrier_heavy(float* out, int iterations) {
  float x = static_cast<float>(threadIdx.x);
#pragma unroll 1
  for (int it = 0; it < iterations; ++it) {
    if (threadIdx.x < 32) {
#pragma unroll 1
      for (int k = 0; k < 64; ++k) x = x * 1.0001f + 0.5f;
    }
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

__global__ void bank_conflicts(float* out, int iterations) {
  __shared__ float tile[32 * 32];
  const int lane = threadIdx.x & 31;
  for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x) tile[i] = static_cast<float>(i);
  __syncthreads();
  float v = 0;
#pragma unroll 1
  for (int it = 0; it < iterations; ++it) {
    const int at = (lane * 32 + it) & (32 * 32 - 1);  // every lane in one bank
    v += tile[at];
    tile[at] = v;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

const core::KernelStalls& kernel_named(const core::Stalls& s, const std::string& name) {
  const core::KernelStalls* found = nullptr;
  for (const auto& k : s.per_kernel)
    if (found == nullptr && k.kernel.find(name) != std::string::npos) found = &k;
  INFO("no samples of " << name);
  REQUIRE(found != nullptr);
  return *found;
}

std::string mix(const core::KernelStalls& k) {
  std::string out;
  for (const auto& [reason, n] : k.reasons)
    out += reason + " " + std::to_string(100.0 * static_cast<double>(n) / static_cast<double>(k.samples)) + "%, ";
  return out;
}

core::Stalls sample(const std::function<void()>& launch, cudaStream_t stream) {
  cudaEvent_t a, b;
  REQUIRE(cudaEventCreate(&a) == cudaSuccess);
  REQUIRE(cudaEventCreate(&b) == cudaSuccess);
  cudaEventRecord(a, stream);
  launch();
  cudaEventRecord(b, stream);
  REQUIRE(cudaEventSynchronize(b) == cudaSuccess);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  const core::Stalls s = m::sample_stalls([] {}, launch, stream, ms * 1e3);
  if (std::getenv("ATTNPROF_TEST_FIGURES") != nullptr) {
    for (const auto& k : s.per_kernel)
      std::printf("MEASURE pc_sampling %s: %lld samples, period 2^%lld, %lld calls, %.1f ms: %s\n", k.kernel.c_str(),
                  static_cast<long long>(k.samples), static_cast<long long>(s.period_log2),
                  static_cast<long long>(s.calls), s.profiling_ms, mix(k).c_str());
  }
  return s;
}

}  // namespace

TEST_CASE("sample_stalls: a dependent chain of scattered loads waits on the long scoreboard, at its line") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m::Stream stream;
  m::DeviceBuffer next(size_t{kChainEntries} * sizeof(unsigned));
  m::DeviceBuffer out(size_t{132 * 4 * 256} * sizeof(unsigned));
  fill_chain<<<1024, 256, 0, stream.get()>>>(static_cast<unsigned*>(next.get()));
  const core::Stalls s = sample([&] {
    chase<<<132 * 4, 256, 0, stream.get()>>>(static_cast<const unsigned*>(next.get()), static_cast<unsigned*>(out.get()));
  }, stream.get());
  INFO(s.reason);
  REQUIRE(s.status == core::SamplingStatus::ok);
  CHECK(s.samples > 10000);
  CHECK(s.dropped_samples == 0);
  const core::KernelStalls& k = kernel_named(s, "chase");
  INFO(mix(k));
  CHECK(core::dominant_stall(k.reasons) == "long_scoreboard");
  CHECK(core::stall_share(k.reasons, k.samples, "long_scoreboard") > 0.5);
  CHECK(core::cycles_per_issue(k) > 10);
  REQUIRE_FALSE(k.instructions.empty());
  REQUIRE_FALSE(k.lines.empty());
  INFO(k.lines[0].file << ":" << k.lines[0].line);
  CHECK(k.lines[0].line == kPlantedLine);
  CHECK(k.lines[0].file.ends_with("test_pc_sampling.cu"));
  CHECK(k.instructions[0].line == kPlantedLine);
}

TEST_CASE("sample_stalls: 31 warps waiting for one at __syncthreads stall on the barrier") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m::Stream stream;
  m::DeviceBuffer out(size_t{132 * 2 * 1024} * sizeof(float));
  const core::Stalls s = sample([&] {
    barrier_heavy<<<132 * 2, 1024, 0, stream.get()>>>(static_cast<float*>(out.get()), 2000);
  }, stream.get());
  INFO(s.reason);
  REQUIRE(s.status == core::SamplingStatus::ok);
  const core::KernelStalls& k = kernel_named(s, "barrier_heavy");
  INFO(mix(k));
  CHECK(core::dominant_stall(k.reasons) == "barrier");
  CHECK(core::stall_share(k.reasons, k.samples, "barrier") > 0.5);
}

TEST_CASE("sample_stalls: a 32-way bank conflict stalls on the shared-memory path; points sample back to back") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m::Stream stream;
  m::DeviceBuffer out(size_t{132 * 4 * 256} * sizeof(float));
  for (int point = 0; point < 2; ++point) {
    const core::Stalls s = sample([&] {
      bank_conflicts<<<132 * 4, 256, 0, stream.get()>>>(static_cast<float*>(out.get()), 4000);
    }, stream.get());
    INFO("point " << point << ": " << s.reason);
    REQUIRE(s.status == core::SamplingStatus::ok);
    const core::KernelStalls& k = kernel_named(s, "bank_conflicts");
    INFO(mix(k));
    const std::string top = core::dominant_stall(k.reasons);
    CHECK((top == "short_scoreboard" || top == "mio_throttle"));
    CHECK(core::stall_share(k.reasons, k.samples, "short_scoreboard") +
              core::stall_share(k.reasons, k.samples, "mio_throttle") > 0.5);
  }
}

int main(int argc, char** argv) {
  if (attnprof::gpu_test::device_present()) {
    // Before any kernel of this file loads: samples name only kernels loaded after it.
    const std::string why = m::enable_stall_sampling();
    if (!why.empty()) std::printf("test_pc_sampling: %s\n", why.c_str());
  }
  return attnprof::gpu_test::run_session("test_pc_sampling", argc, argv, g_seed);
}
