// The drill-down's Timeline (src/report/html_timeline.cpp): the status and how the call was sampled,
// one line per metric with its level, the phases and the tensor pipe's busy share, every text escaped,
// and a chart of at most kChartPoints points a line however many samples the record holds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/timeline.hpp"
#include "report/html_timeline.hpp"
#include "render_helpers.hpp"

using namespace attnprof;
using report::detail::timeline_block;
using report_test::count;

namespace {

// A warp-specialised call: a prologue of 3 us, 10 us of steady GEMMs, a tail of 2.
core::Timeline ws_call() {
  core::Timeline t;
  t.calls = 1;
  t.call_us = 15;
  t.interval_ns = 1000;
  t.samples_taken = 19;
  t.profiling_ms = 30;
  const std::vector<double> tensor{0, 2, 5, 80, 85, 82, 88, 84, 81, 86, 83, 87, 80, 20, 10};
  for (size_t i = 0; i < tensor.size(); ++i) t.t_us.push_back(static_cast<double>(i));
  t.series.push_back({.metric = core::kTimelineMetrics[0].name, .label = core::kTimelineTensorLabel, .values = tensor});
  t.series.push_back({.metric = "x", .label = "DRAM <hbm>", .values = std::vector<double>(tensor.size(), 30)});
  return t;
}

// A timeline that holds a status and its reason alone.
core::Timeline status_only(core::SamplingStatus status, std::string reason) {
  core::Timeline t;
  t.status = status;
  t.reason = std::move(reason);
  return t;
}

}  // namespace

TEST_CASE("timeline_block: how it was sampled, a line per metric with its level, the phases, the busy share") {
  const std::string h = timeline_block(ws_call());
  CHECK_THAT(h, Catch::StartsWith("<h3>Timeline</h3><p>status <b>ok</b> &middot; 15 samples (19 taken), one every 1 us, "
                                  "over 1 call of 15 us; 30 ms</p>"));
  CHECK(count(h, "<svg class=\"timeline\"") == 1);
  CHECK(count(h, "<polyline") == 2);
  CHECK(count(h, "<rect") == 2);  // the prologue and the tail shaded
  CHECK_THAT(h, Catch::Contains("tensor pipe % mean 58, max 88"));
  CHECK_THAT(h, Catch::Contains("DRAM &lt;hbm&gt; % mean 30"));  // escaped
  CHECK(h.find("<hbm>") == std::string::npos);
  CHECK_THAT(h, Catch::Contains("prologue 3 us, steady state 10 us, tail 2 us"));
  CHECK_THAT(h, Catch::Contains("tensor pipe at 50% or more in 67% of the call"));
}

TEST_CASE("timeline_block: a refused or empty timeline is its status and reason alone, escaped") {
  const std::string h = timeline_block(
      status_only(core::SamplingStatus::unavailable, "PM sampling refused <x>"));
  CHECK(h == "<h3>Timeline</h3><p>status <b>unavailable</b>: PM sampling refused &lt;x&gt;</p>");
  const std::string cpu =
      timeline_block(status_only(core::SamplingStatus::unsupported, std::string(core::kNoTimelineReason)));
  CHECK(cpu.find("<svg") == std::string::npos);
  CHECK_THAT(cpu, Catch::Contains("status <b>unsupported</b>"));
}

TEST_CASE("timeline_block: thousands of samples draw as at most kChartPoints points a line") {
  core::Timeline many = ws_call();
  many.t_us.clear();
  for (auto& s : many.series) s.values.assign(1900, 40);
  for (int i = 0; i < 1900; ++i) many.t_us.push_back(i);
  const std::string h = timeline_block(many);
  const size_t from = h.find("<polyline");
  const size_t to = h.find("</polyline>", from);
  REQUIRE(to != std::string::npos);
  const std::string line = h.substr(from, to - from);
  CHECK(static_cast<size_t>(std::count(line.begin(), line.end(), ',')) <= report::detail::kChartPoints);
  CHECK(static_cast<size_t>(std::count(line.begin(), line.end(), ',')) > report::detail::kChartPoints / 2);
  CHECK(h.size() < 8000);  // two lines of a few KB each: a report of many points stays small
}
