// gate::build_history and its renderers on synthetic runs: a step the gate calls slower is a change
// point of the run it happens in, points are ordered worst regression first, and the renderers show
// every run with its revision and date.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "gate/history.hpp"
#include "gate_fixtures.hpp"

using namespace attnprof;
using namespace attnprof::gate;


TEST_CASE("history: a slower step is a change point of the run it happens in; worst regression first") {
  std::mt19937_64 rng(7);
  // seq 1024 steps up 10% at run 3; seq 2048 stays within noise, then gets 20% faster at run 3.
  const std::vector<core::Results> runs = {test::history_run(rng, 100, 400, "aaa", "2026-01-01T00:00:00Z"),
                                           test::history_run(rng, 100, 400, "bbb", "2026-01-02T00:00:00Z"),
                                           test::history_run(rng, 110, 320, "ccc", "2026-01-03T00:00:00Z")};
  const History h = build_history(runs, {"r1.json", "r2.json", "r3.json"}, Options{});
  REQUIRE(h.runs.size() == 3);
  CHECK(h.runs[2].revision == "ccc");
  CHECK(h.runs[0].date == "2026-01-01T00:00:00Z");
  REQUIRE(h.points.size() == 2);

  const HistoryPoint& worst = h.points[0];
  CHECK(worst.shape.find("s1024x1024") != std::string::npos);
  CHECK(worst.values[0].step == Verdict::same);  // the first run has nothing before it
  CHECK(worst.values[1].step == Verdict::same);
  CHECK(worst.values[2].step == Verdict::slower);
  CHECK(worst.values[2].ratio == Approx(1.10).epsilon(0.02));
  CHECK(worst.values[2].p_value < 0.01);
  CHECK(worst.slower_steps == 1);
  CHECK(worst.worst_step_ratio == Approx(1.10).epsilon(0.02));
  CHECK(worst.overall_ratio == Approx(1.10).epsilon(0.02));

  const HistoryPoint& faster = h.points[1];
  CHECK(faster.values[2].step == Verdict::faster);
  CHECK(faster.faster_steps == 1);
  CHECK(faster.slower_steps == 0);
  CHECK(faster.overall_ratio == Approx(0.8).epsilon(0.02));

  const std::string md = render_history_markdown(h);
  CHECK(md.find("| 3 | r3.json | ccc | 2026-01-03T00:00:00Z |") != std::string::npos);
  CHECK(md.find("Change points: 1 slower, 1 faster") != std::string::npos);
  // The regressed point's row comes before the improved one's.
  CHECK(md.find("s1024x1024") < md.find("s2048x2048"));
  CHECK(md.find("**slower +1") != std::string::npos);

  const std::string html = render_history_html(h);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);
  CHECK(html.find("class=\"change-slower\"") != std::string::npos);
  CHECK(html.find("class=\"change-faster\"") != std::string::npos);

  const std::string text = render_history_terminal(h);
  CHECK(text.find("worst regressions:\n  b1 h8/8 s1024x1024 d64 bf16 | fused: run 3 slower +1") != std::string::npos);
}

TEST_CASE("history: a point missing from a run, and an unchanged history") {
  std::mt19937_64 rng(11);
  std::vector<core::Results> runs = {test::history_run(rng, 100, 400, "a", "d1"),
                                     test::history_run(rng, 100, 400, "b", "d2")};
  runs[1].records.pop_back();  // seq 2048 absent from run 2
  const History h = build_history(runs, {"a.json", "b.json"}, Options{});
  REQUIRE(h.points.size() == 2);
  for (const auto& p : h.points) {
    CHECK(p.slower_steps == 0);
    if (p.shape.find("s2048") != std::string::npos) {
      CHECK_FALSE(p.values[1].present);
      CHECK(p.values[1].step == Verdict::missing);
    }
  }
  CHECK(render_history_markdown(h).find("Change points: 0 slower, 0 faster") != std::string::npos);
}

TEST_CASE("history: needs two runs; a device change needs the gate's permission") {
  std::mt19937_64 rng(3);
  CHECK_THROWS_AS(build_history({test::history_run(rng, 100, 400, "a", "d")}, {"a.json"}, Options{}), InputError);
  std::vector<core::Results> runs = {test::history_run(rng, 100, 400, "a", "d1"),
                                     test::history_run(rng, 100, 400, "b", "d2")};
  runs[1].context.device.name = "NVIDIA H100";
  CHECK_THROWS_AS(build_history(runs, {"a.json", "b.json"}, Options{}), InputError);
  Options allow;
  allow.allow_device_mismatch = true;
  const History h = build_history(runs, {"a.json", "b.json"}, allow);
  REQUIRE(h.notes.size() == 1);
  CHECK(h.notes[0].find("NVIDIA H100") != std::string::npos);
}

TEST_CASE("history: a P50 interval is shown within the samples it came from, never below zero") {
  std::mt19937_64 rng(5);
  std::vector<core::Results> runs = {test::history_run(rng, 100, 400, "a", "d1"),
                                     test::history_run(rng, 100, 400, "b", "d2")};
  // A batch-median interval over scattered samples: mean - t x spread reaches below zero.
  auto& scattered = runs[1].records[0];
  scattered.latency.p50_ci_low_us = -532.9;
  scattered.latency.p50_ci_high_us = 1e6;
  // A file without samples keeps what it says, but not below zero.
  runs[1].records[1].samples_us.clear();
  runs[1].records[1].latency.p50_ci_low_us = -1;
  const History h = build_history(runs, {"a.json", "b.json"}, Options{});
  for (const auto& p : h.points) {
    const auto& v = p.values[1];
    INFO(p.key);
    CHECK(v.ci_low_us >= 0);
    if (p.shape.find("s1024") != std::string::npos) {
      const auto [lowest, highest] = std::minmax_element(scattered.samples_us.begin(), scattered.samples_us.end());
      CHECK(v.ci_low_us == *lowest);
      CHECK(v.ci_high_us == *highest);
    } else {
      CHECK(v.ci_low_us == 0);
    }
  }
  const std::string md = render_history_markdown(h);
  CHECK(md.find("-532.9") == std::string::npos);
  CHECK(md.find("[-") == std::string::npos);
}

TEST_CASE("history: each run recorded on a busy machine is named, in the Markdown too") {
  std::mt19937_64 rng(11);
  std::vector<core::Results> runs = {test::history_run(rng, 100, 400, "aaa", "2026-01-01T00:00:00Z"),
                                     test::history_run(rng, 100, 400, "bbb", "2026-01-02T00:00:00Z"),
                                     test::history_run(rng, 100, 400, "ccc", "2026-01-03T00:00:00Z")};
  CHECK(build_history(runs, {"r1.json", "r2.json", "r3.json"}, Options{}).busy_warnings.empty());
  runs[1].context.host_load = core::HostLoad{8.2, 2};
  runs[2].context.host_load = core::HostLoad{0.4, 2};
  const History h = build_history(runs, {"r1.json", "r2.json", "r3.json"}, Options{});
  REQUIRE(h.busy_warnings.size() == 1);
  CHECK(h.busy_warnings[0].starts_with("r2.json was measured on a busy machine: load 8.2 on 2 cores"));
  CHECK(render_history_markdown(h).find("> **Busy machine**: r2.json was measured") != std::string::npos);
}
