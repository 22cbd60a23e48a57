// The CPU measurement backend: runs the kernels registered for Backend::cpu (kernels/cpu/) with fp32
// host buffers, verifies them against float64, times them with std::chrono::steady_clock through the
// shared sampling loop, and measures its own roofline (memory bandwidth, fp32 FMA throughput).
// docs/cpu-backend.md describes what its numbers mean and where they differ from the GPU's.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "measure/backend.hpp"

namespace attnprof::measure {

// What the CPU backend reads about its host (from /proc and /sys; zero when unknown).
struct HostInfo {
  std::string cpu_model;             // "AMD EPYC 9654 96-Core Processor"
  int64_t threads = 0;               // hardware threads the kernels use
  int64_t llc_bytes = 0;             // last-level cache, as reported (0 when not reported)
  int64_t mem_total_bytes = 0;
  int64_t mem_available_bytes = 0;
  double max_mhz = 0;
};
HostInfo read_host_info();

// The ceilings cache key of this host (measure/ceilings_cache.hpp): model and thread count.
std::string cpu_ceilings_key(const HostInfo&);

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace attnprof::measure
