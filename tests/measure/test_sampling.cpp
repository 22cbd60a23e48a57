// The shared sampling loop (src/measure/sampling.cpp) driven by fake measurements.
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "core/stats.hpp"
#include "measure/sampling.hpp"

using attnprof::measure::MeasureOptions;
using attnprof::measure::sample_adaptively;

namespace {

// A loop bounded by call counts alone: no timed warm-up and no minimum sampling time.
MeasureOptions by_count(int warmup_calls, int min_samples, int max_samples, double max_seconds = 60) {
  MeasureOptions o;
  o.warmup_calls = warmup_calls;
  o.warmup_seconds = 0;
  o.min_samples = min_samples;
  o.max_samples = max_samples;
  o.min_seconds_per_point = 0;
  o.max_seconds_per_point = max_seconds;
  return o;
}

}  // namespace

TEST_CASE("sampling: steady samples converge after min_samples, warm-up untimed", "[sampling]") {
  const MeasureOptions o = by_count(3, 10, 200);
  int calls = 0;
  const auto set = sample_adaptively(
      [&] {
        ++calls;
        return std::vector<double>{100.0};
      },
      o);
  CHECK(set.stop_reason == "converged");
  CHECK(set.total_us.size() == 10);
  CHECK(calls == 13);
  CHECK(set.stage_us.empty());
}

TEST_CASE("sampling: noise that never converges stops at max_samples", "[sampling]") {
  MeasureOptions o = by_count(0, 5, 40);
  o.target_rel_ci = 1e-9;
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> noise(50, 150);
  const auto set = sample_adaptively([&] { return std::vector<double>{noise(rng), 1.0, 2.0}; }, o);
  CHECK(set.stop_reason == "max_samples");
  CHECK(set.total_us.size() == 40);
  REQUIRE(set.stage_us.size() == 2);
  CHECK(set.stage_us[0].size() == 40);
  CHECK(set.stage_us[1][7] == 2.0);
}

TEST_CASE("sampling: slow noisy samples stop on the time budget and keep every sample", "[sampling]") {
  MeasureOptions o = by_count(1, 10, 100000, 0.1);
  o.target_rel_ci = 1e-9;
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> noise(50, 150);
  int timed_calls = -1;  // the first call is the warm-up
  const auto set = sample_adaptively(
      [&] {
        ++timed_calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return std::vector<double>{noise(rng)};
      },
      o);
  CHECK(set.stop_reason == "time_budget");
  CHECK(int(set.total_us.size()) == timed_calls);
  CHECK(set.total_us.size() < 100);
  CHECK(set.total_us.size() >= 2);
}

TEST_CASE("sampling: samples held on levels keep sampling until the levels average out", "[sampling]") {
  // Runs of 30 samples: 7 at 100, then 3 at 103, repeated (a clock held on one step, then another).
  // At the first check, 300 samples, the bootstrap alone is sure of the median (210 of them sit at 100)
  // and would stop; the batch medians see the level move, and sampling goes on until whole cycles
  // fill the batches.
  MeasureOptions o = by_count(0, 300, 20000);
  int64_t i = 0;
  const auto set = sample_adaptively(
      [&] {
        const double level = (i / 30) % 10 >= 7 ? 103.0 : 100.0;
        const double jitter = 0.05 * std::sin(static_cast<double>(i) * 2.39996);
        ++i;
        return std::vector<double>{level + jitter};
      },
      o);
  CHECK(set.stop_reason == "converged");
  INFO("stopped after " << set.total_us.size() << " samples");
  CHECK(set.total_us.size() > 1000);  // whole cycles of 300 in most batches
  CHECK(set.total_us.size() < 20000);
  const double med = attnprof::core::median(set.total_us);
  CHECK(med > 99.9);
  CHECK(med < 100.5);
  // The same values in an order that does not hold a level converge at the first check.
  MeasureOptions shuffled = by_count(0, 300, 20000);
  int64_t j = 0;
  const auto quick = sample_adaptively(
      [&] {
        const double level = j % 10 >= 7 ? 103.0 : 100.0;
        ++j;
        return std::vector<double>{level + 0.05 * std::sin(static_cast<double>(j) * 2.39996)};
      },
      shuffled);
  CHECK(quick.stop_reason == "converged");
  CHECK(quick.total_us.size() == 300);
}

TEST_CASE("sampling: malformed samples are errors", "[sampling]") {
  const MeasureOptions o = by_count(0, 10, 200);
  CHECK_THROWS_AS(sample_adaptively([] { return std::vector<double>{}; }, o), std::runtime_error);
  int n = 0;
  CHECK_THROWS_AS(sample_adaptively(
                      [&] {
                        return ++n == 1 ? std::vector<double>{1.0, 2.0} : std::vector<double>{1.0};
                      },
                      o),
                  std::runtime_error);
}

TEST_CASE("sampling: a timed warm-up and a minimum sampling time", "[sampling]") {
  MeasureOptions o = by_count(2, 2, 100000);
  o.warmup_seconds = 0.06;
  o.min_seconds_per_point = 0.06;
  using clock = std::chrono::steady_clock;
  std::vector<clock::time_point> starts;  // when each call began
  const auto set = sample_adaptively(
      [&] {
        starts.push_back(clock::now());
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        return std::vector<double>{100.0};  // converged from the first samples
      },
      o);
  CHECK(set.stop_reason == "converged");
  REQUIRE(starts.size() == static_cast<size_t>(set.warmup_calls) + set.total_us.size());
  REQUIRE(set.warmup_calls >= 2);
  const auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const clock::time_point first_sample = starts[static_cast<size_t>(set.warmup_calls)];
  // The warm-up lasted its 60 ms (the call that crossed the line was its last), and so did sampling.
  CHECK(seconds(first_sample - starts.front()) >= 0.059);
  CHECK(seconds(starts.back() + std::chrono::milliseconds(3) - first_sample) >= 0.059);
  // Without the times, 2 warm-up calls and 2 samples would have been all.
  CHECK(set.warmup_calls + static_cast<int64_t>(set.total_us.size()) > 4);
}

TEST_CASE("sampling: without a timed warm-up, exactly warmup_calls untimed calls", "[sampling]") {
  const MeasureOptions o = by_count(4, 3, 200);
  const auto set = sample_adaptively([] { return std::vector<double>{1.0}; }, o);
  CHECK(set.warmup_calls == 4);
  CHECK(set.total_us.size() == 3);
}

TEST_CASE("sampling: a sample that cannot be a duration fails the point, never reaches the record", "[sampling]") {
  const MeasureOptions o = by_count(0, 5, 40);
  for (double bad : {-2.835, std::nan(""), std::numeric_limits<double>::infinity()}) {
    int calls = 0;
    const auto run = [&] {
      return sample_adaptively(
          [&] {
            ++calls;
            return std::vector<double>{calls == 3 ? bad : 100.0};
          },
          o);
    };
    CHECK_THROWS_WITH(run(), Catch::Contains("cannot be a duration"));
  }
  // A stage's sample is checked too.
  CHECK_THROWS_WITH(sample_adaptively([] { return std::vector<double>{100.0, -1.0}; }, o),
                    Catch::Contains("cannot be a duration"));
  // Zero is a duration (a clock's resolution).
  CHECK_NOTHROW(sample_adaptively([] { return std::vector<double>{0.0}; }, o));
}
