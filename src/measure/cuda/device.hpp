// Device query: what the results' context block says about the GPU.
#pragma once
#include "core/results.hpp"

namespace attnprof::measure {

// Name, compute capability, SMs, L2, memory, driver/runtime versions, max SM and memory clocks.
// Throws kernels::CudaError when the device cannot be queried.
core::DeviceInfo query_device(int device_index);

}  // namespace attnprof::measure
