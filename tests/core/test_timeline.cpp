// core/timeline.cpp: idle edges dropped, samples merged to a cap, the summary (levels, phases, the
// tensor pipe's busy share), and a record's timeline through the results JSON (written only where
// sampled, compact, malformed ones refused).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/results.hpp"
#include "core/timeline.hpp"

using namespace attnprof;
using core::Timeline;
using core::TimelineSeries;

namespace {

// A timeline of evenly spaced samples, one series per (label, values).
Timeline make(int64_t interval_ns, std::vector<std::pair<std::string, std::vector<double>>> series) {
  Timeline t;
  t.interval_ns = interval_ns;
  t.calls = 1;
  const size_t n = series.empty() ? 0 : series.front().second.size();
  for (size_t i = 0; i < n; ++i) t.t_us.push_back(static_cast<double>(i) * static_cast<double>(interval_ns) * 1e-3);
  for (auto& [label, values] : series)
    t.series.push_back(TimelineSeries{.metric = "metric." + label, .label = label, .values = std::move(values)});
  return t;
}

// A warp-specialised call as its timeline shows it: a prologue of 3 samples that loads (DRAM busy, the
// tensor pipe idle), 10 samples of steady GEMMs, a tail of 2 with the last wave's few CTAs.
Timeline ws_call() {
  return make(1000, {{core::kTimelineTensorLabel, {0, 2, 5, 80, 85, 82, 88, 84, 81, 86, 83, 87, 80, 20, 10}},
                     {core::kTimelineDramLabel, {40, 60, 50, 20, 22, 21, 20, 23, 22, 21, 20, 22, 21, 5, 2}},
                     {core::kTimelineWarpsLabel, {90, 95, 95, 95, 95, 95, 95, 95, 95, 95, 95, 95, 95, 30, 30}}});
}

}  // namespace

TEST_CASE("drop_idle_edges: the idle samples before the call's first launch and after its last go; gaps stay") {
  Timeline t = make(2000, {{"DRAM", {0, 0.5, 30, 0, 40, 0.2, 0}}, {"SM", {0, 0, 10, 0, 5, 0, 0}}});
  t.t_us = {10, 12, 14, 16, 18, 20, 22};  // a clock that does not start at 0
  core::drop_idle_edges(t);
  CHECK(t.t_us == std::vector<double>{0, 2, 4});
  CHECK(t.series[0].values == std::vector<double>{30, 0, 40});  // the gap between two launches stays
  CHECK(t.series[1].values == std::vector<double>{10, 0, 5});

  Timeline idle = make(1000, {{"SM", {0, 0.1, std::numeric_limits<double>::quiet_NaN()}}});
  core::drop_idle_edges(idle);
  CHECK(idle.t_us.empty());
  CHECK(idle.series[0].values.empty());
}

TEST_CASE("merge_samples: runs of neighbours averaged to the cap, each at its first sample's time") {
  Timeline t = make(1000, {{"SM", {1, 3, 5, 7, 9, 11, 13}}});
  core::merge_samples(t, 3);  // 7 samples, runs of 3: [1 3 5] [7 9 11] [13]
  CHECK(t.merged == 3);
  CHECK(t.t_us == std::vector<double>{0, 3, 6});
  CHECK(t.series[0].values == std::vector<double>{3, 9, 13});
  CHECK(t.spacing_us() == Approx(3.0));

  Timeline small = make(1000, {{"SM", {1, 2}}});
  core::merge_samples(small, 3);
  CHECK(small.merged == 1);
  CHECK(small.series[0].values.size() == 2);

  Timeline big = make(500, {{"SM", std::vector<double>(4100, 50.0)}});
  core::merge_samples(big);
  CHECK(big.t_us.size() <= core::kMaxTimelineSamples);
  CHECK(big.series[0].values.size() == big.t_us.size());
  CHECK(big.merged == 3);
}

TEST_CASE("summarize_timeline: levels per metric, the prologue, steady state and tail, the tensor pipe's busy share") {
  const core::TimelineSummary s = core::summarize_timeline(ws_call());
  CHECK(s.duration_us == Approx(15.0));
  REQUIRE(s.series.size() == 3);
  CHECK(s.series[0].label == core::kTimelineTensorLabel);
  CHECK(s.series[0].max == 88);
  CHECK(s.series[1].mean == Approx((40 + 60 + 50 + 20 + 22 + 21 + 20 + 23 + 22 + 21 + 20 + 22 + 21 + 5 + 2) / 15.0));
  // The tensor pipe leads (warps active is higher but is residency, not a unit's work).
  REQUIRE(s.phases.found);
  CHECK(s.phases.lead == core::kTimelineTensorLabel);
  CHECK(s.phases.prologue_us == Approx(3.0));
  CHECK(s.phases.steady_us == Approx(10.0));
  CHECK(s.phases.tail_us == Approx(2.0));
  REQUIRE(s.tensor_busy_share.has_value());
  CHECK(*s.tensor_busy_share == Approx(10.0 / 15.0));
}

