#include "run/plan.hpp"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/results.hpp"

namespace attnprof::run {

std::string point_key(const core::Shape& shape, std::string_view kernel) {
  core::Record record;
  record.shape = shape;
  record.kernel = std::string(kernel);
  return core::point_key(record);
}

std::vector<Point> plan_points(const std::vector<core::Shape>& shapes,
                               const std::vector<KernelRef>& kernels) {
  std::vector<Point> points;
  std::set<std::string> seen;
  for (const auto& shape : shapes) {
    for (const auto& kernel : kernels) {
      Point p;
      p.shape = shape;
      p.kernel = kernel.name;
      p.kind = kernel.kind;
      p.key = point_key(shape, kernel.name);
      if (!seen.insert(p.key).second) continue;
      // The sum is dominated by FLOPs for attention (intensity is tens to hundreds of FLOP/byte),
      // and the bytes term keeps the memory-heavy reference points heavier than fused ones.
      const core::Cost cost = core::cost_of(shape, kernel.kind);
      p.cost_estimate = cost.flops + cost.min_bytes_read + cost.min_bytes_write;
      p.index = static_cast<int>(points.size());
      points.push_back(std::move(p));
    }
  }
  return points;
}

namespace {
bool parse_positive(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && out > 0;
}
}  // namespace

ShardSpec parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  ShardSpec spec;
  if (slash == std::string_view::npos || !parse_positive(text.substr(0, slash), spec.index) ||
      !parse_positive(text.substr(slash + 1), spec.count) || spec.index > spec.count)
    throw InputError(fmt::format("bad shard '{}': expected K/N with 1 <= K <= N", text));
  return spec;
}

std::string to_string(const ShardSpec& spec) { return fmt::format("{}/{}", spec.index, spec.count); }

std::vector<int> assign_shards(std::span<const double> cost_estimates, int shard_count) {
  if (shard_count < 1) throw InputError(fmt::format("bad shard count {}", shard_count));
  std::vector<size_t> order(cost_estimates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return cost_estimates[a] > cost_estimates[b];
  });
  std::vector<double> load(static_cast<size_t>(shard_count), 0.0);
  std::vector<int> shard_of(cost_estimates.size(), 0);
  for (size_t i : order) {
    const auto lightest = std::min_element(load.begin(), load.end()) - load.begin();
    shard_of[i] = static_cast<int>(lightest);
    load[static_cast<size_t>(lightest)] += cost_estimates[i];
  }
  return shard_of;
}

std::vector<Point> select_shard(const std::vector<Point>& points, const ShardSpec& spec) {
  if (!spec.sharded()) return points;
  std::vector<double> costs;
  costs.reserve(points.size());
  for (const auto& p : points) costs.push_back(p.cost_estimate);
  const auto shard_of = assign_shards(costs, spec.count);
  std::vector<Point> mine;
  for (size_t i = 0; i < points.size(); ++i)
    if (shard_of[i] == spec.index - 1) mine.push_back(points[i]);
  return mine;
}

}  // namespace attnprof::run
