// measure/cuda/device.cpp: a device is present, counted as the runtime counts them, and query_device
// reports what the runtime says of it. A GPU test:
// exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <string>

#include "gpu/gpu_test_support.hpp"
#include "measure/cuda/cuda_backend.hpp"
#include "measure/cuda/device.hpp"

namespace {
uint64_t g_seed = 0;
}  // namespace

TEST_CASE("query_device: name, compute capability, SMs, memory and L2 as the runtime reports them") {
  cudaDeviceProp props{};
  REQUIRE(cudaGetDeviceProperties(&props, 0) == cudaSuccess);
  const attnprof::core::DeviceInfo info = attnprof::measure::query_device(0);
  CHECK(info.name == props.name);
  CHECK(info.compute_capability == std::to_string(props.major) + "." + std::to_string(props.minor));
  CHECK(info.sm_count == props.multiProcessorCount);
  CHECK(info.memory_bytes == static_cast<int64_t>(props.totalGlobalMem));
  CHECK(info.l2_bytes == props.l2CacheSize);
  CHECK(info.sm_clock_max_mhz > 100);
  CHECK_FALSE(info.driver_version.empty());
  CHECK_FALSE(info.runtime_version.empty());
}

TEST_CASE("cuda_device_present and cuda_device_count agree with the runtime") {
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  std::string why = "unchanged";
  CHECK(attnprof::measure::cuda_device_present(&why));
  CHECK(why == "unchanged");
  CHECK(attnprof::measure::cuda_device_count() == count);
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_device", argc, argv, g_seed); }
