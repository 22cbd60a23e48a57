// Batched counter collection without a GPU: groups under the memory / range / count budgets, ranges
// cut back into points by their markers, and the session's time shared out.
#include "measure/counter_batch.hpp"

#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace m = attnprof::measure;
using attnprof::core::KernelCounters;

namespace {

KernelCounters range(const std::string& name, double warps_launched, double duration_ns = 1000) {
  return {name, {{m::kMarkerMetric, warps_launched}, {"gpu__time_duration.sum", duration_ns}}};
}
KernelCounters begin_marker(size_t index) { return range(std::to_string(index), m::kBeginMarkerWarps); }
KernelCounters end_marker(size_t index) { return range(std::to_string(index), m::kEndMarkerWarps); }
// A launch of a real kernel: many 4-warp blocks.
KernelCounters launch(size_t index) { return range(std::to_string(index), 4 * 1024); }
// A cold point's L2 flush: an odd number of blocks of kBeginMarkerWarps warps (263 on a 132-SM GPU).
KernelCounters flush(size_t index) { return range(std::to_string(index), m::kBeginMarkerWarps * 263.0); }

}  // namespace

TEST_CASE("form_batches: count, memory and range budgets", "[counter_batch]") {
  const std::vector<m::BatchItem> items(10, {100, m::batch_ranges(1, true)});
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
  SECTION("by ranges: each point's, plus the pass's own") {
    const int64_t per_point = m::batch_ranges(1, true);
    const auto groups = m::form_batches(items, 1e12, m::kRangesPerBatch + 3 * per_point, 32);
    REQUIRE(groups.size() == 4);
    CHECK(groups[0].size() == 3);
    CHECK(groups[3].size() == 1);
    CHECK(m::form_batches(items, 1e12, m::kRangesPerBatch + 3 * per_point - 1, 32)[0].size() == 2);
  }
  SECTION("one is today's behaviour: a group per point; below one counts as one") {
    CHECK(m::form_batches(items, 1e12, m::kMaxBatchRanges, 1).size() == 10);
    CHECK(m::form_batches(items, 1e12, m::kMaxBatchRanges, 0).size() == 10);
  }
  SECTION("an item over the budget alone gets a group of its own, in order") {
    const std::vector<m::BatchItem> mixed{{100, 6}, {1000, 6}, {100, 6}, {100, 6}};
    const auto groups = m::form_batches(mixed, 500, m::kMaxBatchRanges, 32);
    REQUIRE(groups.size() == 3);
    CHECK(groups[0] == std::vector<size_t>{0});
    CHECK(groups[1] == std::vector<size_t>{1});
    CHECK(groups[2] == std::vector<size_t>{2, 3});
  }
  SECTION("no items, no groups") { CHECK(m::form_batches({}, 1e12, m::kMaxBatchRanges, 32).empty()); }
}

TEST_CASE("batch_ranges: what one point takes in a pass, cold and warm", "[counter_batch]") {
  // Cold: the flush and the call (the reference's 3 launches, and what cuBLAS may add).
  CHECK(m::batch_ranges(3, true) == 1 + 3 + m::kExtraLaunchesPerCall);
  CHECK(m::batch_ranges(1, true) == 1 + 1 + m::kExtraLaunchesPerCall);
  // Warm: the warm-up call outside the point, then begin marker, call, end marker.
  CHECK(m::batch_ranges(3, false) == 2 * (3 + m::kExtraLaunchesPerCall) + 2);
  // The 24 points of the overhead sweep (12 reference, 12 fused), cold: far under the 1024 maximum.
  CHECK(m::kRangesPerBatch + 12 * m::batch_ranges(3, true) + 12 * m::batch_ranges(1, true) == 122);
}

