// Every kernel launch of one call, as CUPTI's Activity API sees it: the kernel's own launches, a
// library's (cuBLAS) and a plugin's alike, with name, grid, block, registers, shared memory and
// duration. The occupancy those resources imply is computed from the record, so library and plugin
// kernels, which give no function pointer, get one too. Tracing runs around one untimed call, never
// during timing or a counter session.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/results.hpp"
#include "measure/cuda/occupancy.hpp"

namespace attnprof::measure {

struct LaunchRecording {
  std::vector<core::Launch> launches;  // in launch order
  std::string error;                   // why tracing failed; empty on success
};

// Runs `call` once (it enqueues on `stream`), synchronises, and returns its launches.
LaunchRecording record_launches(const std::function<void()>& call, cudaStream_t stream);

// Theoretical occupancy of a recorded launch on an SM with resources `sm` (block_limits' arithmetic:
// the record has the registers, shared memory and block size it needs).
core::Occupancy occupancy_of_record(const core::Launch&, const SmResources& sm);

// The launch that took the longest in the recorded call (ties: the first); nullptr when none.
const core::Launch* longest_launch(const std::vector<core::Launch>&);

}  // namespace attnprof::measure
