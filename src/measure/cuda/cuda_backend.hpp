// The CUDA measurement backend (built only with nvcc). The factory in src/measure/backend.cpp calls
// these; nothing else includes this header.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "measure/backend.hpp"

namespace attnprof::measure {

// True when a CUDA device is visible to this process; otherwise why not (no driver, no device, ...).
bool cuda_device_present(std::string* why_not);
// CUDA devices visible to this process (0 without a driver).
int cuda_device_count();
// Throws EnvironmentError when the device cannot be used.
std::unique_ptr<Backend> make_cuda_backend(int device_index);

// Checks --metrics names against a chip's CUPTI metric list before any point runs ("GH100" for the
// H100/H200); works without a GPU. Throws InputError naming the first unknown metric.
// (Declared again here so that code outside src/measure/cuda/ need not include CUPTI headers.)
void validate_metrics(const std::vector<std::string>& names, const std::string& chip_name);

}  // namespace attnprof::measure
