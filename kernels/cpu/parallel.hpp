// A minimal fork-join parallel loop over an index range on all hardware threads, shared by the CPU
// kernels and the float64 verification. Work is handed out in contiguous chunks from an atomic counter,
// so uneven items (causal rows, ragged tails) balance without a scheduler.
#pragma once
#include <cstdint>
#include <functional>

namespace attnprof::kernels {

// Threads a parallel loop uses: std::thread::hardware_concurrency(), at least 1.
int hardware_threads();

// Calls body(begin, end) on disjoint chunks of [0, count) covering it exactly once, from up to
// hardware_threads() threads (the caller's included). Chunks hold `grain` items (the last may hold
// fewer). The first exception thrown by a body is rethrown in the caller after every thread joined.
void parallel_for(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace attnprof::kernels
