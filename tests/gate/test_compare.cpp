#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "gate/compare.hpp"
#include "gate/render.hpp"
#include "gate_fixtures.hpp"

using namespace attnprof;
using gate::Verdict;
using test::latency_samples;
using test::make_record;
using test::make_results;

namespace {

// The sample count a sweep takes per point: what the gate sees in practice.
constexpr int kSamplesPerSide = 30;
constexpr int kTrials = 1000;

gate::Options simulation_options() {
  gate::Options o;
  // The verdict does not depend on the interval; fewer resamples keep 1000 trials fast.
  o.bootstrap_resamples = 200;
  return o;
}

gate::Comparison compare_one(const core::Record& b, const core::Record& c, const gate::Options& o = {}) {
  return gate::compare(make_results({b}), make_results({c}), o);
}

}  // namespace

TEST_CASE("A/A: same distribution trips the gate in at most 1% of trials") {
  for (double noise : {0.01, 0.02, 0.03}) {
    std::mt19937_64 rng(1000 + static_cast<uint64_t>(noise * 1000));
    int failed = 0, not_passed = 0;
    for (int t = 0; t < kTrials; ++t) {
      const double median_us = 50.0 + 500.0 * std::uniform_real_distribution<double>(0, 1)(rng);
      const auto b = make_record("fused", latency_samples(rng, kSamplesPerSide, median_us, noise));
      const auto c = make_record("fused", latency_samples(rng, kSamplesPerSide, median_us, noise));
      const auto cmp = compare_one(b, c, simulation_options());
      failed += cmp.exit_code == kExitRegression;
      not_passed += cmp.exit_code != kExitOk;
    }
    INFO("noise " << noise << ": " << failed << " regressions, " << not_passed << " not passed of " << kTrials);
    CHECK(failed <= kTrials / 100);
    CHECK(not_passed <= kTrials / 100);
  }
}

TEST_CASE("a planted 5% slowdown is caught as slower in at least 95% of trials") {
  for (double noise : {0.01, 0.02, 0.03}) {
    std::mt19937_64 rng(2000 + static_cast<uint64_t>(noise * 1000));
    int caught = 0;
    for (int t = 0; t < kTrials; ++t) {
      const double median_us = 50.0 + 500.0 * std::uniform_real_distribution<double>(0, 1)(rng);
      const auto b = make_record("fused", latency_samples(rng, kSamplesPerSide, median_us, noise));
      const auto c = make_record("fused", latency_samples(rng, kSamplesPerSide, median_us * 1.05, noise));
      const auto cmp = compare_one(b, c, simulation_options());
      caught += cmp.points[0].verdict == Verdict::slower && cmp.exit_code == kExitRegression;
    }
    INFO("noise " << noise << ": caught " << caught << " of " << kTrials);
    CHECK(caught >= kTrials * 95 / 100);
  }
}

namespace {

// One simulated sweep: a point per entry of `medians_us` (times `slowdown`), `noise` log-normal spread
// and 30 samples a side, what every point of the H200 fa-bench sweep took.
core::Results simulated_run(std::mt19937_64& rng, const std::vector<double>& medians_us, double noise,
                            const std::vector<double>& slowdown = {}) {
  std::vector<core::Record> recs;
  for (size_t i = 0; i < medians_us.size(); ++i) {
    const int n = kSamplesPerSide;
    const double factor = i < slowdown.size() ? slowdown[i] : 1.0;
    recs.push_back(make_record("k" + std::to_string(i), latency_samples(rng, n, medians_us[i] * factor, noise)));
  }
  return make_results(std::move(recs));
}

std::vector<double> sweep_medians(std::mt19937_64& rng, int points) {
  std::vector<double> m;
  for (int i = 0; i < points; ++i) m.push_back(20.0 + 5000.0 * std::uniform_real_distribution<double>(0, 1)(rng));
  return m;
}

}  // namespace

TEST_CASE("A/A of whole 144-point sweeps: at most 1% of runs fail with the false discovery rate held") {
  // Each point on its own trips the gate about once in a thousand A/As at 3% noise (the test above),
  // so a 144-point sweep compared without correction fails in several percent of runs; Benjamini-Hochberg over the
  // compared points holds the whole run's chance of a false failure at alpha.
  constexpr int kRuns = 200, kPoints = 144;
  std::mt19937_64 rng(22);
  gate::Options bh;
  bh.bootstrap_resamples = 50;  // the verdict at 3% noise does not rest on the interval
  gate::Options none = bh;
  none.correction = gate::Correction::none;
  int failed_bh = 0, failed_none = 0, not_passed_bh = 0;
  for (int run = 0; run < kRuns; ++run) {
    const auto medians = sweep_medians(rng, kPoints);
    const auto base = simulated_run(rng, medians, 0.03), cand = simulated_run(rng, medians, 0.03);
    const auto cmp = gate::compare(base, cand, bh);
    REQUIRE(cmp.family_size == kPoints);
    failed_bh += cmp.exit_code == kExitRegression;
    not_passed_bh += cmp.exit_code != kExitOk;
    failed_none += gate::compare(base, cand, none).exit_code == kExitRegression;
  }
  INFO("of " << kRuns << " runs: " << failed_bh << " failed with BH (" << not_passed_bh << " not passed), "
             << failed_none << " without correction");
  CHECK(failed_bh <= kRuns / 100);
  CHECK(not_passed_bh <= kRuns / 100);
  CHECK(failed_none > kRuns / 100);  // the correction is what holds it
}