TEST_CASE("range_role reads the marker metric", "[counter_batch]") {
  CHECK(m::range_role(begin_marker(0)) == m::RangeRole::begin_marker);
  CHECK(m::range_role(end_marker(0)) == m::RangeRole::end_marker);
  CHECK(m::range_role(launch(0)) == m::RangeRole::launch);
  CHECK(m::range_role(KernelCounters{"0", {{"gpu__time_duration.sum", 5}}}) == m::RangeRole::launch);
  CHECK(m::range_role(flush(0)) == m::RangeRole::begin_marker);
  // An even multiple of the signature (an even block count) or a near miss is a launch.
  CHECK(m::range_role(range("0", m::kBeginMarkerWarps * 264.0)) == m::RangeRole::launch);
  CHECK(m::range_role(range("0", m::kBeginMarkerWarps * 263.0 + 2)) == m::RangeRole::launch);
  CHECK(m::range_role(range("0", 3 * m::kEndMarkerWarps)) == m::RangeRole::launch);
}

TEST_CASE("split_by_markers: the cold layout, each flush beginning its point", "[counter_batch]") {
  std::vector<KernelCounters> ranges;
  auto add = [&](KernelCounters (*make)(size_t)) { ranges.push_back(make(ranges.size())); };
  for (auto* make : {flush, launch, launch, launch,  // point 0: the reference's three launches
                     flush, launch,                  // point 1
                     flush, launch, launch,          // point 2
                     end_marker})
    add(make);
  std::string why;
  const auto split = m::split_by_markers(ranges, 3, &why);
  REQUIRE(split);
  REQUIRE(split->size() == 3);
  CHECK((*split)[0].size() == 3);
  CHECK((*split)[1].size() == 1);
  CHECK((*split)[2].size() == 2);
  CHECK((*split)[2][1].kernel == "1");
  SECTION("without the closing end marker the last point is not trusted") {
    ranges.pop_back();
    CHECK_FALSE(m::split_by_markers(ranges, 3, &why));
    CHECK(why.find("no end marker") != std::string::npos);
  }
  SECTION("a flush followed by another flush: a point without a launch") {
    ranges.insert(ranges.begin() + 4, flush(99));
    CHECK_FALSE(m::split_by_markers(ranges, 3, &why));
    CHECK(why.find("no launch") != std::string::npos);
  }
}

TEST_CASE("split_by_markers: each point's L2 tail is the flush right after it", "[counter_batch]") {
  std::vector<KernelCounters> ranges;
  auto add = [&](KernelCounters (*make)(size_t)) { ranges.push_back(make(ranges.size())); };
  // The cold layout with the last point's flush once more before the end marker.
  for (auto* make : {flush, launch, launch, launch,  // point 0
                     flush, launch,                  // point 1 (its flush: point 0's tail)
                     flush,                          // point 1's tail
                     end_marker})
    add(make);
  ranges[4].metrics["dram__bytes_write.sum"] = 13e6;
  ranges[6].metrics["dram__bytes_write.sum"] = 7e6;
  std::string why;
  std::vector<std::optional<KernelCounters>> tails;
  const auto split = m::split_by_markers(ranges, 2, &why, &tails);
  INFO(why);
  REQUIRE(split);
  REQUIRE(split->size() == 2);
  CHECK((*split)[0].size() == 3);
  CHECK((*split)[1].size() == 1);
  REQUIRE(tails.size() == 2);
  REQUIRE(tails[0]);
  REQUIRE(tails[1]);
  CHECK(tails[0]->metrics.at("dram__bytes_write.sum") == 13e6);
  CHECK(tails[1]->metrics.at("dram__bytes_write.sum") == 7e6);
  SECTION("without the last flush the last point has no tail") {
    ranges.erase(ranges.begin() + 6);
    REQUIRE(m::split_by_markers(ranges, 2, &why, &tails));
    CHECK(tails[0]);
    CHECK_FALSE(tails[1]);
  }
  SECTION("the warm layout (markers around each call) has no tails") {
    const std::vector<KernelCounters> warm{launch(0), begin_marker(1), launch(2), end_marker(3),
                                           launch(4), begin_marker(5), launch(6), end_marker(7)};
    REQUIRE(m::split_by_markers(warm, 2, &why, &tails));
    REQUIRE(tails.size() == 2);
    CHECK_FALSE(tails[0]);
    CHECK_FALSE(tails[1]);
  }
  SECTION("a launch after the last point's tail is not attributed") {
    ranges.insert(ranges.begin() + 7, launch(99));
    CHECK_FALSE(m::split_by_markers(ranges, 2, &why, &tails));
  }
  SECTION("the tail flush without the end marker after it") {
    ranges.pop_back();
    CHECK_FALSE(m::split_by_markers(ranges, 2, &why, &tails));
    CHECK(why.find("no end marker") != std::string::npos);
  }
}

