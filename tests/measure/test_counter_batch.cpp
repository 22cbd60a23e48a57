// Batched counter collection without a GPU: groups under the memory / range / count budgets, ranges
// cut back into points by their markers, and the session's time shared out.
#include "measure/counter_batch.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace m = attnprof::measure;
using attnprof::core::KernelCounters;

namespace {

KernelCounters range(const std::string& name, double duration_ns = 1000) {
  return {name, {{"gpu__time_duration.sum", duration_ns}}};
}
KernelCounters stage(size_t point, int index) { return range(m::batch_range_name(point, index)); }

}  // namespace

TEST_CASE("form_batches: count, memory and range budgets", "[counter_batch]") {
  const std::vector<m::BatchItem> items(10, {100, 1});
  SECTION("by count") {
    const auto groups = m::form_batches(items, 1e12, m::kMaxBatchRanges, 4);
    REQUIRE(groups.size() == 3);
    CHECK(groups[0] == std::vector<size_t>{0, 1, 2, 3});
    CHECK(groups[1] == std::vector<size_t>{4, 5, 6, 7});
    CHECK(groups[2] == std::vector<size_t>{8, 9});
  }
  SECTION("by memory") {
    const auto groups = m::form_batches(items, 250, m::kMaxBatchRanges, 32);
    REQUIRE(groups.size() == 5);
    for (const auto& g : groups) CHECK(g.size() == 2);
  }
  SECTION("by ranges: launches plus the slack per point") {
    const int64_t per_point = 1 + m::kRangeSlackPerPoint;
    const auto groups = m::form_batches(items, 1e12, 3 * per_point, 32);
    REQUIRE(groups.size() == 4);
    CHECK(groups[0].size() == 3);
    CHECK(groups[3].size() == 1);
  }
  SECTION("one is today's behaviour: a group per point; below one counts as one") {
    CHECK(m::form_batches(items, 1e12, m::kMaxBatchRanges, 1).size() == 10);
    CHECK(m::form_batches(items, 1e12, m::kMaxBatchRanges, 0).size() == 10);
  }
  SECTION("an item over the budget alone gets a group of its own, in order") {
    const std::vector<m::BatchItem> mixed{{100, 3}, {1000, 3}, {100, 3}, {100, 3}};
    const auto groups = m::form_batches(mixed, 500, m::kMaxBatchRanges, 32);
    REQUIRE(groups.size() == 3);
    CHECK(groups[0] == std::vector<size_t>{0});
    CHECK(groups[1] == std::vector<size_t>{1});
    CHECK(groups[2] == std::vector<size_t>{2, 3});
  }
  SECTION("no items, no groups") { CHECK(m::form_batches({}, 1e12, m::kMaxBatchRanges, 32).empty()); }
}

TEST_CASE("batch_range_name names a stage of a point", "[counter_batch]") {
  CHECK(m::batch_range_name(0, 0) == "p0/s0");
  CHECK(m::batch_range_name(12, 2) == "p12/s2");
}

TEST_CASE("split_by_range_names cuts a session's ranges into points", "[counter_batch]") {
  // The reference's three stages, a one-launch kernel, two stages.
  const std::vector<KernelCounters> ranges{stage(0, 0), stage(0, 1), stage(0, 2), stage(1, 0), stage(2, 0),
                                           range(m::batch_range_name(2, 1), 7)};
  std::string why;
  const auto split = m::split_by_range_names(ranges, 3, &why);
  REQUIRE(split);
  CHECK(why.empty());
  REQUIRE(split->size() == 3);
  REQUIRE((*split)[0].size() == 3);
  REQUIRE((*split)[1].size() == 1);
  REQUIRE((*split)[2].size() == 2);
  // Renamed after the stage, as a session of its own names its launches.
  CHECK((*split)[0][0].kernel == "0");
  CHECK((*split)[0][2].kernel == "2");
  CHECK((*split)[2][1].kernel == "1");
  // Metrics travel untouched.
  CHECK((*split)[2][1].metrics.at("gpu__time_duration.sum") == 7);
}

TEST_CASE("split_by_range_names refuses what it cannot attribute", "[counter_batch]") {
  std::string why;
  SECTION("a point without ranges (ranges dropped at the end)") {
    CHECK_FALSE(m::split_by_range_names({stage(0, 0)}, 2, &why));
    CHECK(why.find("point 1 has no range") != std::string::npos);
  }
  SECTION("a range of a point past the group") {
    CHECK_FALSE(m::split_by_range_names({stage(0, 0), stage(1, 0)}, 1, &why));
    CHECK(why.find("past the 1 points") != std::string::npos);
  }
  SECTION("stages out of order or repeated") {
    CHECK_FALSE(m::split_by_range_names({stage(0, 1), stage(0, 0)}, 1, &why));
    CHECK_FALSE(m::split_by_range_names({stage(0, 0), stage(0, 0)}, 1, &why));
  }
  SECTION("a range that is not a batched stage (an auto range, a stray name)") {
    for (const char* name : {"0", "p0", "p0/s", "p0/s0x", "q0/s0", "p-1/s0", "p00/s0"}) {
      INFO(name);
      CHECK_FALSE(m::split_by_range_names({range(name)}, 1, &why));
    }
  }
  SECTION("no ranges at all") { CHECK_FALSE(m::split_by_range_names({}, 1, &why)); }
}

TEST_CASE("share_profiling_ms: fixed cost equally, GPU time by point", "[counter_batch]") {
  // 30 passes; points of 1 ms and 3 ms per call: 120 ms of GPU time in a 1000 ms session.
  const auto shares = m::share_profiling_ms(1000, 30, {1, 3});
  REQUIRE(shares.size() == 2);
  CHECK(shares[0] == Approx(440 + 30));
  CHECK(shares[1] == Approx(440 + 90));
  CHECK(shares[0] + shares[1] == Approx(1000));
  SECTION("GPU time over the wall time: an equal split") {
    const auto even = m::share_profiling_ms(10, 30, {1, 3});
    CHECK(even[0] == Approx(5));
    CHECK(even[1] == Approx(5));
  }
  SECTION("no points") { CHECK(m::share_profiling_ms(10, 30, {}).empty()); }
}
