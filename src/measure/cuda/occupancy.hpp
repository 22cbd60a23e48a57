// Theoretical occupancy of a kernel launch from the CUDA occupancy API, with the resource that bounds
// blocks per SM named (registers, shared memory, threads, blocks), and the number of waves.
// The achieved side comes from the sm__warps_active counter of the launch's CUPTI range.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "kernels/registry.hpp"

namespace attnprof::measure {

// Per-SM resources the calculation needs, read from the device.
struct SmResources {
  int sm_count = 0;
  int max_threads_per_sm = 0, max_blocks_per_sm = 0, warp_size = 32;
  int registers_per_sm = 0, max_registers_per_block = 0;
  size_t smem_per_sm = 0, smem_reserved_per_block = 0;
  size_t smem_per_block_optin = 0;  // the most shared memory one block may take (static + dynamic)
};
SmResources sm_resources(int device_index);

// Why a launch cannot run on the device: its block takes more shared memory (static + dynamic) than a
// block may opt in to. Empty when it fits, or when the device's limit is unknown (0).
std::string smem_refusal(const std::string& kernel_name, size_t static_bytes, size_t dynamic_bytes,
                         size_t optin_bytes);

// Blocks per SM that each resource alone allows, and which one binds. Pure arithmetic, so the
// limiter can be named; blocks_per_sm itself comes from cudaOccupancyMaxActiveBlocksPerMultiprocessor.
struct BlockLimits {
  int by_threads = 0, by_blocks = 0, by_registers = 0, by_shared_memory = 0;
};
BlockLimits block_limits(const SmResources&, int block_threads, int registers_per_thread, size_t smem_per_block);
// The resource whose limit equals blocks_per_sm (the smallest limit when none does).
std::string limiter_of(const BlockLimits&, int blocks_per_sm);

// Theoretical occupancy of one launch. Throws kernels::CudaError when the function cannot be queried.
core::Occupancy occupancy_of(const kernels::LaunchInfo&, const SmResources&);

// The launch the occupancy report describes: the one that took longest in the recorded call where its
// launch records line up with the declared launches (as many, in order; a backward's main stage, not
// its preprocess of more blocks), else the one with the most blocks (ties: the first). Returns nullptr
// when that launch has no func, or none has (a call made only of library launches).
const kernels::LaunchInfo* dominant_launch(const std::vector<kernels::LaunchInfo>&,
                                           const std::vector<core::Launch>& recorded = {});

}  // namespace attnprof::measure