TEST_CASE("among 144 points, a true regression at 3% noise is still caught") {
  // One point of 144 slower, 30 samples a side. The cutoff is then about alpha/144, so a lone +5% is
  // caught less often than in a one-point comparison (where it is 98%); a +10% always.
  constexpr int kRuns = 40, kPoints = 144, kSlow = 17;
  std::mt19937_64 rng(23);
  gate::Options o;
  o.bootstrap_resamples = 50;
  int others_failed = 0;
  std::map<double, int> caught;
  for (double factor : {1.05, 1.10}) {
    std::vector<double> slowdown(kPoints, 1.0);
    slowdown[kSlow] = factor;
    for (int run = 0; run < kRuns; ++run) {
      const auto medians = sweep_medians(rng, kPoints);
      const auto cmp = gate::compare(simulated_run(rng, medians, 0.03), simulated_run(rng, medians, 0.03, slowdown), o);
      caught[factor] += cmp.points[kSlow].verdict == Verdict::slower && cmp.exit_code == kExitRegression;
      for (size_t i = 0; i < cmp.points.size(); ++i) others_failed += i != kSlow && cmp.points[i].fails;
      if (run == 0 && factor == 1.10) {
        INFO(cmp.points[kSlow].reason);
        CHECK(cmp.points[kSlow].reason.find("Benjamini-Hochberg over 144 points at 0.01") != std::string::npos);
        CHECK(cmp.points[kSlow].p_slower <= cmp.p_slower_cutoff);
        CHECK(cmp.p_slower_cutoff == Approx(0.01 / 144));
      }
    }
  }
  INFO("of " << kRuns << " runs: +5% caught " << caught[1.05] << ", +10% caught " << caught[1.10] << "; "
             << others_failed << " unchanged points failed");
  CHECK(caught[1.10] == kRuns);
  CHECK(caught[1.05] >= kRuns * 3 / 4);
  CHECK(others_failed <= 1);
}

TEST_CASE("Benjamini-Hochberg: the cutoff grows with the discoveries") {
  // Ten points, each 10% slower with tight samples: every one is a discovery, so the cutoff is
  // alpha (10 of 10 at 10/10 * alpha), not alpha / 10.
  std::mt19937_64 rng(24);
  std::vector<core::Record> base, cand;
  for (int i = 0; i < 10; ++i) {
    base.push_back(make_record("k" + std::to_string(i), latency_samples(rng, 30, 100.0, 0.005)));
    cand.push_back(make_record("k" + std::to_string(i), latency_samples(rng, 30, 110.0, 0.005)));
  }
  auto cmp = gate::compare(make_results(base), make_results(cand), {});
  CHECK(cmp.counts[Verdict::slower] == 10);
  CHECK(cmp.p_slower_cutoff == Approx(0.01));
  // The same ten unchanged: no discovery, the cutoff is alpha / 10.
  cmp = gate::compare(make_results(base), make_results(base), {});
  CHECK(cmp.counts[Verdict::same] == 10);
  CHECK(cmp.p_slower_cutoff == Approx(0.001));
  CHECK(gate::parse_correction("none") == gate::Correction::none);
  CHECK_THROWS_AS(gate::parse_correction("holm"), InputError);
}

TEST_CASE("spread widens the interval, it does not veto: 50% slower on a noisy CPU fails") {
  // CPU-backend timings: 15-20% spread. A candidate 50% slower at every point is a regression the
  // interval of the ratio clears by far; the same spread with no change stays undecided or same.
  std::mt19937_64 rng(25);
  std::vector<core::Record> base, slow, again;
  for (int i = 0; i < 12; ++i) {
    const std::string k = "cpu" + std::to_string(i);
    base.push_back(make_record(k, latency_samples(rng, 30, 1000.0, 0.18)));
    slow.push_back(make_record(k, latency_samples(rng, 30, 1500.0, 0.18)));
    again.push_back(make_record(k, latency_samples(rng, 30, 1000.0, 0.18)));
  }
  auto cmp = gate::compare(make_results(base), make_results(slow), {});
  INFO(cmp.points[0].reason);
  CHECK(cmp.counts[Verdict::slower] == 12);
  CHECK(cmp.exit_code == kExitRegression);
  CHECK(cmp.points[0].reason.find("judged on the 95% interval of the ratio") != std::string::npos);
  CHECK(cmp.points[0].reason.find("clears the threshold") != std::string::npos);
  CHECK(cmp.points[0].ratio_ci.low > 1.03);

  cmp = gate::compare(make_results(base), make_results(again), {});
  CHECK(cmp.counts[Verdict::slower] == 0);
  CHECK(cmp.counts[Verdict::noisy] > 0);  // an interval of +-10% cannot rule out a 3% change
  CHECK(cmp.exit_code == kExitInconclusive);
}

TEST_CASE("a 2% slowdown under a 3% threshold is significant but passes; a 5% speedup is faster") {
  std::mt19937_64 rng(5);
  auto b = make_record("fused", latency_samples(rng, 200, 100.0, 0.005));
  auto c = make_record("fused", latency_samples(rng, 200, 102.0, 0.005));
  auto cmp = compare_one(b, c);
  CHECK(cmp.points[0].verdict == Verdict::same);
  CHECK(cmp.points[0].p_slower < 0.01);
  CHECK(cmp.points[0].reason.find("within") != std::string::npos);
  CHECK(cmp.exit_code == kExitOk);

  c = make_record("fused", latency_samples(rng, 30, 95.0, 0.01));
  cmp = compare_one(b, c);
  CHECK(cmp.points[0].verdict == Verdict::faster);
  CHECK_FALSE(cmp.points[0].fails);
  CHECK(cmp.exit_code == kExitOk);
  CHECK(cmp.points[0].ratio == Approx(0.95).margin(0.01));
  CHECK(cmp.points[0].ratio_ci.low < cmp.points[0].ratio);
  CHECK(cmp.points[0].ratio_ci.high > cmp.points[0].ratio);
}

