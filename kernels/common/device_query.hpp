// The current CUDA device's compute capability, for the kernels' device checks and the GPU tests.
#pragma once
#include <cuda_runtime.h>

namespace attnprof::kernels {

// major * 10 + minor (90 for an H100 or H200); 0 when there is no device or the query fails, the error
// cleared.
inline int current_device_cc() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return major * 10 + minor;
}

}  // namespace attnprof::kernels
