// The exceptions of a failing CUDA call (kernels/common/cuda_check.cuh throws them; the measurement
// backend turns them into a point's status). Plain C++, so that a kernel's translation unit gets them
// without the testbed's headers.
#pragma once
#include <stdexcept>

namespace attnprof::kernels {

// cudaMalloc failed for lack of memory: the point's status becomes "oom".
struct DeviceOutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Any other CUDA error, with the failing call and cudaGetErrorString in the message.
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace attnprof::kernels
