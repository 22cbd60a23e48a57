// Raising a kernel's dynamic shared-memory limit (needed above 48 KiB) once per device and kernel.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/common/cuda_check.cuh"

namespace attnprof::kernels {

// Kernel is the __global__ function (one instantiation); devices past 64 are set on every call.
template <auto Kernel>
void allow_dynamic_smem(size_t bytes) {
  constexpr int kMaxDevices = 64;
  static std::atomic<uint64_t> configured_devices{0};
  int device = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  const uint64_t bit = device < kMaxDevices ? uint64_t{1} << device : 0;
  if (bit != 0 && (configured_devices.load() & bit)) return;
  ATTNPROF_CUDA_CHECK(
      cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  configured_devices.fetch_or(bit);
}

}  // namespace attnprof::kernels
