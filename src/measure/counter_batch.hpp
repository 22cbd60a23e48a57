// Batched counter collection (--counter-batch), the parts that need no GPU: forming groups of points
// under a memory and a range budget, cutting the ranges of one profiling session back into each
// point's ranges by its marker kernels, and sharing the session's wall time out between the points.
//
// Why batch: CUPTI's replay costs about 25 ms per pass whatever the pass runs, and the default metric
// set needs 13 passes. One session whose every pass runs the calls of many points pays those passes
// once per group instead of once per point. docs/measurement.md ("Counters") has the design.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/metric_names.hpp"
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
inline constexpr const char* kMarkerMetric = core::kMetricWarpsLaunched;
inline constexpr int kBeginMarkerWarps = 31;
inline constexpr int kEndMarkerWarps = 29;

// Ranges one session may hold (CUPTI maxNumOfRanges and maxRangesPerPass of a batched session).
inline constexpr int64_t kMaxBatchRanges = 1024;
// A session is sized for the ranges its points need, not for the most it may hold: the set-up of each
// pass and the counter data image grow with the capacity (on the H200, 25 ms per pass at 16-64 ranges,
// 38 ms at 256, 91 ms at 1024, and a 3-point session took 0.56 s at 16 ranges against 2.4 s at 1024).
// Launches a call may make beyond those its kernel declares (cuBLAS may split a GEMM). A wrong guess
// drops ranges, which sends the group's points to sessions of their own: slower, never wrong.
inline constexpr int64_t kExtraLaunchesPerCall = 2;
// Ranges one point takes in a batched pass. Cold: its L2 flush (the begin marker) and its call's
// launches. Warm: the warm-up call's launches, a begin marker, the call's launches and an end marker.
constexpr int64_t batch_ranges(int64_t declared_launches, bool cold) {
  const int64_t call = declared_launches + kExtraLaunchesPerCall;
  return cold ? call + 1 : 2 * call + 2;
}
// Ranges a batched pass adds once: the last point's L2 tail flush and the closing end marker.
inline constexpr int64_t kRangesPerBatch = 2;
// Share of the free device memory one group's buffers may take: the rest is for cuBLAS, CUPTI's
// counter buffers and the L2 flush buffer.
inline constexpr double kBatchMemoryShare = 0.5;

// What one candidate point of a counter group needs.
struct BatchItem {
  double bytes = 0;       // device memory of its buffers and workspace  [bytes]
  int64_t ranges = 0;     // ranges it takes in a batched pass (batch_ranges)
};

// Consecutive groups in order: each at most `max_points` items, the sum of `bytes` at most
// `budget_bytes` and kRangesPerBatch plus the sum of `ranges` at most `max_ranges`. An item that
// alone exceeds a budget gets a group of its own (it was measured alone, so it fits alone). Returns
// the indices of each group. max_points < 1 counts as 1.
std::vector<std::vector<size_t>> form_batches(const std::vector<BatchItem>& items, double budget_bytes,
                                              int64_t max_ranges, int max_points);

enum class RangeRole { begin_marker, end_marker, launch };
// The role of one range, from kMarkerMetric (absent: a launch).
RangeRole range_role(const core::KernelCounters&);

// Cuts the ranges of a batched session into `points` lists: point i's ranges are those after the i-th
// begin marker, up to the next end marker or begin marker (a cold pass: flush, call, flush, call, ...,
// flush, end marker). Ranges outside every point (a warm point's warm-up call, between an end marker
// and the next begin marker) are dropped, and so are the markers. A range named after its index in the
// session (CUPTI's auto range names are "0", "1", ...) is renamed after its index within its point, as
// a session of its own would have named it. Returns nullopt, with the reason in `why`, unless the
// ranges hold exactly `points` points, each with at least one launch, the last closed by an end marker
// (or by a begin marker right before that end marker).
// tails (optional): for each point, the begin marker range that directly follows its last launch: in
// the cold layout the next flush (the last point's: one more flush before the end marker), whose DRAM
// writes are the lines the point's call left dirty in L2; nullopt where an end marker followed.
std::optional<std::vector<std::vector<core::KernelCounters>>> split_by_markers(
    const std::vector<core::KernelCounters>& ranges, size_t points, std::string* why,
    std::vector<std::optional<core::KernelCounters>>* tails = nullptr);

// Shares a session's wall time out between its points: the part not spent running the points'
// launches (CUPTI's per-pass cost, the flushes, the markers) equally, plus each point's own GPU time
// over all passes. point_gpu_ms: each point's summed gpu__time_duration for one call. Falls back to
// an equal split when the GPU time exceeds the wall time (it cannot, save for clock skew).
std::vector<double> share_profiling_ms(double session_ms, int64_t passes, const std::vector<double>& point_gpu_ms);

}  // namespace attnprof::measure
