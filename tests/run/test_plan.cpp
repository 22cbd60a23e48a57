#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>

#include "core/errors.hpp"
#include "core/sweep_spec.hpp"
#include "run/plan.hpp"

using namespace attnprof;
using namespace attnprof::run;

namespace {
std::vector<KernelRef> two_kernels() {
  return {{"reference", core::KernelKind::materialized}, {"fused", core::KernelKind::fused}};
}
}  // namespace

TEST_CASE("shard specs parse K/N and reject everything else") {
  const auto s = parse_shard("2/5");
  CHECK(s.index == 2);
  CHECK(s.count == 5);
  CHECK(s.sharded());
  CHECK_FALSE(parse_shard("1/1").sharded());
  CHECK(to_string(s) == "2/5");
  for (const char* bad : {"", "3", "0/2", "3/2", "1/0", "a/b", "1/2/3", "-1/2", "1 /2", "1/2x"})
    CHECK_THROWS_AS(parse_shard(bad), InputError);
}

TEST_CASE("plan lists shapes x kernels in sweep order and plans a repeated shape once") {
  const auto spec = core::parse_axes("batch=1;heads=2;seq=64,128;hdim=64;dtype=fp32");
  auto shapes = spec.shapes;
  shapes.push_back(spec.shapes.front());
  const auto points = plan_points(shapes, two_kernels());
  REQUIRE(points.size() == 4);
  CHECK(points[0].kernel == "reference");
  CHECK(points[1].kernel == "fused");
  CHECK(points[0].shape.seq_q == 64);
  CHECK(points[2].shape.seq_q == 128);
  for (size_t i = 0; i < points.size(); ++i) {
    CHECK(points[i].index == static_cast<int>(i));
    CHECK(points[i].cost_estimate > 0);
  }
  CHECK(points[0].key == point_key(points[0].shape, "reference"));
  // The materialised reference moves S and P too: it must weigh more than the fused point.
  CHECK(points[0].cost_estimate > points[1].cost_estimate);
}

TEST_CASE("LPT shard assignment is deterministic, complete and balanced") {
  std::vector<double> costs;
  uint64_t x = 12345;
  for (int i = 0; i < 97; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    costs.push_back(1.0 + static_cast<double>((x >> 33) % 1000));
  }
  for (int n : {1, 2, 3, 4, 7, 16}) {
    const auto a = assign_shards(costs, n);
    const auto b = assign_shards(costs, n);
    CHECK(a == b);
    std::vector<double> load(static_cast<size_t>(n), 0.0);
    for (size_t i = 0; i < costs.size(); ++i) {
      REQUIRE(a[i] >= 0);
      REQUIRE(a[i] < n);
      load[static_cast<size_t>(a[i])] += costs[i];
    }
    // Greedy LPT bound: no shard exceeds the lightest by more than the largest single item.
    const double max_item = *std::max_element(costs.begin(), costs.end());
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    CHECK(*hi - *lo <= max_item);
    CHECK(*lo > 0);
  }
}

TEST_CASE("LPT puts the heaviest points on different shards first") {
  const std::vector<double> costs{1, 100, 1, 90, 1, 80};
  const auto a = assign_shards(costs, 3);
  CHECK(std::set<int>{a[1], a[3], a[5]}.size() == 3);
  CHECK_THROWS_AS(assign_shards(costs, 0), InputError);
}

TEST_CASE("the shards of a sweep partition its points, each in sweep order") {
  const auto spec = core::parse_axes("batch=1,2;heads=4;seq=64:512:x2;hdim=64,128;causal=0,1;dtype=fp32");
  const auto points = plan_points(spec.shapes, two_kernels());
  for (int n : {1, 2, 3, 5}) {
    std::multiset<std::string> seen;
    for (int k = 1; k <= n; ++k) {
      const auto mine = select_shard(points, ShardSpec{k, n});
      CHECK_FALSE(mine.empty());
      for (size_t i = 1; i < mine.size(); ++i) CHECK(mine[i - 1].index < mine[i].index);
      for (const auto& p : mine) seen.insert(p.key);
    }
    CHECK(seen.size() == points.size());
    for (const auto& p : points) CHECK(seen.count(p.key) == 1);
  }
}
