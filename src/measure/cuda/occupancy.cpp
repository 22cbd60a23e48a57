#include "measure/cuda/occupancy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <string>

#include <cuda_runtime_api.h>

#include "measure/cuda/cuda_util.hpp"

namespace attnprof::measure {

namespace {

// Register allocation granularity on sm_70 .. sm_90: registers are handed out per warp in units of
// 256 (CUDA Occupancy Calculator, "register allocation unit size").
constexpr int kRegisterAllocationUnit = 256;

int round_up(int value, int unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

SmResources sm_resources(int device_index) {
  SmResources r;
  r.sm_count = device_attribute(cudaDevAttrMultiProcessorCount, device_index);
  r.max_threads_per_sm = device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor, device_index);
  r.max_blocks_per_sm = device_attribute(cudaDevAttrMaxBlocksPerMultiprocessor, device_index);
  r.warp_size = device_attribute(cudaDevAttrWarpSize, device_index);
  r.registers_per_sm = device_attribute(cudaDevAttrMaxRegistersPerMultiprocessor, device_index);
  r.max_registers_per_block = device_attribute(cudaDevAttrMaxRegistersPerBlock, device_index);
  r.smem_per_sm = static_cast<size_t>(device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, device_index));
  r.smem_reserved_per_block = static_cast<size_t>(device_attribute(cudaDevAttrReservedSharedMemoryPerBlock, device_index));
  r.smem_per_block_optin = static_cast<size_t>(device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device_index));
  return r;
}

std::string smem_refusal(const std::string& kernel_name, size_t static_bytes, size_t dynamic_bytes,
                         size_t optin_bytes) {
  const size_t need = static_bytes + dynamic_bytes;
  if (optin_bytes == 0 || need <= optin_bytes) return {};
  return fmt::format("{} needs {} bytes of shared memory per block ({:.1f} KiB); this GPU allows {} ({:.1f} KiB)",
                     kernel_name.empty() ? std::string("a launch") : kernel_name, need, need / 1024.0, optin_bytes,
                     optin_bytes / 1024.0);
}

BlockLimits block_limits(const SmResources& r, int block_threads, int registers_per_thread, size_t smem_per_block) {
  BlockLimits limits;
  const int warps_per_block = (block_threads + r.warp_size - 1) / r.warp_size;
  limits.by_threads = block_threads > 0 ? r.max_threads_per_sm / (warps_per_block * r.warp_size) : 0;
  limits.by_blocks = r.max_blocks_per_sm;
  if (registers_per_thread > 0) {
    const int registers_per_warp = round_up(registers_per_thread * r.warp_size, kRegisterAllocationUnit);
    limits.by_registers = (r.registers_per_sm / registers_per_warp) / std::max(warps_per_block, 1);
  } else {
    limits.by_registers = INT_MAX;
  }
  const size_t smem = smem_per_block + r.smem_reserved_per_block;
  limits.by_shared_memory = smem > 0 ? static_cast<int>(r.smem_per_sm / smem) : INT_MAX;
  return limits;
}

std::string limiter_of(const BlockLimits& limits, int blocks_per_sm) {
  const std::pair<int, const char*> candidates[] = {{limits.by_registers, "registers"},
                                                    {limits.by_shared_memory, "shared_memory"},
                                                    {limits.by_threads, "threads"},
                                                    {limits.by_blocks, "blocks"}};
  for (const auto& [limit, name] : candidates) {
    if (limit == blocks_per_sm) return name;
  }
  const auto* smallest = std::min_element(std::begin(candidates), std::end(candidates),
                                          [](const auto& a, const auto& b) { return a.first < b.first; });
  return smallest->second;
}

core::Occupancy occupancy_of(const kernels::LaunchInfo& launch, const SmResources& r) {
  core::Occupancy occ;
  occ.kernel = launch.kernel_name;
  occ.threads_per_block = launch.block_threads;
  occ.grid_blocks = launch.grid_blocks;
  occ.sm_count = r.sm_count;
  if (launch.func == nullptr) return occ;
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, launch.func), "cudaFuncGetAttributes");
  occ.registers_per_thread = attributes.numRegs;
  const size_t smem = attributes.sharedSizeBytes + launch.dynamic_smem_bytes;
  occ.smem_bytes_per_block = static_cast<int64_t>(smem);
  int blocks_per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, launch.func, launch.block_threads,
                                                           launch.dynamic_smem_bytes),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  occ.blocks_per_sm = blocks_per_sm;
  const int warps_per_block = (launch.block_threads + r.warp_size - 1) / r.warp_size;
  const int max_warps = r.max_threads_per_sm / r.warp_size;
  occ.theoretical_pct = max_warps > 0 ? 100.0 * blocks_per_sm * warps_per_block / max_warps : 0;
  occ.limiter = limiter_of(block_limits(r, launch.block_threads, attributes.numRegs, smem), blocks_per_sm);
  occ.waves = blocks_per_sm > 0 ? static_cast<double>(launch.grid_blocks) / (static_cast<double>(blocks_per_sm) * r.sm_count)
                                : 0;
  return occ;
}

const kernels::LaunchInfo* dominant_launch(const std::vector<kernels::LaunchInfo>& launches,
                                           const std::vector<core::Launch>& recorded) {
  if (!launches.empty() && recorded.size() == launches.size()) {
    const auto longest = std::ranges::max_element(recorded, {}, &core::Launch::duration_us);
    if (longest->duration_us > 0) {
      const kernels::LaunchInfo& launch = launches[static_cast<size_t>(longest - recorded.begin())];
      return launch.func != nullptr ? &launch : nullptr;
    }
  }
  const kernels::LaunchInfo* best = nullptr;
  for (const auto& launch : launches) {
    if (launch.func == nullptr) continue;
    if (best == nullptr || launch.grid_blocks > best->grid_blocks) best = &launch;
  }
  return best;
}

}  // namespace attnprof::measure
