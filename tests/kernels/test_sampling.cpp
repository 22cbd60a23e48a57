// The shared sampling loop (src/measure/sampling.cpp) driven by fake measurements.
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>

#include <catch2/catch.hpp>

#include "measure/sampling.hpp"

using attnprof::measure::MeasureOptions;
using attnprof::measure::sample_adaptively;

TEST_CASE("sampling: steady samples converge after min_samples, warm-up untimed", "[sampling]") {
  MeasureOptions o;
  o.warmup_calls = 3;
  o.min_samples = 10;
  o.max_samples = 200;
  o.max_seconds_per_point = 60;
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
  MeasureOptions o;
  o.warmup_calls = 0;
  o.min_samples = 5;
  o.max_samples = 40;
  o.target_rel_ci = 1e-9;
  o.max_seconds_per_point = 60;
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
  MeasureOptions o;
  o.warmup_calls = 1;
  o.min_samples = 10;
  o.max_samples = 100000;
  o.target_rel_ci = 1e-9;
  o.max_seconds_per_point = 0.1;
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

TEST_CASE("sampling: malformed samples are errors", "[sampling]") {
  MeasureOptions o;
  o.warmup_calls = 0;
  CHECK_THROWS_AS(sample_adaptively([] { return std::vector<double>{}; }, o), std::runtime_error);
  int n = 0;
  CHECK_THROWS_AS(sample_adaptively(
                      [&] {
                        return ++n == 1 ? std::vector<double>{1.0, 2.0} : std::vector<double>{1.0};
                      },
                      o),
                  std::runtime_error);
}
