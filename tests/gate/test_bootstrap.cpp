// gate/bootstrap.hpp: a resample's median drawn through the order statistics of uniforms has the
// distribution of the median of an actual resample (checked against the exact binomial formula), and
// the gamma draws behind it have the right mean and variance.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <vector>

#include "gate/bootstrap.hpp"

using namespace attnprof;

namespace {

constexpr int kDraws = 200000;
// The empirical CDF of kDraws draws has a standard error of at most 0.5 / sqrt(kDraws) = 0.0011.
constexpr double kCdfTolerance = 0.006;

// P(Binomial(n, p) >= k).
double binomial_at_least(int n, double p, int k) {
  double total = 0;
  for (int i = k; i <= n; ++i)
    total += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0)) * std::pow(p, i) *
             std::pow(1 - p, n - i);
  return total;
}

// In a resample of size n from n distinct sorted values, the r-th smallest (1-based) is at or under the
// value of 0-based rank j when at least r of the n draws pick ranks 0..j: P = P(Bin(n, (j + 1) / n) >= r).
double order_statistic_cdf(int n, int r, int j) { return binomial_at_least(n, (j + 1.0) / n, r); }

}  // namespace

TEST_CASE("resampled median: odd n has the exact bootstrap distribution of the median") {
  constexpr int n = 7;
  std::vector<double> sorted;
  for (int j = 0; j < n; ++j) sorted.push_back(10.0 * (j + 1));
  gate::BootstrapRng rng(1);
  std::map<double, int> hits;
  for (int i = 0; i < kDraws; ++i) ++hits[gate::resampled_median(sorted, rng)];
  double cumulative = 0;
  for (int j = 0; j < n; ++j) {
    cumulative += static_cast<double>(hits[sorted[j]]) / kDraws;
    INFO("rank " << j);
    CHECK(cumulative == Approx(order_statistic_cdf(n, (n + 1) / 2, j)).margin(kCdfTolerance));
  }
  size_t seen = 0;
  for (const auto& [value, count] : hits) seen += static_cast<size_t>(count);
  CHECK(seen == static_cast<size_t>(kDraws));
  CHECK(hits.size() == static_cast<size_t>(n));  // every median is one of the samples
}

TEST_CASE("resampled median: even n averages the two middle order statistics of a resample") {
  constexpr int n = 6;
  // Powers of two: the average of two of them names both (2 m = 2^a + 2^b).
  std::vector<double> sorted;
  for (int j = 0; j < n; ++j) sorted.push_back(std::ldexp(1.0, j));
  gate::BootstrapRng rng(2);
  std::vector<int> lower_hits(n, 0), upper_hits(n, 0);
  for (int i = 0; i < kDraws; ++i) {
    const double twice = 2 * gate::resampled_median(sorted, rng);
    int high = static_cast<int>(std::floor(std::log2(twice)));
    int low = 0;
    if (twice == std::ldexp(1.0, high)) {
      low = --high;  // 2^a + 2^a
    } else {
      low = static_cast<int>(std::lround(std::log2(twice - std::ldexp(1.0, high))));
    }
    REQUIRE(std::ldexp(1.0, low) + std::ldexp(1.0, high) == twice);
    ++lower_hits[low];
    ++upper_hits[high];
  }
  double lower_cdf = 0, upper_cdf = 0;
  for (int j = 0; j < n; ++j) {
    lower_cdf += static_cast<double>(lower_hits[j]) / kDraws;
    upper_cdf += static_cast<double>(upper_hits[j]) / kDraws;
    INFO("rank " << j);
    CHECK(lower_cdf == Approx(order_statistic_cdf(n, n / 2, j)).margin(kCdfTolerance));
    CHECK(upper_cdf == Approx(order_statistic_cdf(n, n / 2 + 1, j)).margin(kCdfTolerance));
  }
}

TEST_CASE("resampled median: one sample, and a seed gives one stream") {
  const std::vector<double> one = {42.0};
  gate::BootstrapRng rng(3);
  CHECK(gate::resampled_median(one, rng) == 42.0);
  const std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8};
  gate::BootstrapRng a(9), b(9), c(10);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const double x = gate::resampled_median(sorted, a);
    CHECK(x == gate::resampled_median(sorted, b));
    differs |= x != gate::resampled_median(sorted, c);
  }
  CHECK(differs);
}

TEST_CASE("gamma draws: mean and variance equal the shape") {
  for (double shape : {1.0, 3.5, 50000.0}) {
    gate::BootstrapRng rng(static_cast<uint64_t>(shape));
    double sum = 0, sum_sq = 0;
    for (int i = 0; i < kDraws; ++i) {
      const double g = rng.gamma(shape);
      sum += g;
      sum_sq += g * g;
    }
    const double mean = sum / kDraws;
    const double variance = sum_sq / kDraws - mean * mean;
    INFO("shape " << shape);
    // Standard errors: sqrt(shape / kDraws) for the mean; about sqrt(2 / kDraws) relative for the
    // variance at large shapes (more at small ones, where the tail is heavier).
    CHECK(mean == Approx(shape).margin(5 * std::sqrt(shape / kDraws)));
    CHECK(variance == Approx(shape).epsilon(0.03));
  }
  gate::BootstrapRng rng(4);
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.uniform();
    REQUIRE(u > 0.0);
    REQUIRE(u < 1.0);
  }
}
