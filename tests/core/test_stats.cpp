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
