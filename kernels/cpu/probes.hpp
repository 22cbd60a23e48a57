// Machine probes for the CPU backend's roofline: sustained memory bandwidth and peak fp32 FLOP/s on
// all hardware threads, and the cache flush that makes a "cold" sample. They live next to the kernels
// because they are compiled with the same per-ISA clones, so the ceilings describe the vector width the
// kernels actually run with.
#pragma once
#include <cstddef>
#include <vector>

namespace attnprof::kernels::cpu {

// Best of `repeats` passes of dst[i] = a * src[i] over two buffers of `buffer_bytes` each, all threads.
// Counts read + write bytes (2 * buffer_bytes per pass; write-allocate traffic is not counted, as in
// STREAM). Choose buffer_bytes well above the last-level cache.
double stream_bytes_per_s(size_t buffer_bytes, int repeats);

// Best of `repeats` timed runs of independent FMA chains on every hardware thread: 2 FLOPs per lane
// per fused multiply-add, each run about `seconds_per_run` long.
double fma_flops_per_s(double seconds_per_run, int repeats);

// Writes every cache line of `buffer` from all threads, evicting the caches' previous contents.
void flush_caches(std::vector<float>& buffer);

}  // namespace attnprof::kernels::cpu