TEST_CASE("per-kernel threshold overrides the global one") {
  std::mt19937_64 rng(6);
  const auto b = make_record("fused", latency_samples(rng, 30, 100.0, 0.01));
  const auto c = make_record("fused", latency_samples(rng, 30, 104.0, 0.01));
  gate::Options o;
  CHECK(compare_one(b, c, o).points[0].verdict == Verdict::slower);
  o.kernel_threshold["fused"] = 0.05;
  const auto cmp = compare_one(b, c, o);
  CHECK(cmp.points[0].verdict == Verdict::same);
  CHECK(cmp.points[0].threshold == 0.05);
  o.kernel_threshold = {{"reference", 0.05}};
  CHECK(compare_one(b, c, o).points[0].verdict == Verdict::slower);
}

TEST_CASE("throttled samples: judged on the interval widened for them") {
  std::mt19937_64 rng(21);
  // An A/A on a GPU that dipped under its power cap in a few batches: the same verdict without them.
  auto b = make_record("fused", latency_samples(rng, 200, 100.0, 0.005));
  auto c = make_record("fused", latency_samples(rng, 200, 100.0, 0.005));
  b.clock.throttled_samples = 10;
  c.clock.throttled_samples = 20;
  auto cmp = compare_one(b, c);
  INFO(cmp.points[0].reason);
  CHECK(cmp.points[0].verdict == Verdict::same);
  CHECK(cmp.points[0].reason.find("throttled in 10 of 200 baseline and 20 of 200 candidate samples") !=
        std::string::npos);
  CHECK(cmp.points[0].reason.find("interval of the ratio widened for the throttled samples") != std::string::npos);
  CHECK(cmp.points[0].reason.find("which lies within the threshold") != std::string::npos);
  CHECK(cmp.points[0].judged_ci.low <= cmp.points[0].ratio_ci.low);
  CHECK(cmp.exit_code == kExitOk);

  // More than a quarter of a side throttled: inconclusive, whatever the verdict.
  c.clock.throttled_samples = 51;
  cmp = compare_one(b, c);
  CHECK(cmp.points[0].verdict == Verdict::noisy);
  CHECK(cmp.points[0].latency_verdict == "same");
  CHECK(cmp.exit_code == kExitInconclusive);

  // A throttled baseline hiding a regression: its 25 slow samples lift its median to about 101, so
  // the candidate's 103.2 reads +2.2% (within the 3% threshold); without them the baseline's median
  // is 100 and the candidate +3.2% slower. The verdict depends on the throttled samples: inconclusive.
  std::vector<double> base, cand;
  for (int i = 0; i < 75; ++i) base.push_back(97.0 + 6.0 * i / 74.0);
  for (int i = 0; i < 25; ++i) base.push_back(106.0 + 0.04 * i);
  for (int i = 0; i < 100; ++i) cand.push_back(100.2 + 6.0 * i / 99.0);
  auto hiding = make_record("fused", base);
  hiding.clock.throttled_samples = 25;
  cmp = compare_one(hiding, make_record("fused", cand));
  INFO(cmp.points[0].reason);
  CHECK(cmp.points[0].latency_verdict == "same");
  CHECK(cmp.points[0].verdict == Verdict::noisy);
  CHECK(cmp.points[0].reason.find("throttled in 25 of 100 baseline") != std::string::npos);
  // The same baseline unthrottled: the comparison stands.
  hiding.clock.throttled_samples = 0;
  CHECK(compare_one(hiding, make_record("fused", cand)).points[0].verdict == Verdict::same);
}

TEST_CASE("noisy: spread over the ceiling, throttled clocks, too few samples -> exit 3") {
  std::mt19937_64 rng(8);
  const auto b = make_record("fused", latency_samples(rng, 30, 100.0, 0.01));

  auto wide = make_record("fused", latency_samples(rng, 30, 100.0, 0.2));
  auto cmp = compare_one(b, wide);
  CHECK(cmp.points[0].verdict == Verdict::noisy);
  CHECK(cmp.points[0].reason.find("candidate spread") != std::string::npos);
  CHECK(cmp.exit_code == kExitInconclusive);
  gate::Options loose;
  loose.max_rel_stddev = 0.5;
  CHECK(compare_one(b, wide, loose).points[0].verdict != Verdict::noisy);

  // A throttled candidate 20% slower: without its 4 throttled samples it is still 20% slower, so the
  // widened interval clears the threshold and the throttling explains nothing.
  auto throttled = make_record("fused", latency_samples(rng, 30, 120.0, 0.01));
  throttled.clock.throttled_samples = 4;
  cmp = compare_one(b, throttled);
  INFO(cmp.points[0].reason);
  CHECK(cmp.points[0].verdict == Verdict::slower);
  CHECK(cmp.points[0].reason.find("throttled in 0 of 30 baseline and 4 of 30 candidate samples") != std::string::npos);
  CHECK(cmp.exit_code == kExitRegression);

  auto few = make_record("fused", {100.0, 130.0, 131.0});
  cmp = compare_one(make_record("fused", {100.0, 100.5, 99.5}), few);
  CHECK(cmp.points[0].verdict == Verdict::noisy);
  CHECK(cmp.points[0].reason.find("cannot reach") != std::string::npos);

  cmp = compare_one(b, make_record("fused", {100.0}));
  CHECK(cmp.points[0].verdict == Verdict::noisy);
  CHECK_FALSE(cmp.points[0].compared);
}

