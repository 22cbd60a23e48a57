#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/stats.hpp"

using namespace attnprof::core;

TEST_CASE("type-7 quantiles match numpy's default") {
  // np.percentile([7, 15, 36, 39, 40, 41], [25, 50, 75]) -> 20.25, 37.5, 39.75
  const std::vector<double> a{41, 7, 39, 15, 40, 36};  // unsorted on purpose
  CHECK(quantile(a, 0.25) == Approx(20.25));
  CHECK(median(a) == Approx(37.5));
  CHECK(quantile(a, 0.75) == Approx(39.75));
  CHECK(quantile(a, 0.0) == 7);
  CHECK(quantile(a, 1.0) == 41);
  // np.quantile([1, 2, 3, 4, 10], [0.1, 0.5, 0.9, 0.99]) -> 1.4, 3, 7.6, 9.76
  const std::vector<double> b{1, 2, 3, 4, 10};
  CHECK(quantile(b, 0.10) == Approx(1.4));
  CHECK(quantile(b, 0.50) == Approx(3));
  CHECK(quantile(b, 0.90) == Approx(7.6));
  CHECK(quantile(b, 0.99) == Approx(9.76));
  CHECK(quantile(std::vector<double>{5}, 0.9) == 5);
  CHECK_THROWS(quantile(b, 1.5));
  CHECK_THROWS(quantile(b, -0.1));
}

TEST_CASE("mean and sample standard deviation") {
  const std::vector<double> x{2, 4, 4, 4, 5, 5, 7, 9};
  CHECK(mean(x) == 5);
  CHECK(stddev(x) == Approx(std::sqrt(32.0 / 7)));  // population sd would be 2
  CHECK(std::isnan(stddev(std::vector<double>{3})));
  CHECK(std::isnan(mean(std::vector<double>{})));
  CHECK(std::isnan(median(std::vector<double>{})));
}

TEST_CASE("bootstrap CI of the median: contains it, reproducible, order-independent") {
  std::vector<double> x;
  for (int i = 0; i < 200; ++i) x.push_back(100 + 10 * std::sin(i * 1.7) + (i % 13 == 0 ? 40 : 0));
  const double med = median(x);
  const Interval ci = bootstrap_median_ci(x);
  CHECK(ci.low <= med);
  CHECK(med <= ci.high);
  CHECK(ci.low < ci.high);
  CHECK(ci.high - ci.low < 10);  // a 200-sample median is tighter than the spread

  const Interval again = bootstrap_median_ci(x);
  CHECK(again.low == ci.low);
  CHECK(again.high == ci.high);
  std::vector<double> reversed(x.rbegin(), x.rend());
  const Interval rev = bootstrap_median_ci(reversed);
  CHECK(rev.low == ci.low);
  CHECK(rev.high == ci.high);

  const Interval other_seed = bootstrap_median_ci(x, 0.95, 2000, 12345);
  CHECK((other_seed.low != ci.low || other_seed.high != ci.high));
  const Interval narrower = bootstrap_median_ci(x, 0.5);
  CHECK(narrower.low >= ci.low);
  CHECK(narrower.high <= ci.high);

  const Interval constant = bootstrap_median_ci(std::vector<double>(20, 3.5));
  CHECK(constant.low == 3.5);
  CHECK(constant.high == 3.5);
  const Interval empty = bootstrap_median_ci(std::vector<double>{});
  CHECK(std::isnan(empty.low));
  CHECK_THROWS(bootstrap_median_ci(x, 1.0));
  CHECK_THROWS(bootstrap_median_ci(x, 0.95, 0));
}

namespace {

// n samples around 100 with a small, deterministic, independent-looking jitter, plus `step` on the
// samples whose index i has (i / run) % period == period - 1: runs of `run` samples held on a level,
// as a GPU clock held on one step for a while makes them.
std::vector<double> held_levels(int n, int run, int period, double step) {
  std::vector<double> x;
  for (int i = 0; i < n; ++i)
    x.push_back(100 + 0.05 * std::sin(i * 2.39996) + ((i / run) % period == period - 1 ? step : 0));
  return x;
}

}  // namespace

