#include "measure/counter_batch.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace attnprof::measure {

std::vector<std::vector<size_t>> form_batches(const std::vector<BatchItem>& items, double budget_bytes,
                                              int64_t max_ranges, int max_points) {
  const size_t max_count = static_cast<size_t>(std::max(max_points, 1));
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> group;
  double group_bytes = 0;
  int64_t group_ranges = kRangesPerBatch;
  for (size_t i = 0; i < items.size(); ++i) {
    const double bytes = items[i].bytes;
    const int64_t ranges = items[i].ranges;
    const bool fits = group.size() < max_count && group_bytes + bytes <= budget_bytes &&
                      group_ranges + ranges <= max_ranges;
    if (!group.empty() && !fits) {
      groups.push_back(std::move(group));
      group.clear();
      group_bytes = 0;
      group_ranges = kRangesPerBatch;
    }
    group.push_back(i);
    group_bytes += bytes;
    group_ranges += ranges;
  }
  if (!group.empty()) groups.push_back(std::move(group));
  return groups;
}

RangeRole range_role(const core::KernelCounters& range) {
  const auto it = range.metrics.find(kMarkerMetric);
  if (it == range.metrics.end()) return RangeRole::launch;
  // Warp counts are integers; rounding only guards against how CUPTI evaluates the sum.
  const double rounded = std::round(it->second);
  if (std::abs(it->second - rounded) > 0.25 || rounded < 1) return RangeRole::launch;
  const auto warps = static_cast<int64_t>(rounded);
  if (warps == kEndMarkerWarps) return RangeRole::end_marker;
  if (warps % 2 == 1 && warps % kBeginMarkerWarps == 0) return RangeRole::begin_marker;
  return RangeRole::launch;
}

std::optional<std::vector<std::vector<core::KernelCounters>>> split_by_markers(
    const std::vector<core::KernelCounters>& ranges, size_t points, std::string* why,
    std::vector<std::optional<core::KernelCounters>>* tails) {
  std::vector<std::vector<core::KernelCounters>> split;
  std::vector<std::optional<core::KernelCounters>> tail_of;
  bool inside = false;
  bool closed_by_tail = false;  // the last point closed by a begin marker: only an end marker may follow
  auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  for (size_t index = 0; index < ranges.size(); ++index) {
    const core::KernelCounters& range = ranges[index];
    const RangeRole role = range_role(range);
    if (closed_by_tail && role != RangeRole::end_marker)
      return fail(fmt::format("range {}: more than {} begin markers", index - 1, points));
    switch (role) {
      case RangeRole::begin_marker:
        if (inside && split.back().empty())
          return fail(fmt::format("range {}: point {} has no launch", index, split.size() - 1));
        if (inside) tail_of.back() = range;
        if (split.size() == points) {
          if (!inside) return fail(fmt::format("range {}: more than {} begin markers", index, points));
          inside = false;
          closed_by_tail = true;
          break;
        }
        split.emplace_back();
        tail_of.emplace_back();
        inside = true;
        break;
      case RangeRole::end_marker:
        if (closed_by_tail) {
          closed_by_tail = false;
          break;
        }
        if (!inside) return fail(fmt::format("range {}: an end marker outside any point", index));
        if (split.back().empty()) return fail(fmt::format("range {}: point {} has no launch", index, split.size() - 1));
        inside = false;
        break;
      case RangeRole::launch:
        if (inside) {
          core::KernelCounters own = range;
          if (own.kernel == std::to_string(index)) own.kernel = std::to_string(split.back().size());
          split.back().push_back(std::move(own));
        }
        break;
    }
  }
  if (inside || closed_by_tail)
    return fail(fmt::format("point {} has no end marker (ranges dropped?)", split.size() - 1));
  if (split.size() != points)
    return fail(fmt::format("{} of {} points found (ranges dropped?)", split.size(), points));
  if (tails) *tails = std::move(tail_of);
  return split;
}

std::vector<double> share_profiling_ms(double session_ms, int64_t passes, const std::vector<double>& point_gpu_ms) {
  const size_t n = point_gpu_ms.size();
  std::vector<double> shares(n, n > 0 ? session_ms / static_cast<double>(n) : 0);
  if (n == 0) return shares;
  const double per_pass = static_cast<double>(std::max<int64_t>(passes, 1));
  const double gpu_ms = std::accumulate(point_gpu_ms.begin(), point_gpu_ms.end(), 0.0) * per_pass;
  if (gpu_ms > session_ms) return shares;
  const double fixed_each = (session_ms - gpu_ms) / static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) shares[i] = fixed_each + point_gpu_ms[i] * per_pass;
  return shares;
}

}  // namespace attnprof::measure
