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
  o.warmup_seconds = 0;
  o.min_seconds_per_point = 0;
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
  o.warmup_seconds = 0;
  o.min_seconds_per_point = 0;
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
  o.warmup_seconds = 0;
  o.min_seconds_per_point = 0;
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
  o.warmup_seconds = 0;
  o.min_seconds_per_point = 0;
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

TEST_CASE("sampling: a timed warm-up and a minimum sampling time", "[sampling]") {
  MeasureOptions o;
  o.warmup_calls = 2;
  o.warmup_seconds = 0.06;
  o.min_samples = 5;
  o.max_samples = 100000;
  o.min_seconds_per_point = 0.06;
  o.max_seconds_per_point = 60;
  int calls = 0;
  const auto started = std::chrono::steady_clock::now();
  const auto set = sample_adaptively(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        return std::vector<double>{100.0};  // converged from the start
      },
      o);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(set.stop_reason == "converged");
  // At most 20 calls of 3 ms fit in 60 ms: both phases ran past their call counts.
  CHECK(set.warmup_calls > o.warmup_calls);
  CHECK(set.warmup_calls <= 21);
  CHECK(set.total_us.size() > static_cast<size_t>(o.min_samples));
  CHECK(calls == set.warmup_calls + static_cast<int64_t>(set.total_us.size()));
  CHECK(elapsed >= 0.12);
}

TEST_CASE("sampling: without a timed warm-up, exactly warmup_calls untimed calls", "[sampling]") {
  MeasureOptions o;
  o.warmup_calls = 4;
  o.warmup_seconds = 0;
  o.min_samples = 3;
  o.min_seconds_per_point = 0;
  const auto set = sample_adaptively([] { return std::vector<double>{1.0}; }, o);
  CHECK(set.warmup_calls == 4);
  CHECK(set.total_us.size() == 3);
}
