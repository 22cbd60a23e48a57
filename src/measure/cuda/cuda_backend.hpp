// The CUDA measurement backend (built only with nvcc). The factory in src/measure/backend.cpp calls
// these; nothing else includes this header.
#pragma once
#include <memory>
#include <string>

#include "measure/backend.hpp"

namespace attnprof::measure {

// True when a CUDA device is visible to this process; otherwise why not (no driver, no device, ...).
bool cuda_device_present(std::string* why_not);
// Throws EnvironmentError when the device cannot be used.
std::unique_ptr<Backend> make_cuda_backend(int device_index);

}  // namespace attnprof::measure