TEST_CASE("a different SM clock under load is named, and does not change the verdict") {
  std::mt19937_64 rng(12);
  auto b = make_record("fused", latency_samples(rng, 30, 100.0, 0.005));
  auto slow = make_record("fused", latency_samples(rng, 30, 104.0, 0.005));
  b.clock.sm_mhz_median = 1800;
  slow.clock.sm_mhz_median = 1728;  // -4%
  auto cmp = compare_one(b, slow);
  CHECK(cmp.points[0].verdict == Verdict::slower);
  CHECK(cmp.points[0].baseline_sm_mhz == 1800);
  CHECK(cmp.points[0].candidate_sm_mhz == 1728);
  CHECK(cmp.points[0].reason.find("SM clock under load moved -4.0% (1800 -> 1728 MHz)") != std::string::npos);

  slow.clock.sm_mhz_median = 1795;  // under 1%: not worth a word
  cmp = compare_one(b, slow);
  CHECK(cmp.points[0].reason.find("SM clock") == std::string::npos);
  slow.clock.sm_mhz_median = 0;  // a schema 1.0 file: no median recorded
  b.clock.sm_mhz_median = 1800;
  CHECK(compare_one(b, slow).points[0].reason.find("SM clock") == std::string::npos);
}

TEST_CASE("error verdicts: a point broken by the candidate fails, one broken before does not") {
  std::mt19937_64 rng(9);
  const auto ok = make_record("fused", latency_samples(rng, 30, 100.0, 0.01));
  auto bad = ok;
  bad.status = core::Status::incorrect;
  bad.reason = "max error 0.3 over tolerance 0.01";
  auto cmp = compare_one(ok, bad);
  CHECK(cmp.points[0].verdict == Verdict::error);
  CHECK(cmp.points[0].fails);
  CHECK(cmp.points[0].reason.find("candidate incorrect (max error 0.3") != std::string::npos);
  CHECK(cmp.exit_code == kExitRegression);

  auto failed = ok;
  failed.status = core::Status::failed;
  failed.reason = "CUDA error";
  cmp = compare_one(failed, ok);  // fixed by the candidate: reported, not blamed
  CHECK(cmp.points[0].verdict == Verdict::error);
  CHECK_FALSE(cmp.points[0].fails);
  CHECK(cmp.exit_code == kExitInconclusive);  // and nothing was compared
}

TEST_CASE("missing and new points: a missing point fails unless --allow-missing") {
  std::mt19937_64 rng(10);
  const auto a = make_record("fused", latency_samples(rng, 30, 100.0, 0.01), 1024);
  const auto a2 = make_record("fused", latency_samples(rng, 30, 100.0, 0.01), 1024);
  const auto only_base = make_record("fused", latency_samples(rng, 30, 100.0, 0.01), 2048);
  const auto only_cand = make_record("reference", latency_samples(rng, 30, 100.0, 0.01), 1024);
  const auto base = make_results({a, only_base});
  const auto cand = make_results({a2, only_cand});
  gate::Options o;
  auto cmp = gate::compare(base, cand, o);
  REQUIRE(cmp.points.size() == 3);
  CHECK(cmp.points[0].verdict == Verdict::same);
  CHECK(cmp.points[1].verdict == Verdict::missing);
  CHECK(cmp.points[1].key == core::point_key(only_base));
  CHECK(cmp.points[2].verdict == Verdict::added);
  CHECK(gate::to_string(Verdict::added) == "new");
  CHECK(cmp.points[1].fails);
  CHECK(cmp.exit_code == kExitRegression);
  CHECK(cmp.counts[Verdict::missing] == 1);
  o.fail_on_missing = false;  // --allow-missing
  cmp = gate::compare(base, cand, o);
  CHECK_FALSE(cmp.points[1].fails);
  CHECK(cmp.exit_code == kExitOk);
}

TEST_CASE("a gate with nothing to compare is inconclusive, not a pass") {
  const auto cmp = gate::compare(make_results({}), make_results({}), {});
  CHECK(cmp.exit_code == kExitInconclusive);
  CHECK(cmp.summary.find("no point could be compared") != std::string::npos);
}

