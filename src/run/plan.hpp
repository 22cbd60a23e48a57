// The points of a sweep (shape x kernel) in sweep order, their cost estimates, and the deterministic
// shard assignment that lets N machines split one sweep without talking to each other.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost_model.hpp"
#include "core/shape.hpp"
#include "core/sweep_spec.hpp"

namespace attnprof::run {

struct KernelRef {
  std::string name;
  core::KernelKind kind = core::KernelKind::fused;
};

struct Point {
  int index = 0;              // position in the whole (unsharded) sweep, 0-based
  core::Shape shape;
  std::string kernel;
  core::KernelKind kind = core::KernelKind::fused;
  std::string key;            // core::point_key of the point's record
  double cost_estimate = 0;   // FLOPs + minimum bytes: a relative weight, not a time
};

// Shapes in sweep order, each with every kernel in the given order. A shape that appears twice in
// the spec is planned once (a point is identified by its key).
std::vector<Point> plan_points(const std::vector<core::Shape>& shapes,
                               const std::vector<KernelRef>& kernels);

// The key of a (shape, kernel) point, the same as core::point_key of its record.
std::string point_key(const core::Shape&, std::string_view kernel);

struct ShardSpec {
  int index = 1;  // K of "K/N", 1-based
  int count = 1;  // N
  bool sharded() const { return count > 1; }
};
// "K/N" with 1 <= K <= N; throws InputError naming the token otherwise.
ShardSpec parse_shard(std::string_view text);
std::string to_string(const ShardSpec&);

// Greedy longest-processing-time assignment: points by decreasing cost (ties: lower index first),
// each to the shard with the least total so far (ties: the lower shard). Returns the 0-based shard of
// each point. Deterministic, so every shard of a job array computes the same split on its own.
std::vector<int> assign_shards(std::span<const double> cost_estimates, int shard_count);

// The points of shard K/N, in sweep order.
std::vector<Point> select_shard(const std::vector<Point>& points, const ShardSpec&);

}  // namespace attnprof::run
