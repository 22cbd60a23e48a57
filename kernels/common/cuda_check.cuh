// Error checking shared by the CUDA kernels and the testbed: every failing CUDA or cuBLAS call becomes
// a kernels::CudaError (or DeviceOutOfMemory) naming the call and the runtime's own message.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "kernels/common/cuda_errors.hpp"

namespace attnprof::kernels {

inline void cuda_check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear the sticky-free allocation error so later calls still work
    throw DeviceOutOfMemory(std::string(call) + ": " + cudaGetErrorString(status));
  }
  throw CudaError(std::string(call) + ": " + cudaGetErrorString(status));
}

}  // namespace attnprof::kernels

#define ATTNPROF_CUDA_CHECK(call) ::attnprof::kernels::cuda_check((call), #call)