TEST_CASE("counters gate: DRAM bytes, tensor ops, occupancy; off by default") {
  std::mt19937_64 rng(12);
  const auto samples = latency_samples(rng, 30, 100.0, 0.01);
  auto b = make_record("fused", samples);
  b.counters.status = attnprof::core::CounterStatus::ok;
  b.counters.total = {{"dram__bytes_read.sum", 1.0e9},
                      {"dram__bytes_write.sum", 0.5e9},
                      {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", 4.0e12}};
  b.occupancy.achieved_pct = 40.0;
  auto c = make_record("fused", latency_samples(rng, 30, 100.0, 0.01));
  c.counters = b.counters;
  c.occupancy = b.occupancy;

  gate::Options o;
  o.counters = true;
  auto cmp = compare_one(b, c, o);
  CHECK(cmp.points[0].verdict == Verdict::same);
  CHECK(cmp.points[0].counters.size() == 3);

  c.counters.total["dram__bytes_read.sum"] = 1.05e9;  // +3.3% of read + write: over +2%
  CHECK(compare_one(b, c).points[0].verdict == Verdict::same);  // gate off by default
  cmp = compare_one(b, c, o);
  CHECK(cmp.points[0].verdict == Verdict::counter_regression);
  CHECK(cmp.points[0].fails);
  CHECK(cmp.points[0].reason.find("dram_bytes +3.3%") != std::string::npos);
  CHECK(cmp.exit_code == kExitRegression);
  o.counter_thresholds.dram_bytes_increase = 0.05;
  CHECK(compare_one(b, c, o).points[0].verdict == Verdict::same);

  c.counters.total = b.counters.total;
  c.occupancy.achieved_pct = 36.0;  // -10%
  CHECK(compare_one(b, c, o).points[0].verdict == Verdict::counter_regression);
  c.occupancy.achieved_pct = 39.0;  // -2.5%: within -5%
  CHECK(compare_one(b, c, o).points[0].verdict == Verdict::same);

  c.counters.total["sm__ops_path_tensor_src_bf16_dst_fp32.sum"] = 8.0e12;  // twice the math
  cmp = compare_one(b, c, o);
  CHECK(cmp.points[0].verdict == Verdict::counter_regression);
  CHECK(cmp.points[0].reason.find("tensor_ops") != std::string::npos);

  c.counters.status = attnprof::core::CounterStatus::unavailable;
  cmp = compare_one(b, c, o);
  CHECK(cmp.points[0].verdict == Verdict::same);
  CHECK(cmp.points[0].counters_note.find("not comparable") != std::string::npos);
}

TEST_CASE("counters gate: occupancy from the counter when no occupancy was recorded; a NaN is not compared") {
  std::mt19937_64 rng(14);
  auto b = make_record("fused", latency_samples(rng, 30, 100.0, 0.01));
  b.counters.status = attnprof::core::CounterStatus::ok;
  b.counters.total = {{std::string(attnprof::core::kMetricAchievedOccupancy), 40.0}};
  auto c = make_record("fused", latency_samples(rng, 30, 100.0, 0.01));
  c.counters = b.counters;
  c.counters.total[attnprof::core::kMetricAchievedOccupancy] = 30.0;  // -25%
  gate::Options o;
  o.counters = true;
  auto cmp = compare_one(b, c, o);
  REQUIRE(cmp.points[0].counters.size() == 1);
  CHECK(cmp.points[0].counters[0].source == attnprof::core::kMetricAchievedOccupancy);
  CHECK(cmp.points[0].verdict == Verdict::counter_regression);

  c.counters.total[attnprof::core::kMetricAchievedOccupancy] = std::nan("");
  cmp = compare_one(b, c, o);
  CHECK(cmp.points[0].counters.empty());
  CHECK(cmp.points[0].verdict == Verdict::same);
  CHECK(cmp.points[0].counters_note == "no counter collected on both sides");
}

TEST_CASE("device mismatch is refused unless allowed, and then reported") {
  std::mt19937_64 rng(13);
  const auto b = make_results({make_record("fused", latency_samples(rng, 30, 100.0, 0.01))});
  auto c = make_results({make_record("fused", latency_samples(rng, 30, 100.0, 0.01))});

  auto expect_refused = [&](const core::Results& cand, const std::string& names) {
    try {
      gate::compare(b, cand, {});
      FAIL("no InputError for " << names);
    } catch (const InputError& e) {
      const std::string msg = e.what();
      CHECK(msg.find(names) != std::string::npos);
      CHECK(msg.find('\n') == std::string::npos);
    }
  };
  auto other = c;
  other.context.device.name = "NVIDIA H100 80GB HBM3";
  expect_refused(other, "device 'NVIDIA H200' vs 'NVIDIA H100 80GB HBM3'");
  other = c;
  other.context.device.driver_version = "575.51.03";
  expect_refused(other, "driver");
  other = c;
  other.context.device.sm_clock_max_mhz = 1755;
  expect_refused(other, "max SM clock 1980 vs 1755 MHz");
  other = c;
  other.context.backend = attnprof::core::BackendKind::cpu;
  expect_refused(other, "backend");

  gate::Options o;
  o.allow_device_mismatch = true;
  const auto cmp = gate::compare(b, other, o);
  REQUIRE(cmp.device_differences.size() == 1);
  CHECK(cmp.device_differences[0].find("backend") != std::string::npos);
  CHECK(cmp.exit_code == kExitOk);
}

TEST_CASE("geometric mean of the ratios and its interval") {
  std::mt19937_64 rng(14);
  const auto b1 = make_record("fused", latency_samples(rng, 30, 100.0, 0.01), 1024);
  const auto b2 = make_record("fused", latency_samples(rng, 30, 100.0, 0.01), 2048);
  auto c1 = b1, c2 = b2;
  for (double& v : c1.samples_us) v *= 1.10;
  for (double& v : c2.samples_us) v /= 1.10;
  const auto cmp = gate::compare(make_results({b1, b2}), make_results({c1, c2}), {});
  CHECK(cmp.geomean_points == 2);
  CHECK(cmp.geomean_ratio == Approx(1.0).margin(1e-9));
  CHECK(cmp.geomean_ci.low <= 1.0);
  CHECK(cmp.geomean_ci.high >= 1.0);
  CHECK(cmp.points[0].verdict == Verdict::slower);
  CHECK(cmp.points[1].verdict == Verdict::faster);
  CHECK(cmp.exit_code == kExitRegression);
}

TEST_CASE("options are validated and NAME=VALUE tokens parsed") {
  gate::Options o;
  o.alpha = 0;
  CHECK_THROWS_AS(gate::compare(make_results({}), make_results({}), o), InputError);
  CHECK(gate::parse_name_value("fused=0.05") == std::make_pair(std::string("fused"), 0.05));
  CHECK_THROWS_AS(gate::parse_name_value("fused"), InputError);
  CHECK_THROWS_AS(gate::parse_name_value("=0.1"), InputError);
  CHECK_THROWS_WITH(gate::parse_name_value("fused=abc"), Catch::Contains("'abc'"));
}

TEST_CASE("confirm: a slower point fails only if a re-run of the candidate is slower too") {
  std::mt19937_64 rng(4242);
  const auto samples = [&](double median) { return latency_samples(rng, kSamplesPerSide, median, 0.005); };
  // Two points slower in the candidate: "a" by a shift between processes (the re-run is back to the
  // baseline), "b" by a real regression (slower again in the re-run). "c" is unchanged.
  const auto base = make_results({make_record("a", samples(100)), make_record("b", samples(100)), make_record("c", samples(100))});
  const auto cand = make_results({make_record("a", samples(106)), make_record("b", samples(110)), make_record("c", samples(100))});
  const auto rerun = make_results({make_record("a", samples(100)), make_record("b", samples(110))});
  gate::Comparison first = gate::compare(base, cand, {});
  REQUIRE(first.exit_code == kExitRegression);
  REQUIRE(first.points[0].verdict == Verdict::slower);
  REQUIRE(first.points[1].verdict == Verdict::slower);

  gate::confirm(first, gate::compare(base, rerun, {}), "rerun.json");
  CHECK(first.points[0].verdict == Verdict::unconfirmed);
  CHECK_FALSE(first.points[0].fails);
  CHECK(first.points[0].reason.find("the re-run says same") != std::string::npos);
  CHECK(first.points[1].verdict == Verdict::slower);
  CHECK(first.points[1].fails);
  CHECK(first.points[1].reason.find("confirmed by the re-run") != std::string::npos);
  CHECK(first.points[2].verdict == Verdict::same);
  CHECK(first.exit_code == kExitRegression);
  CHECK(first.counts[Verdict::unconfirmed] == 1);
  CHECK(first.summary.find("re-checked against rerun.json") != std::string::npos);

  SECTION("with the real regression gone from the re-run too, the gate passes") {
    gate::Comparison again = gate::compare(base, cand, {});
    gate::confirm(again, gate::compare(base, make_results({make_record("a", samples(100)), make_record("b", samples(100))}), {}),
                  "rerun.json");
    CHECK(again.exit_code == kExitOk);
    CHECK(again.counts[Verdict::unconfirmed] == 2);
  }
  SECTION("a slower point missing from the re-run still fails") {
    gate::Comparison again = gate::compare(base, cand, {});
    gate::confirm(again, gate::compare(base, make_results({make_record("a", samples(100))}), {}), "rerun.json");
    CHECK(again.points[1].verdict == Verdict::slower);
    CHECK(again.points[1].reason.find("not in the re-run") != std::string::npos);
    CHECK(again.exit_code == kExitRegression);
  }
}

TEST_CASE("confirm: shifts between processes at single points no longer fail a 144-point A/A") {
  // What the H200 showed (docs/PERFORMANCE.md): in a 144-point A/A, a few points move 3-6% between
  // processes with tight samples inside each run, a different few each time. One comparison fails on
  // them; requiring the re-run to agree clears them, while a real 10% regression stays caught.
  std::mt19937_64 rng(777);
  const auto run = [&](int shifted_from, double shift, double regression) {
    std::vector<core::Record> recs;
    for (int i = 0; i < 144; ++i) {
      double median = 100.0 * (i == 7 ? regression : 1.0);
      if (i >= shifted_from && i < shifted_from + 3) median *= shift;
      std::string kernel = "k";
      kernel += std::to_string(i);
      recs.push_back(make_record(kernel, latency_samples(rng, 10, median, 0.003)));
    }
    return make_results(std::move(recs));
  };
  const auto base = run(0, 1.0, 1.0);
  const auto cand = run(20, 1.05, 1.10);   // points 20-22 shifted +5%, point 7 a real +10%
  const auto rerun = run(90, 1.05, 1.10);  // other points shifted this time; point 7 still slower
  gate::Options o;
  o.bootstrap_resamples = 200;
  gate::Comparison first = gate::compare(base, cand, o);
  CHECK(first.counts[Verdict::slower] == 4);
  gate::confirm(first, gate::compare(base, rerun, o), "rerun");
  CHECK(first.counts[Verdict::slower] == 1);
  CHECK(first.counts[Verdict::unconfirmed] == 3);
  CHECK(first.points[7].verdict == Verdict::slower);
  CHECK(first.exit_code == kExitRegression);
}

namespace {

// The committed H200 fa-bench sweep: 144 points, 24 of them with throttled samples (2-73% of a side).
core::Results fa_bench() { return core::read_results(ATTNPROF_SOURCE_DIR "/reports/h200-fa-bench/results.json"); }

core::Results scaled(core::Results r, double factor) {
  for (auto& rec : r.records)
    for (double& s : rec.samples_us) s *= factor;
  return r;
}

}  // namespace

TEST_CASE("throttled samples never veto a slowdown beyond the widened interval: fa-bench x1.5") {
  const core::Results base = fa_bench();
  int64_t throttled_points = 0;
  for (const auto& r : base.records) throttled_points += r.clock.throttled_samples > 0;
  REQUIRE(throttled_points > 0);
  gate::Options o;
  o.bootstrap_resamples = 500;  // 144 points; the 50% slowdown does not rest on the interval's last digit
  const auto cmp = gate::compare(base, scaled(base, 1.5), o);
  for (const auto& p : cmp.points) {
    INFO(p.key << ": " << p.reason);
    CHECK(p.verdict == Verdict::slower);
  }
  CHECK(cmp.exit_code == kExitRegression);

  // One throttling point alone, 50% slower: a regression (exit 1), not inconclusive (exit 3), even with
  // more than a quarter of its samples throttled.
  const auto most = std::max_element(base.records.begin(), base.records.end(), [](const auto& a, const auto& b) {
    return a.clock.throttled_samples * b.samples_us.size() < b.clock.throttled_samples * a.samples_us.size();
  });
  REQUIRE(static_cast<double>(most->clock.throttled_samples) >
          core::kGateThrottledShareMax * static_cast<double>(most->samples_us.size()));
  const auto one = gate::compare(make_results({*most}), scaled(make_results({*most}), 1.5), {});
  INFO(one.points[0].reason);
  CHECK(one.points[0].verdict == Verdict::slower);
  CHECK(one.exit_code == kExitRegression);
  CHECK(one.points[0].judged_ci.low > 1.03);
  // The same point against itself: more than a quarter throttled, so it is not called `same`.
  const auto aa = gate::compare(make_results({*most}), make_results({*most}), {});
  CHECK(aa.points[0].verdict == Verdict::noisy);
  CHECK(aa.points[0].reason.find("throttled (over 25%)") != std::string::npos);
}

TEST_CASE("too few samples for the cutoff actually applied: 7 a side among 144 points is not a pass") {
  // 7 vs 7 samples reach p = 1 / C(14, 7) = 2.9e-4 at best: under alpha (0.01), but over the
  // Benjamini-Hochberg cutoff of one discovery among 144 (0.01 / 144 = 6.9e-5).
  constexpr int kPoints = 144, kSamples = 7, kSlow = 40;
  std::mt19937_64 rng(71);
  const auto medians = sweep_medians(rng, kPoints);
  std::vector<core::Record> base, cand;
  for (int i = 0; i < kPoints; ++i) {
    const std::string k = "k" + std::to_string(i);
    base.push_back(make_record(k, latency_samples(rng, kSamples, medians[i], 0.01)));
    cand.push_back(make_record(k, latency_samples(rng, kSamples, medians[i] * (i == kSlow ? 1.509 : 1.0), 0.01)));
  }
  const auto cmp = gate::compare(make_results(base), make_results(cand), {});
  const auto& slow = cmp.points[kSlow];
  INFO(slow.reason);
  CHECK(cmp.exit_code != kExitOk);
  CHECK(slow.verdict == Verdict::noisy);
  CHECK(slow.reason.find("7 vs 7 samples cannot reach p <= 6.9e-05") != std::string::npos);
  CHECK(slow.ratio > 1.4);
  CHECK(slow.reason.find("is not significant") != std::string::npos);
  // In a comparison of that point alone the cutoff is alpha, which 7 samples can reach: it fails.
  const auto alone = compare_one(base[kSlow], cand[kSlow]);
  CHECK(alone.points[0].verdict == Verdict::slower);
  CHECK(alone.exit_code == kExitRegression);
}

TEST_CASE("a reason describes the interval from its numbers, not from the verdict") {
  // 20% spread: judged on the interval, which a 45% slowdown clears by far; an alpha no p-value of
  // these samples reaches keeps the point from being called slower, and the reason says both.
  std::mt19937_64 rng(72);
  const auto b = make_record("cpu", latency_samples(rng, 30, 1000.0, 0.2));
  const auto c = make_record("cpu", latency_samples(rng, 30, 1450.0, 0.2));
  gate::Options strict;
  strict.alpha = 1e-15;  // still above 1 / C(60, 30) = 8.5e-18, so the samples could in principle reach it
  const auto cmp = compare_one(b, c, strict);
  const auto& p = cmp.points[0];
  INFO(p.reason);
  REQUIRE(p.judged_ci.low > 1.03);
  CHECK(p.verdict == Verdict::noisy);
  CHECK(p.reason.find("which clears the threshold") != std::string::npos);
  CHECK(p.reason.find("reaches past") == std::string::npos);
  CHECK(p.reason.find("is not significant") != std::string::npos);
  // A significant change beyond the threshold is never said to be within it.
  const auto wide_same = compare_one(b, make_record("cpu", latency_samples(rng, 30, 1000.0, 0.2)));
  INFO(wide_same.points[0].reason);
  const auto& q = wide_same.points[0];
  if (q.ratio > 1.03) CHECK(q.reason.find("within the") == std::string::npos);
  CHECK(q.reason.find(q.judged_ci.low >= 1 / 1.03 && q.judged_ci.high <= 1.03 ? "lies within the threshold"
                                                                                : "reaches past the threshold") !=
        std::string::npos);
}

TEST_CASE("a point unsupported in both runs is its own verdict and never fails") {
  std::mt19937_64 rng(73);
  const auto ok_b = make_record("fused", latency_samples(rng, 30, 100.0, 0.01), 1024);
  const auto ok_c = make_record("fused", latency_samples(rng, 30, 100.0, 0.01), 1024);
  auto unsupported = make_record("fused-sm90", {}, 1024);
  unsupported.status = core::Status::unsupported;
  unsupported.reason = "hdim 512 is not supported";
  auto cmp = gate::compare(make_results({ok_b, unsupported}), make_results({ok_c, unsupported}), {});
  REQUIRE(cmp.points.size() == 2);
  CHECK(cmp.points[1].verdict == Verdict::unsupported);
  CHECK_FALSE(cmp.points[1].fails);
  CHECK(cmp.points[1].reason == "unsupported in both runs (hdim 512 is not supported)");
  CHECK(cmp.counts[Verdict::unsupported] == 1);
  CHECK(cmp.counts.count(Verdict::error) == 0);
  CHECK(cmp.exit_code == kExitOk);
  // Unsupported now, ok before: still an error that fails.
  cmp = gate::compare(make_results({ok_b, make_record("fused-sm90", ok_b.samples_us, 1024)}),
                      make_results({ok_c, unsupported}), {});
  CHECK(cmp.points[1].verdict == Verdict::error);
  CHECK(cmp.points[1].fails);
}

TEST_CASE("samples too far apart for any ratio are bad input, not an internal error") {
  auto tiny = make_record("fused", std::vector<double>(10, 5e-324));
  auto huge = make_record("fused", std::vector<double>(10, 1e308));
  CHECK_THROWS_AS(compare_one(tiny, huge), InputError);
  CHECK_THROWS_AS(compare_one(huge, tiny), InputError);
  // Extreme but within a double's range of each other: compared, every number finite.
  std::vector<double> big, bigger;
  for (int i = 0; i < 30; ++i) {
    big.push_back(1e307 * (1 + 0.001 * i));
    bigger.push_back(1.5e307 * (1 + 0.001 * i));
  }
  const auto cmp = compare_one(make_record("fused", big), make_record("fused", bigger));
  const auto& p = cmp.points[0];
  INFO(p.reason);
  CHECK(p.verdict == Verdict::slower);
  CHECK(p.ratio == Approx(1.5));
  CHECK(std::isfinite(p.baseline_rel_stddev));
  CHECK(p.baseline_rel_stddev < 0.01);
  CHECK(std::isfinite(cmp.geomean_ci.high));
}

TEST_CASE("a run recorded on a busy machine is named, and does not change the verdict") {
  std::mt19937_64 rng(17);
  auto b = make_results({make_record("fused", latency_samples(rng, 30, 100.0, 0.01))});
  auto c = make_results({make_record("fused", latency_samples(rng, 30, 100.0, 0.01))});
  const gate::Comparison calm = gate::compare(b, c, {}, "base.json", "cand.json");
  CHECK(calm.busy_warnings.empty());  // no load recorded (files before schema 1.11)

  c.context.host_load = core::HostLoad{1.9, 2};  // under its cores: not busy
  b.context.host_load = core::HostLoad{3.1, 2};
  const gate::Comparison busy = gate::compare(b, c, {}, "base.json", "cand.json");
  REQUIRE(busy.busy_warnings.size() == 1);
  CHECK(busy.busy_warnings[0] ==
        "base.json was measured on a busy machine: load 3.1 on 2 cores; its timings vary with the machine's other work");
  CHECK(busy.exit_code == calm.exit_code);
  CHECK(gate::render_markdown(busy).find("> **Busy machine**: base.json was measured on a busy machine") !=
        std::string::npos);
  CHECK(nlohmann::json::parse(gate::render_json(busy)).at("busy_machine").size() == 1);
  CHECK_FALSE(nlohmann::json::parse(gate::render_json(calm)).contains("busy_machine"));

  // --confirm: the re-run's own load is named too, the baseline's once.
  auto rerun = c;
  rerun.context.host_load = core::HostLoad{9.0, 4};
  gate::Comparison first = busy;
  gate::confirm(first, gate::compare(b, rerun, {}, "base.json", "rerun.json"), "rerun.json");
  REQUIRE(first.busy_warnings.size() == 2);
  CHECK(first.busy_warnings[1].starts_with("rerun.json was measured on a busy machine: load 9.0 on 4 cores"));
}

TEST_CASE("a backward point is compared with the baseline's backward point only, never with the forward") {
  std::mt19937_64 rng(44);
  core::Record fwd = make_record("fused", latency_samples(rng, kSamplesPerSide, 100.0, 0.01));
  core::Record bwd = make_record("fused", latency_samples(rng, kSamplesPerSide, 250.0, 0.01));
  bwd.shape.pass = core::Pass::bwd;
  // The candidate's backward is 2.5x the forward's time: against its own baseline it is the same.
  core::Record bwd_again = make_record("fused", latency_samples(rng, kSamplesPerSide, 250.0, 0.01));
  bwd_again.shape.pass = core::Pass::bwd;
  const gate::Comparison same = gate::compare(make_results({fwd, bwd}), make_results({fwd, bwd_again}), {});
  REQUIRE(same.points.size() == 2);
  for (const auto& p : same.points) {
    INFO(p.key);
    CHECK(p.verdict == Verdict::same);
  }
  // A run of the backward alone against a forward-only baseline: missing and new, nothing compared.
  const gate::Comparison apart = gate::compare(make_results({fwd}), make_results({bwd}), {});
  REQUIRE(apart.points.size() == 2);
  CHECK(apart.points[0].verdict == Verdict::missing);
  CHECK(apart.points[1].verdict == Verdict::added);
  CHECK(apart.points[1].key.find(" bwd |") != std::string::npos);
}
