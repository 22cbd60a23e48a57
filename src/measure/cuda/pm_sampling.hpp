// A kernel's timeline through CUPTI's PM sampling API (cupti_pmsampling.h, with the profiler host API
// of cupti_profiler_host.h for the counter configuration): the device's performance monitors are read
// every interval while one call runs, giving the timeline's metrics (core::kTimelineMetrics) against
// time. Run in a pass of its own after timing and counters (sweep --timeline), never while latency is
// sampled, in a process that takes no counters and no warp-state samples: all three program the same
// performance monitors.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/timeline.hpp"

namespace attnprof::measure {

// How a call is sampled: the interval and how many calls run back to back.
struct TimelinePlan {
  int64_t interval_ns = 0;
  int64_t calls = 1;
};

// The plan for a call of `call_us`: about kTargetSamplesPerCall samples over one call, the interval
// kept within the hardware's range; a call shorter than kMinSamplesPerCall intervals at the shortest
// runs several times back to back (at most kMaxCalls). Pure: tested without a GPU.
TimelinePlan plan_timeline(double call_us);
inline constexpr int64_t kTargetSamplesPerCall = 500;
inline constexpr int64_t kMinSamplesPerCall = 100;
inline constexpr int64_t kMaxCalls = 64;
// Nsight Compute's PmSampling section chose 1.5 us on the H200 for a call of a few hundred us
// (shared reference pc-sampling-on-h200.md); 1 us is the shortest asked for here. The longest keeps a
// 1 s call at a few thousand samples.
inline constexpr int64_t kMinIntervalNs = 1000;
inline constexpr int64_t kMaxIntervalNs = 500000;

// The metrics of core::kTimelineMetrics that `chip_name` knows, configured together, and the passes
// CUPTI needs for them: a PM sampling configuration must fit one. Offline (no GPU, no driver call);
// throws std::runtime_error with CUPTI's text when the host API refuses the chip.
struct TimelineConfigCheck {
  std::vector<std::string> metrics;  // those the chip knows, in kTimelineMetrics order
  int64_t passes = 0;
};
TimelineConfigCheck check_timeline_metrics(const std::string& chip_name);

// Samples `call`, run `plan.calls` times back to back (plan_timeline of one call timed here first),
// on the current device: `before` runs once before the sampled window (the L2 flush, a workspace's
// zeroing), `between` before each later call inside it (zeroing a workspace again; may be empty).
// Idle samples at the window's edges are dropped and the rest merged to core::kMaxTimelineSamples.
// Never throws for a CUPTI refusal: the result's status says "unavailable" with the CUPTI call and
// its text.
core::Timeline sample_timeline(const std::function<void()>& before, const std::function<void()>& call,
                               const std::function<void()>& between, cudaStream_t stream);

}  // namespace attnprof::measure
