// Device presence and properties through the CUDA runtime only (no driver library linked: the binary
// must start where there is no CUDA driver at all).
#include "measure/cuda/device.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "measure/cuda/cuda_backend.hpp"
#include "measure/cuda/cuda_util.hpp"

namespace attnprof::measure {

namespace {

std::string version_string(int version) {  // 13000 -> "13.0"
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

// Whether the driver's library is installed (the CUDA runtime is linked statically and loads it).
bool driver_library_loads() {
  void* handle = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

}  // namespace

bool cuda_device_present(std::string* why_not) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    if (why_not) {
      // The runtime reads "driver version is insufficient" also when there is no driver at all.
      *why_not = error == cudaErrorInsufficientDriver && !driver_library_loads()
                     ? std::string("no NVIDIA driver (libcuda.so.1 is not installed)")
                     : fmt::format("no usable CUDA driver or device: {} ({})", cudaGetErrorString(error),
                                   cudaGetErrorName(error));
    }
    return false;
  }
  if (count == 0) {
    if (why_not) *why_not = "the CUDA driver reports no device";
    return false;
  }
  return true;
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

core::DeviceInfo query_device(int device_index) {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device_index), "cudaGetDeviceProperties");
  core::DeviceInfo info;
  info.name = prop.name;
  info.compute_capability = fmt::format("{}.{}", prop.major, prop.minor);
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  int driver = 0, runtime = 0;
  check_cuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check_cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  info.driver_version = version_string(driver);
  info.runtime_version = version_string(runtime);
  // Both attributes are in kHz.
  info.sm_clock_max_mhz = device_attribute(cudaDevAttrClockRate, device_index) / 1000.0;
  info.mem_clock_mhz = device_attribute(cudaDevAttrMemoryClockRate, device_index) / 1000.0;
  return info;
}

}  // namespace attnprof::measure
