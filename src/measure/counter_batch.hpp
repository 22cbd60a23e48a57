// Batched counter collection (--counter-batch), the parts that need no GPU: forming groups of points
// under a memory and a range budget, cutting the ranges of one profiling session back into each
// point's ranges by their names, and sharing the session's wall time out between the points.
//
// Why batch: CUPTI's replay costs about 25 ms per pass whatever the pass runs, and the default metric
// set needs about 30 passes. One session whose every pass runs the calls of many points pays those
// passes once per group instead of once per point. docs/measurement.md ("Counters") has the design.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"

namespace attnprof::measure {

// Ranges one session may hold (CUPTI maxNumOfRanges and maxRangesPerPass of a batched session).
inline constexpr int64_t kMaxBatchRanges = 1024;
// Ranges a point may add beyond its declared launches. A batched session has one range per stage of
// a call (cuBLAS's extra launches fall inside their stage's range), so this is only a margin. Used
// only to size groups; a wrong guess costs a per-point fallback.
inline constexpr int64_t kRangeSlackPerPoint = 2;
// Share of the free device memory one group's buffers may take: the rest is for cuBLAS, CUPTI's
// counter buffers and the L2 flush buffer.
inline constexpr double kBatchMemoryShare = 0.5;

// What one candidate point of a counter group needs.
struct BatchItem {
  double bytes = 0;       // device memory of its buffers and workspace  [bytes]
  int64_t launches = 0;   // launches its call declares (Kernel::launch_info)
};

// Consecutive groups in order: each at most `max_points` items, the sum of `bytes` at most
// `budget_bytes` and the sum of (launches + kRangeSlackPerPoint) at most `max_ranges`. An item that
// alone exceeds a budget gets a group of its own (it was measured alone, so it fits alone). Returns
// the indices of each group. max_points < 1 counts as 1.
std::vector<std::vector<size_t>> form_batches(const std::vector<BatchItem>& items, double budget_bytes,
                                              int64_t max_ranges, int max_points);

// Name of the user range that holds stage `stage` of the call of point `point` of a batched session
// ("p3/s1"); the L2 flush and any warm-up call run outside every range.
std::string batch_range_name(size_t point, int stage);

// Cuts the ranges of a batched session into `points` lists by their names (batch_range_name), in
// session order, each range renamed after its stage index ("0", "1", ...) as a session of its own
// names its launches. Returns nullopt, with the reason in `why`, unless every range has such a name,
// every point has at least one range and the stages of each point run 0, 1, ... in order.
std::optional<std::vector<std::vector<core::KernelCounters>>> split_by_range_names(
    const std::vector<core::KernelCounters>& ranges, size_t points, std::string* why);

// Shares a session's wall time out between its points: the part not spent running the points'
// launches (CUPTI's per-pass cost, the flushes, the markers) equally, plus each point's own GPU time
// over all passes. point_gpu_ms: each point's summed gpu__time_duration for one call. Falls back to
// an equal split when the GPU time exceeds the wall time (it cannot, save for clock skew).
std::vector<double> share_profiling_ms(double session_ms, int64_t passes, const std::vector<double>& point_gpu_ms);

}  // namespace attnprof::measure