TEST_CASE("batch-median CI: wide where neighbouring samples move together, like the bootstrap where not") {
  // 7 runs of 30 at 100, then 3 of 30 at 103 (one cycle of 300 samples, 10 batches of 30): the median
  // sits in the level at 100, so the bootstrap, which sees only the values, is sure of it to 0.1%; the
  // batches see the level move.
  std::vector<double> x;
  for (int i = 0; i < 300; ++i) x.push_back(100 + 0.05 * std::sin(i * 2.39996) + (i >= 210 ? 3 : 0));
  const Interval boot = bootstrap_median_ci(x);
  const Interval batch = batch_median_ci(x);
  CHECK(boot.high - boot.low < 0.2);
  CHECK(batch.high - batch.low > 2.0);
  CHECK(batch.low <= median(x));
  CHECK(median(x) <= batch.high);
  // median_ci takes the wider.
  const Interval both = median_ci(x);
  CHECK(both.low == batch.low);
  CHECK(both.high == batch.high);

  // Order matters to the batches, not to the bootstrap: the same values, interleaved so that every batch
  // holds 7 parts of 100 to 3 of 103, give batches that agree.
  std::vector<double> mixed;
  for (int i = 0; i < 30; ++i)
    for (int b = 0; b < 10; ++b) mixed.push_back(x[static_cast<size_t>(b * 30 + i)]);
  const Interval batch_mixed = batch_median_ci(mixed);
  CHECK(batch_mixed.high - batch_mixed.low < 0.2);
  const Interval boot_mixed = bootstrap_median_ci(mixed);
  CHECK(boot_mixed.low == boot.low);
  CHECK(boot_mixed.high == boot.high);

  // Independent noise: the two intervals are of the same size.
  std::vector<double> noise;
  uint64_t state = 42;
  for (int i = 0; i < 1000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    noise.push_back(100 + static_cast<double>(state >> 11) / 9007199254740992.0);  // uniform [100, 101)
  }
  const double boot_width = bootstrap_median_ci(noise).high - bootstrap_median_ci(noise).low;
  const double batch_width = batch_median_ci(noise).high - batch_median_ci(noise).low;
  CHECK(batch_width > 0.4 * boot_width);
  CHECK(batch_width < 2.5 * boot_width);

  // Runs that come and go faster than a batch average out.
  const Interval fast = batch_median_ci(held_levels(3000, 10, 4, 3.0));
  CHECK(fast.high - fast.low < 0.3);

  const Interval constant = batch_median_ci(std::vector<double>(40, 3.5));
  CHECK(constant.low == 3.5);
  CHECK(constant.high == 3.5);
  CHECK(std::isnan(batch_median_ci(std::vector<double>(9, 1.0)).low));  // fewer samples than batches
  CHECK_THROWS(batch_median_ci(x, 1));
  CHECK_THROWS(batch_median_ci(x, 32));
  // median_ci_within decides as median_ci's half-width would, whichever interval is the wider.
  for (const std::vector<double>* v : {&x, &mixed, &noise}) {
    const Interval ci = median_ci(*v);
    const double half = 0.5 * (ci.high - ci.low);
    CHECK(median_ci_within(*v, half * 1.001));
    CHECK_FALSE(median_ci_within(*v, half * 0.999));
  }
  // Below kMinSamplesPerBatch per batch, median_ci is the bootstrap's.
  const std::vector<double> few(x.begin() + 195, x.begin() + 224);  // 29 samples, the level moves at 15
  const Interval few_ci = median_ci(few);
  CHECK(few_ci.low == bootstrap_median_ci(few).low);
  CHECK(few_ci.high == bootstrap_median_ci(few).high);
}

TEST_CASE("summarize fills every field") {
  const std::vector<double> x{10, 12, 11, 13, 30, 11, 12, 10, 11, 12};
  const LatencySummary s = summarize(x);
  CHECK(s.n == 10);
  CHECK(s.mean_us == Approx(13.2));
  CHECK(s.stddev_us == Approx(stddev(x)));
  CHECK(s.rel_stddev == Approx(stddev(x) / 13.2));
  CHECK(s.min_us == 10);
  CHECK(s.max_us == 30);
  CHECK(s.p50_us == Approx(11.5));        // sorted: 10 10 11 11 11 12 12 12 13 30
  CHECK(s.p90_us == Approx(13 + 0.1 * 17));  // h = 8.1
  CHECK(s.p99_us == Approx(13 + 0.91 * 17)); // h = 8.91
  CHECK(s.p50_ci_low_us <= s.p50_us);
  CHECK(s.p50_ci_high_us >= s.p50_us);
  CHECK(s.p50_ci_low_us >= 10);
  CHECK(s.p50_ci_high_us <= 13);
}

