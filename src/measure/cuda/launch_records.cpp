#include "measure/cuda/launch_records.hpp"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "measure/cuda/cuda_util.hpp"

namespace attnprof::measure {

namespace {

constexpr size_t kActivityBufferBytes = size_t{8} << 20;
constexpr size_t kActivityBufferAlign = 8;

// CUPTI hands completed buffers to a C callback: the one collector of this process receives them.
struct Collector {
  std::mutex mutex;
  std::vector<core::Launch> launches;
  bool registered = false;
};
Collector& collector() {
  static Collector c;
  return c;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kActivityBufferAlign, kActivityBufferBytes));
  *size = *buffer ? kActivityBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Collector& c = collector();
  CUpti_Activity* record = nullptr;
  std::vector<std::pair<uint64_t, core::Launch>> batch;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    core::Launch l;
    l.name = demangle(k->name);
    l.grid = {k->gridX, k->gridY, k->gridZ};
    l.block = {k->blockX, k->blockY, k->blockZ};
    if (k->clusterX > 0) l.cluster = {k->clusterX, k->clusterY, k->clusterZ};
    l.registers_per_thread = k->registersPerThread;
    l.static_smem_bytes = k->staticSharedMemory;
    l.dynamic_smem_bytes = k->dynamicSharedMemory;
    l.duration_us = static_cast<double>(k->end - k->start) * 1e-3;
    l.from_graph = k->graphId != 0;
    batch.emplace_back(k->start, std::move(l));
  }
  std::free(buffer);
  std::stable_sort(batch.begin(), batch.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::lock_guard lock(c.mutex);
  for (auto& [start, l] : batch) c.launches.push_back(std::move(l));
}

std::string cupti_error(CUptiResult result, const char* what) {
  return fmt::format("{}: {}", what, cupti_result_text(result));
}

}  // namespace

LaunchRecording record_launches(const std::function<void()>& call, cudaStream_t stream) {
  LaunchRecording out;
  Collector& c = collector();
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (!c.registered) {
    if (const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
      out.error = cupti_error(r, "cuptiActivityRegisterCallbacks");
      return out;
    }
    c.registered = true;
  }
  {
    const std::lock_guard lock(c.mutex);
    c.launches.clear();
  }
  if (const CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS) {
    out.error = cupti_error(r, "cuptiActivityEnable");
    return out;
  }
  std::string failure;
  try {
    call();
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (!failure.empty()) throw std::runtime_error(failure);
  if (flushed != CUPTI_SUCCESS) out.error = cupti_error(flushed, "cuptiActivityFlushAll");
  const std::lock_guard lock(c.mutex);
  out.launches = std::move(c.launches);
  c.launches.clear();
  return out;
}

core::Occupancy occupancy_of_record(const core::Launch& l, const SmResources& sm) {
  core::Occupancy occ;
  occ.kernel = l.name;
  const int64_t threads = l.block[0] * l.block[1] * l.block[2];
  occ.threads_per_block = threads;
  occ.registers_per_thread = l.registers_per_thread;
  occ.smem_bytes_per_block = l.static_smem_bytes + l.dynamic_smem_bytes;
  occ.grid_blocks = l.grid[0] * l.grid[1] * l.grid[2];
  occ.sm_count = sm.sm_count;
  if (threads <= 0 || sm.warp_size <= 0) return occ;
  const BlockLimits limits = block_limits(sm, static_cast<int>(threads), static_cast<int>(l.registers_per_thread),
                                          static_cast<size_t>(occ.smem_bytes_per_block));
  const int blocks_per_sm =
      std::max(0, std::min({limits.by_threads, limits.by_blocks, limits.by_registers, limits.by_shared_memory}));
  occ.blocks_per_sm = blocks_per_sm;
  const int64_t warps_per_block = (threads + sm.warp_size - 1) / sm.warp_size;
  const int max_warps = sm.max_threads_per_sm / sm.warp_size;
  occ.theoretical_pct = max_warps > 0 ? 100.0 * static_cast<double>(blocks_per_sm * warps_per_block) / max_warps : 0;
  occ.limiter = limiter_of(limits, blocks_per_sm);
  occ.waves = blocks_per_sm > 0 && sm.sm_count > 0
                  ? static_cast<double>(occ.grid_blocks) / (static_cast<double>(blocks_per_sm) * sm.sm_count)
                  : 0;
  return occ;
}

const core::Launch* longest_launch(const std::vector<core::Launch>& launches) {
  const core::Launch* best = nullptr;
  for (const auto& l : launches)
    if (best == nullptr || l.duration_us > best->duration_us) best = &l;
  return best;
}

}  // namespace attnprof::measure