TEST_CASE("summarize_timeline: a memory-bound call is led by DRAM; an idle one has no phases; no tensor, no share") {
  const Timeline stream = make(2000, {{core::kTimelineDramLabel, {10, 90, 92, 91, 90, 93, 5}}, {"SM", {5, 10, 10, 10, 10, 10, 1}}});
  const core::TimelineSummary s = core::summarize_timeline(stream);
  REQUIRE(s.phases.found);
  CHECK(s.phases.lead == core::kTimelineDramLabel);
  CHECK(s.phases.prologue_us == Approx(2.0));
  CHECK(s.phases.steady_us == Approx(10.0));
  CHECK(s.phases.tail_us == Approx(2.0));
  CHECK_FALSE(s.tensor_busy_share.has_value());

  const core::TimelineSummary idle = core::summarize_timeline(make(1000, {{"SM", {0.2, 0.1, 0.3}}}));
  CHECK_FALSE(idle.phases.found);
  CHECK(core::summarize_timeline(Timeline{}).duration_us == 0);
}

TEST_CASE("a record's timeline round-trips through JSON, compact; absent where not sampled; malformed refused") {
  core::Record r;
  r.kernel = "fused-sm90";
  nlohmann::json j = r;
  CHECK_FALSE(j.contains("timeline"));
  CHECK_FALSE(j.get<core::Record>().timeline.has_value());

  Timeline t = ws_call();
  t.calls = 2;
  t.call_us = 7.123456;
  t.samples_taken = 40;
  t.profiling_ms = 31.25;
  t.series[0].values[3] = 80.04999;  // written to a tenth of a percent
  t.t_us[1] = 1.0000004;             // and to 10 ns
  t.reason = "2 calls back to back";
  r.timeline = t;
  j = r;
  CHECK(j.at("timeline").at("series").at(0).at("values").at(3).get<double>() == Approx(80.0));
  CHECK(j.at("timeline").at("t_us").at(1).get<double>() == Approx(1.0));
  CHECK(j.at("timeline").at("series").at(0).at("metric") == "metric." + std::string(core::kTimelineTensorLabel));
  const core::Record back = j.get<core::Record>();
  REQUIRE(back.timeline.has_value());
  const Timeline& b = *back.timeline;
  CHECK(b.status == core::SamplingStatus::ok);
  CHECK(b.calls == 2);
  CHECK(b.call_us == Approx(7.12));
  CHECK(b.interval_ns == 1000);
  CHECK(b.merged == 1);
  CHECK(b.samples_taken == 40);
  CHECK(b.reason == t.reason);
  REQUIRE(b.series.size() == 3);
  CHECK(b.series[1].label == core::kTimelineDramLabel);
  CHECK(b.series[1].unit == "%");
  CHECK(b.series[1].values == t.series[1].values);
  CHECK(b.t_us.size() == t.t_us.size());
  CHECK(core::summarize_timeline(b).phases.steady_us == Approx(10.0));

  // A NaN value (a sample CUPTI could not evaluate) survives as "nan".
  r.timeline->series[2].values[0] = std::numeric_limits<double>::quiet_NaN();
  j = r;
  CHECK(j.at("timeline").at("series").at(2).at("values").at(0) == "nan");
  CHECK(std::isnan(j.get<core::Record>().timeline->series[2].values[0]));

  const nlohmann::json good = j;
  j["timeline"]["status"] = "unsupported";
  CHECK(j.get<core::Record>().timeline->status == core::SamplingStatus::unsupported);
  j["timeline"]["status"] = "sampled";
  CHECK_THROWS_AS(j.get<core::Record>(), InputError);
  j = good;
  j["timeline"]["series"][0]["values"].erase(0);
  CHECK_THROWS_WITH(j.get<core::Record>(), Catch::Contains("holds 14 values for 15 sample times"));
  j = good;
  j["timeline"]["interval_ns"] = -1;
  CHECK_THROWS_AS(j.get<core::Record>(), InputError);
  j = good;
  j["timeline"]["t_us"][0] = "soon";
  CHECK_THROWS_AS(j.get<core::Record>(), InputError);
  j = good;
  j["timeline"]["t_us"] = nlohmann::json::array();
  j["timeline"]["series"] = nlohmann::json::array();
  for (int i = 0; i <= core::kMaxSamplesPerPoint; ++i) j["timeline"]["t_us"].push_back(i);
  CHECK_THROWS_WITH(j.get<core::Record>(), Catch::Contains("at most"));
}

TEST_CASE("a CPU point's timeline says why it has none") {
  CHECK(std::string(core::kNoTimelineReason).find("NVIDIA GPU") != std::string::npos);
  for (const auto& m : core::kTimelineMetrics) CHECK(std::string(m.name).ends_with(".pct_of_peak_sustained_elapsed"));
}
