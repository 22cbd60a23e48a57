// measure/backend.cpp: the backend factory (cpu, cuda, auto with its notice, unknown names refused),
// MeasureOptions as JSON, the form the sweep hands its workers, and the timing workers' options.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "measure/backend.hpp"

namespace m = attnprof::measure;

TEST_CASE("backend factory", "[backend]") {
  CHECK(m::make_backend("cpu", 0, nullptr)->name() == "cpu");
  CHECK_THROWS_AS(m::make_backend("tpu", 0, nullptr), attnprof::InputError);
  std::string why;
  if (!m::cuda_available(&why)) {
    CHECK_FALSE(why.empty());
    CHECK_THROWS_AS(m::make_backend("cuda", 0, nullptr), attnprof::EnvironmentError);
    std::vector<std::string> notices;
    CHECK(m::make_backend("auto", 0, &notices)->name() == "cpu");
    REQUIRE(notices.size() == 1);
    CHECK(notices[0].find("no GPU found") != std::string::npos);
    CHECK(notices[0].find(why) != std::string::npos);
  }
}

TEST_CASE("measure options serialise", "[backend]") {
  m::MeasureOptions o;
  o.max_samples = 77;
  o.extra_metrics = {"dram__bytes_read.sum"};
  const nlohmann::json j = o;
  CHECK(j.at("max_samples") == 77);
  CHECK(j.at("extra_metrics").size() == 1);
  CHECK(j.at("cold_l2") == true);
  CHECK(j.at("warmup_seconds") == 0.6);
  CHECK(j.at("min_seconds_per_point") == 0.25);
  m::MeasureOptions back;
  o.warmup_seconds = 0.5;
  o.min_seconds_per_point = 0.125;
  m::from_json(nlohmann::json(o), back);
  CHECK(back.warmup_seconds == 0.5);
  CHECK(back.min_seconds_per_point == 0.125);
}

TEST_CASE("the timing workers sample nothing; with --stalls their counters add the instruction mix once", "[backend]") {
  m::MeasureOptions sweep;
  sweep.extra_metrics = {"lts__t_bytes.sum", attnprof::core::kMetricInstExecuted};
  const m::MeasureOptions plain = m::timing_worker_options(sweep);
  CHECK(plain.extra_metrics == sweep.extra_metrics);
  sweep.stalls = sweep.timeline = true;
  const m::MeasureOptions timed = m::timing_worker_options(sweep);
  CHECK_FALSE(timed.stalls);
  CHECK_FALSE(timed.timeline);
  // The user's names first, then every mix metric, the one the user asked for not twice.
  REQUIRE(timed.extra_metrics.size() == 1 + attnprof::core::kInstructionMixMetrics.size());
  CHECK(timed.extra_metrics[0] == "lts__t_bytes.sum");
  CHECK(timed.extra_metrics[1] == attnprof::core::kMetricInstExecuted);
  for (const char* name : attnprof::core::kInstructionMixMetrics)
    CHECK(std::count(timed.extra_metrics.begin(), timed.extra_metrics.end(), name) == 1);
  CHECK(timed.counter_batch == sweep.counter_batch);
}
