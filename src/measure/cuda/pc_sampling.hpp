// Warp-state (PC) sampling of one call through CUPTI's PC sampling API (cupti_pcsampling.h): every
// 2^period cycles each SM reports one resident warp's program counter and state (issuing, or the
// reason it stalls). Run in a pass of its own after timing and counters, never while latency is
// sampled. Source lines come from the cubins CUPTI saw loaded since enable_stall_sampling(), for code built
// with -lineinfo; a library's kernels get SASS offsets alone.
#pragma once
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

#include "core/stalls.hpp"

namespace attnprof::measure {

// Watches module loads and enables PC sampling on the current device's context, stopped: call before
// the first kernel of a point runs. CUPTI attributes samples only to kernels loaded after sampling was
// enabled (kernels load lazily, at their first launch), and a context on which it was disabled and
// enabled again attributes none, so it stays enabled for the process; stopped, the hardware takes no
// samples while points are timed. Returns why it could not be enabled, empty on success.
std::string enable_stall_sampling();

// Samples `call` (after `before`, each time, outside the sampled range) until about `target_samples`
// samples are taken or `max_calls` calls have run. `call_us` (the call's timed P50; 0: one call is
// timed here first) picks the sampling period. Never throws for a CUPTI refusal: the result's status says "unavailable" with why.
core::Stalls sample_stalls(const std::function<void()>& before, const std::function<void()>& call,
                           cudaStream_t stream, double call_us, int max_calls = 16,
                           int64_t target_samples = 200000);

}  // namespace attnprof::measure
