// measure/cuda/probe_kernels.cu: the ceiling and calibration probes do what their names say, checked on
// the bytes they leave: fill zeroes a buffer, copy copies it, the pointer-chase set-up writes a table of
// in-range links; every probe has its function for the occupancy calculator. A GPU test: exits 77
// without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "gpu/gpu_test_support.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/probe_kernels.hpp"

namespace m = attnprof::measure;
namespace probes = attnprof::measure::probes;

namespace {
uint64_t g_seed = 0;

std::vector<uint32_t> to_host(const m::DeviceBuffer& buffer) {
  std::vector<uint32_t> host(buffer.bytes() / sizeof(uint32_t));
  m::check_cuda(cudaMemcpy(host.data(), buffer.get(), buffer.bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  return host;
}
}  // namespace

TEST_CASE("fill zeroes every byte; copy reproduces its source") {
  constexpr size_t kBytes = size_t{3} << 20;  // not a multiple of the grid's stride
  m::DeviceBuffer src(kBytes), dst(kBytes);
  std::vector<uint32_t> pattern(kBytes / sizeof(uint32_t));
  std::iota(pattern.begin(), pattern.end(), 7u);
  m::check_cuda(cudaMemcpy(src.get(), pattern.data(), kBytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  m::check_cuda(cudaMemset(dst.get(), 0xff, kBytes), "cudaMemset");
  probes::launch_fill(dst.get(), kBytes, 13, 256, nullptr);
  m::check_cuda(cudaDeviceSynchronize(), "fill");
  const std::vector<uint32_t> zeroed = to_host(dst);
  CHECK(std::count(zeroed.begin(), zeroed.end(), 0u) == static_cast<long>(zeroed.size()));
  probes::launch_copy(src.get(), dst.get(), kBytes, 2, 13, 256, nullptr);
  m::check_cuda(cudaDeviceSynchronize(), "copy");
  CHECK(to_host(dst) == pattern);
}

TEST_CASE("the pointer-chase table links every slot to a slot in range, not all to one") {
  constexpr size_t kSlots = size_t{1} << 16;  // a power of two: the links are masked
  m::DeviceBuffer next(kSlots * sizeof(uint32_t));
  probes::launch_chase_init(static_cast<uint32_t*>(next.get()), kSlots, nullptr);
  m::check_cuda(cudaDeviceSynchronize(), "chase init");
  const std::vector<uint32_t> links = to_host(next);
  size_t out_of_range = 0, self = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    out_of_range += links[i] >= kSlots;
    self += links[i] == i;
  }
  CHECK(out_of_range == 0);
  CHECK(self < kSlots / 100);
  m::DeviceBuffer out(size_t{32} * 64 * sizeof(uint32_t));
  probes::launch_chase(static_cast<const uint32_t*>(next.get()), kSlots, 100, static_cast<uint32_t*>(out.get()), 1, 32,
                       nullptr);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("every probe kernel has its function, a distinct one; the empty and FMA probes run") {
  using K = probes::Kernel;
  const K all[] = {K::read, K::copy, K::fill, K::mma_bf16, K::mma_fp16, K::fma, K::empty, K::chase, K::register_heavy};
  std::vector<const void*> functions;
  for (K k : all) {
    const void* f = probes::function_of(k);
    CHECK(f != nullptr);
    CHECK(std::find(functions.begin(), functions.end(), f) == functions.end());
    functions.push_back(f);
    cudaFuncAttributes attributes{};
    CHECK(cudaFuncGetAttributes(&attributes, f) == cudaSuccess);
  }
  probes::launch_empty(nullptr);
  m::DeviceBuffer out(size_t{4} * 256 * sizeof(float));
  probes::launch_fma(static_cast<float*>(out.get()), 100, 4, 256, nullptr);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_probe_kernels", argc, argv, g_seed); }
