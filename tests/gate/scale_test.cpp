// The gate at the reader's sample cap: compare and history of 20 points with 100000 samples a side
// finish in seconds. The statistics are O(n log n) per point (sorts) plus O(resamples); drawing every
// bootstrap resample in full cost O(resamples x n) per point, about 0.3 s per 1000 samples, which put
// this input at several minutes.
#include <catch2/catch.hpp>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "gate/compare.hpp"
#include "gate/history.hpp"
#include "gate_fixtures.hpp"

using namespace attnprof;

namespace {

constexpr int kPoints = 20;
constexpr int kScaleSamplesPerSide = 100000;  // core::read_results' cap per point
// Generous for a 2-core machine under sanitizers (the comparison takes about a second in a release
// build), and far under the minutes the quadratic bootstrap took.
constexpr double kBoundSeconds = 20;

core::Results big_run(std::mt19937_64& rng, double factor) {
  std::vector<core::Record> records;
  for (int i = 0; i < kPoints; ++i) {
    const double median_us = (50.0 + 100.0 * i) * factor;
    records.push_back(test::make_record("k" + std::to_string(i),
                                        test::latency_samples(rng, kScaleSamplesPerSide, median_us, 0.02)));
  }
  return test::make_results(std::move(records));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("compare and history of 20 points x 100000 samples a side finish in seconds") {
  std::mt19937_64 rng(100);
  const std::vector<core::Results> runs = {big_run(rng, 1.0), big_run(rng, 1.05)};

  auto start = std::chrono::steady_clock::now();
  const gate::Comparison cmp = gate::compare(runs[0], runs[1], {});
  const double compare_seconds = seconds_since(start);
  INFO("compare: " << compare_seconds << " s");
  CHECK(compare_seconds < kBoundSeconds);
  CHECK(cmp.counts.at(gate::Verdict::slower) == kPoints);  // and it still decides

  start = std::chrono::steady_clock::now();
  const gate::History h = gate::build_history(runs, {"a.json", "b.json"}, {});
  const double history_seconds = seconds_since(start);
  INFO("history: " << history_seconds << " s");
  CHECK(history_seconds < kBoundSeconds);
  CHECK(h.points.size() == static_cast<size_t>(kPoints));
}