TEST_CASE("summarize of no samples and of one sample does not crash") {
  const LatencySummary none = summarize(std::vector<double>{});
  CHECK(none.n == 0);
  CHECK(none.p50_us == 0);
  CHECK(none.p99_us == 0);
  const LatencySummary one = summarize(std::vector<double>{42});
  CHECK(one.n == 1);
  CHECK(one.p50_us == 42);
  CHECK(one.p99_us == 42);
  CHECK(one.p50_ci_low_us == 42);
  CHECK(one.p50_ci_high_us == 42);
  CHECK(std::isnan(one.stddev_us));  // unknown spread, not zero spread
  CHECK(std::isnan(one.rel_stddev));
}

TEST_CASE("a percentile is supported once its distribution-free interval ends at observed samples") {
  CHECK(min_samples_for_quantile(0.5) == 6);    // 0.5^6 = 0.016 <= 0.025 < 0.5^5
  CHECK(min_samples_for_quantile(0.9) == 36);   // 0.9^36 = 0.0225 <= 0.025 < 0.9^35 = 0.0250
  CHECK(min_samples_for_quantile(0.99) == 368);
  CHECK(min_samples_for_quantile(0.01) == 368);  // symmetric: the lower tail needs as many
  CHECK(min_samples_for_quantile(0.99, 0.90) == 299);
  CHECK_FALSE(quantile_supported(30, 0.99));
  CHECK(quantile_supported(368, 0.99));
  CHECK_FALSE(quantile_supported(35, 0.9));
  CHECK(quantile_supported(36, 0.9));
  CHECK_THROWS(min_samples_for_quantile(1.0));
}

TEST_CASE("shown percentiles: the estimate where supported, else the maximum, marked") {
  std::vector<double> xs;
  for (int i = 1; i <= 30; ++i) xs.push_back(i);
  const LatencySummary s30 = summarize(xs);
  const ShownPercentile p99 = shown_percentile(s30, 0.99);
  CHECK(p99.value_us == 30);
  CHECK(p99.note == "n=30: max");
  CHECK(s30.p99_us != 30);  // the type-7 figure itself stays in the results
  CHECK(percentile_text(p99, "30.00") == "30.00 (n=30: max)");
  CHECK(shown_percentile(s30, 0.9).note == "n=30: max");
  const ShownPercentile p50 = shown_percentile(s30, 0.5);
  CHECK(p50.value_us == s30.p50_us);
  CHECK(p50.note.empty());
  CHECK(percentile_text(p50, "15.50") == "15.50");

  for (int i = 31; i <= 400; ++i) xs.push_back(i);
  const LatencySummary s400 = summarize(xs);
  CHECK(shown_percentile(s400, 0.99).note.empty());
  CHECK(shown_percentile(s400, 0.99).value_us == s400.p99_us);
  CHECK(shown_percentile(summarize(std::vector<double>{1, 2, 3}), 0.5).note == "n=3");
  CHECK_THROWS(shown_percentile(s400, 0.75));
}

TEST_CASE("summarize: the recorded P50 interval never reaches past the samples, where the batch interval does") {
  // Ten batches, one far above the rest: the median +- t x spread of the batch medians is below zero.
  std::vector<double> x;
  for (int b = 0; b < 10; ++b)
    for (int i = 0; i < 20; ++i) x.push_back(b < 9 ? 1.0 + 0.001 * i : 10000.0 + 0.001 * i);
  REQUIRE(batch_median_ci(x, 10).low < 0);  // what the batch interval alone says
  const LatencySummary s = summarize(x);
  CHECK(s.p50_ci_low_us == 1.0);
  CHECK(s.p50_ci_high_us <= 10000.019 + 1e-9);
  CHECK(s.p50_ci_low_us <= s.p50_us);
  CHECK(s.p50_ci_high_us >= s.p50_us);
}
