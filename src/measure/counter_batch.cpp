#include "measure/counter_batch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include <fmt/format.h>

namespace attnprof::measure {

std::vector<std::vector<size_t>> form_batches(const std::vector<BatchItem>& items, double budget_bytes,
                                              int64_t max_ranges, int max_points) {
  const size_t max_count = static_cast<size_t>(std::max(max_points, 1));
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> group;
  double group_bytes = 0;
  int64_t group_ranges = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const double bytes = items[i].bytes;
    const int64_t ranges = items[i].launches + kRangeSlackPerPoint;
    const bool fits = group.size() < max_count && group_bytes + bytes <= budget_bytes &&
                      group_ranges + ranges <= max_ranges;
    if (!group.empty() && !fits) {
      groups.push_back(std::move(group));
      group.clear();
      group_bytes = 0;
      group_ranges = 0;
    }
    group.push_back(i);
    group_bytes += bytes;
    group_ranges += ranges;
  }
  if (!group.empty()) groups.push_back(std::move(group));
  return groups;
}

std::string batch_range_name(size_t point, int stage) { return fmt::format("p{}/s{}", point, stage); }

std::optional<std::vector<std::vector<core::KernelCounters>>> split_by_range_names(
    const std::vector<core::KernelCounters>& ranges, size_t points, std::string* why) {
  auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  std::vector<std::vector<core::KernelCounters>> split(points);
  for (size_t index = 0; index < ranges.size(); ++index) {
    const std::string& name = ranges[index].kernel;
    size_t point = 0;
    int stage = 0;
    char tail = 0;
    if (std::sscanf(name.c_str(), "p%zu/s%d%c", &point, &stage, &tail) != 2 || name != batch_range_name(point, stage))
      return fail(fmt::format("range {} is named '{}', not as a batched stage", index, name));
    if (point >= points) return fail(fmt::format("range {} ('{}') is past the {} points", index, name, points));
    if (stage != static_cast<int>(split[point].size()))
      return fail(fmt::format("range {} ('{}'): stage {} expected", index, name, split[point].size()));
    core::KernelCounters own = ranges[index];
    own.kernel = std::to_string(stage);
    split[point].push_back(std::move(own));
  }
  for (size_t point = 0; point < points; ++point) {
    if (split[point].empty()) return fail(fmt::format("point {} has no range (ranges dropped?)", point));
  }
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