TEST_CASE("split_by_markers cuts a session's ranges into points", "[counter_batch]") {
  std::vector<KernelCounters> ranges;
  auto add = [&](KernelCounters (*make)(size_t)) { ranges.push_back(make(ranges.size())); };
  for (auto* make : {launch,                                                  // flush
                     begin_marker, launch, launch, launch, end_marker,         // point 0
                     launch, launch,                                          // flush (two launches)
                     begin_marker, launch, end_marker,                        // point 1
                     launch,                                                  // flush
                     begin_marker, launch, launch, end_marker})               // point 2
    add(make);
  ranges[9].kernel = "softmax_rows_kernel";  // a name that is not CUPTI's index is kept

  std::string why;
  const auto split = m::split_by_markers(ranges, 3, &why);
  REQUIRE(split);
  CHECK(why.empty());
  REQUIRE(split->size() == 3);
  REQUIRE((*split)[0].size() == 3);
  REQUIRE((*split)[1].size() == 1);
  REQUIRE((*split)[2].size() == 2);
  // Renamed after the index within the point, as a session of its own names them.
  CHECK((*split)[0][0].kernel == "0");
  CHECK((*split)[0][2].kernel == "2");
  CHECK((*split)[1][0].kernel == "softmax_rows_kernel");
  CHECK((*split)[2][0].kernel == "0");
  CHECK((*split)[2][1].kernel == "1");
  // Metrics travel untouched.
  CHECK((*split)[0][1].metrics.at("gpu__time_duration.sum") == 1000);
}

TEST_CASE("split_by_markers refuses what it cannot attribute", "[counter_batch]") {
  std::string why;
  SECTION("a missing end marker (ranges dropped at the end)") {
    const std::vector<KernelCounters> ranges{begin_marker(0), launch(1), end_marker(2), begin_marker(3), launch(4)};
    CHECK_FALSE(m::split_by_markers(ranges, 2, &why));
    CHECK(why.find("no end marker") != std::string::npos);
  }
  SECTION("fewer points than asked") {
    const std::vector<KernelCounters> ranges{begin_marker(0), launch(1), end_marker(2)};
    CHECK_FALSE(m::split_by_markers(ranges, 2, &why));
    CHECK(why.find("1 of 2") != std::string::npos);
  }
  SECTION("more points than asked") {
    const std::vector<KernelCounters> ranges{begin_marker(0), launch(1), end_marker(2), begin_marker(3), launch(4),
                                             end_marker(5)};
    CHECK_FALSE(m::split_by_markers(ranges, 1, &why));
  }
  SECTION("two begin markers in a row") {
    const std::vector<KernelCounters> ranges{begin_marker(0), begin_marker(1), launch(2), end_marker(3)};
    CHECK_FALSE(m::split_by_markers(ranges, 1, &why));
  }
  SECTION("an end marker outside a point") {
    const std::vector<KernelCounters> ranges{end_marker(0), begin_marker(1), launch(2), end_marker(3)};
    CHECK_FALSE(m::split_by_markers(ranges, 1, &why));
  }
  SECTION("a point without a launch") {
    const std::vector<KernelCounters> ranges{begin_marker(0), end_marker(1)};
    CHECK_FALSE(m::split_by_markers(ranges, 1, &why));
    CHECK(why.find("no launch") != std::string::npos);
  }
  SECTION("no ranges at all") {
    CHECK_FALSE(m::split_by_markers({}, 1, &why));
  }
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
