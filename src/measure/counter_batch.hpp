// Batched counter collection (--counter-batch), the parts that need no GPU: forming groups of points
// under a memory and a range budget, cutting the ranges of one profiling session back into each
// point's ranges by its marker kernels, and sharing the session's wall time out between the points.
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

// The ranges of a batched pass are cut back into points by marker launches, told apart from every
// other launch by this metric (the total warps a launch started):
// - begin marker: an odd multiple of kBeginMarkerWarps. A cold point's L2 flush is launched as blocks
//   of that many warps, an odd number of blocks (timer.hpp), so the flush is the point's begin marker
//   and costs no range of its own; a warm point gets a one-block marker kernel of that size.
// - end marker: exactly kEndMarkerWarps, one block.
// No attention kernel, cuBLAS GEMM or softmax launches an odd number of warps in total (they use
// 4-, 8- or 12-warp blocks).
inline constexpr const char* kMarkerMetric = "sm__warps_launched.sum";
inline constexpr int kBeginMarkerWarps = 31;
inline constexpr int kEndMarkerWarps = 29;

// Ranges one session may hold (CUPTI maxNumOfRanges and maxRangesPerPass of a batched session).
inline constexpr int64_t kMaxBatchRanges = 1024;
// Ranges a point may add beyond its declared launches: its markers (the flush) and the extra launches
// cuBLAS may make. Used only to size groups; a wrong guess costs a per-point fallback.
inline constexpr int64_t kRangeSlackPerPoint = 10;
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

enum class RangeRole { begin_marker, end_marker, launch };
// The role of one range, from kMarkerMetric (absent: a launch).
RangeRole range_role(const core::KernelCounters&);

// Cuts the ranges of a batched session into `points` lists: point i's ranges are those after the i-th
// begin marker, up to the next end marker or begin marker (a cold pass: flush, call, flush, call, ...,
// end marker). Ranges outside every point (a warm point's warm-up call, between an end marker and the
// next begin marker) are dropped, and so are the markers. A range named after its index in the session
// (CUPTI's auto range names are "0", "1", ...) is renamed after its index within its point, as a
// session of its own would have named it. Returns nullopt, with the reason in `why`, unless the ranges
// hold exactly `points` points, each with at least one launch, the last closed by an end marker.
std::optional<std::vector<std::vector<core::KernelCounters>>> split_by_markers(
    const std::vector<core::KernelCounters>& ranges, size_t points, std::string* why);

// Shares a session's wall time out between its points: the part not spent running the points'
// launches (CUPTI's per-pass cost, the flushes, the markers) equally, plus each point's own GPU time
// over all passes. point_gpu_ms: each point's summed gpu__time_duration for one call. Falls back to
// an equal split when the GPU time exceeds the wall time (it cannot, save for clock skew).
std::vector<double> share_profiling_ms(double session_ms, int64_t passes, const std::vector<double>& point_gpu_ms);

}  // namespace attnprof::measure
