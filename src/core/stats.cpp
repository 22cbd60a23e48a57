// Latency statistics (docs/statistics.md): type-7 quantiles, sample standard deviation, a seeded
// percentile bootstrap of the median and a batch-median interval that holds for correlated samples.
#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

namespace attnprof::core {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Type 7 on sorted data: h = (n - 1) q, linear interpolation between x[floor h] and x[floor h + 1].
double sorted_quantile(const std::vector<double>& sorted, double q) {
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

// Sorting needs a strict weak order, which NaN breaks; samples are finite by contract.
std::vector<double> sorted_copy(std::span<const double> xs) {
  std::vector<double> v(xs.begin(), xs.end());
  for (double x : v)
    if (!std::isfinite(x)) throw std::invalid_argument(fmt::format("non-finite sample {} in statistics", x));
  std::sort(v.begin(), v.end());
  return v;
}

// Median of v (type 7), reordering v; cheaper than a full sort inside the bootstrap loop.
double median_in_place(std::vector<double>& v) {
  const size_t mid = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double lower = v[mid];
  if (v.size() % 2 == 1) return lower;
  const double upper = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(mid) + 1, v.end());
  return lower + 0.5 * (upper - lower);
}

}  // namespace

double mean(std::span<const double> xs) {
  if (xs.empty()) return kNaN;
  double sum = 0;
  for (double x : xs) sum += x;
  return sum / static_cast<double>(xs.size());
}

double stddev(std::span<const double> xs) {
  if (xs.size() < 2) return kNaN;
  const double m = mean(xs);
  double ss = 0;
  for (double x : xs) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

double quantile(std::span<const double> xs, double q) {
  if (!(q >= 0 && q <= 1)) throw std::invalid_argument(fmt::format("quantile {} is outside [0, 1]", q));
  if (xs.empty()) return kNaN;
  return sorted_quantile(sorted_copy(xs), q);
}

double median(std::span<const double> xs) { return quantile(xs, 0.5); }

Interval bootstrap_median_ci(std::span<const double> xs, double confidence, int resamples, uint64_t seed) {
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument(fmt::format("confidence {} is outside (0, 1)", confidence));
  if (resamples < 1) throw std::invalid_argument(fmt::format("resamples {} must be positive", resamples));
  if (xs.empty()) return {kNaN, kNaN};
  const std::vector<double> data = sorted_copy(xs);
  const uint64_t n = data.size();
  // mt19937_64 output is specified by the standard; std::uniform_int_distribution is not (it differs
  // between standard libraries), so indices come from the raw output. The modulo bias is n / 2^64.
  std::mt19937_64 rng(seed);
  std::vector<double> resample(n), medians(static_cast<size_t>(resamples));
  for (auto& m : medians) {
    for (auto& x : resample) x = data[rng() % n];
    m = median_in_place(resample);
  }
  std::sort(medians.begin(), medians.end());
  const double tail = (1 - confidence) / 2;
  return {sorted_quantile(medians, tail), sorted_quantile(medians, 1 - tail)};
}

namespace {

// Two-sided 95% quantiles of Student's t, t(0.975; df) for df = 1..30.
constexpr double kT975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                            2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                            2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};

}  // namespace

Interval batch_median_ci(std::span<const double> xs, int batches) {
  if (batches < 2 || batches > 31)
    throw std::invalid_argument(fmt::format("batches {} is outside [2, 31]", batches));
  const size_t n = xs.size();
  if (n < static_cast<size_t>(batches)) return {kNaN, kNaN};
  const double center = median(xs);  // also rejects non-finite samples
  const auto k = static_cast<size_t>(batches);
  std::vector<double> medians, batch;
  for (size_t b = 0; b < k; ++b) {
    batch.assign(xs.begin() + static_cast<std::ptrdiff_t>(b * n / k),
                 xs.begin() + static_cast<std::ptrdiff_t>((b + 1) * n / k));
    medians.push_back(median_in_place(batch));
  }
  const double half = kT975[k - 2] * stddev(medians) / std::sqrt(static_cast<double>(k));
  return {center - half, center + half};
}

namespace {

bool batch_interval_applies(size_t n) { return n >= static_cast<size_t>(kCiBatches * kMinSamplesPerBatch); }
double half_width_of(const Interval& ci) { return 0.5 * (ci.high - ci.low); }

}  // namespace

Interval median_ci(std::span<const double> xs) {
  Interval ci = bootstrap_median_ci(xs);
  if (batch_interval_applies(xs.size())) {
    const Interval b = batch_median_ci(xs, kCiBatches);
    if (b.high - b.low > ci.high - ci.low) ci = b;
  }
  return ci;
}

bool median_ci_within(std::span<const double> xs, double half_width) {
  if (batch_interval_applies(xs.size()) && half_width_of(batch_median_ci(xs, kCiBatches)) > half_width)
    return false;
  return half_width_of(bootstrap_median_ci(xs)) <= half_width;
}

LatencySummary summarize(std::span<const double> samples_us) {
  LatencySummary s;
  s.n = static_cast<int64_t>(samples_us.size());
  if (samples_us.empty()) return s;  // n = 0 and every figure 0: there is nothing to summarise
  const std::vector<double> sorted = sorted_copy(samples_us);
  s.mean_us = mean(sorted);
  s.stddev_us = stddev(sorted);  // NaN for one sample: the spread is unknown, not zero
  s.rel_stddev = s.stddev_us / s.mean_us;
  s.min_us = sorted.front();
  s.p50_us = sorted_quantile(sorted, 0.50);
  s.p90_us = sorted_quantile(sorted, 0.90);
  s.p99_us = sorted_quantile(sorted, 0.99);
  s.max_us = sorted.back();
  const Interval ci = median_ci(samples_us);  // in sample order: the batch interval needs it
  // The batch interval is the median +- t x spread of the batch medians (its width is what sampling
  // converges on): over scattered samples it reaches past them, below zero for a latency. The interval
  // recorded is what the samples allow: no median of them lies outside them.
  s.p50_ci_low_us = std::isfinite(ci.low) ? std::max(ci.low, sorted.front()) : ci.low;
  s.p50_ci_high_us = std::isfinite(ci.high) ? std::min(ci.high, sorted.back()) : ci.high;
  return s;
}

int64_t min_samples_for_quantile(double q, double confidence) {
  if (!(q > 0 && q < 1)) throw std::invalid_argument(fmt::format("quantile {} is outside (0, 1)", q));
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument(fmt::format("confidence {} is outside (0, 1)", confidence));
  // B ~ Binomial(n, q) samples fall below the quantile. The interval's upper end is an observed
  // sample iff P(B = n) = q^n <= (1 - c) / 2, its lower end iff P(B = 0) = (1 - q)^n <= (1 - c) / 2.
  const double tail = (1 - confidence) / 2;
  const double n = std::log(tail) / std::log(std::max(q, 1 - q));
  auto needed = static_cast<int64_t>(std::ceil(n));
  // Guard the boundary against rounding in the logarithms.
  while (needed > 1 && std::pow(std::max(q, 1 - q), static_cast<double>(needed - 1)) <= tail) --needed;
  while (std::pow(std::max(q, 1 - q), static_cast<double>(needed)) > tail) ++needed;
  return needed;
}

bool quantile_supported(int64_t n, double q) { return n >= min_samples_for_quantile(q); }

ShownPercentile shown_percentile(const LatencySummary& s, double q) {
  if (q != 0.5 && q != 0.9 && q != 0.99)
    throw std::invalid_argument(fmt::format("no percentile {} in a LatencySummary", q));
  const double estimate = q == 0.5 ? s.p50_us : q == 0.9 ? s.p90_us : s.p99_us;
  if (s.n <= 0 || quantile_supported(s.n, q)) return {estimate, ""};
  if (q > 0.5) return {s.max_us, fmt::format("n={}: max", s.n)};
  return {estimate, fmt::format("n={}", s.n)};
}

std::string percentile_text(const ShownPercentile& p, const std::string& number) {
  return p.note.empty() ? number : fmt::format("{} ({})", number, p.note);
}

}  // namespace attnprof::core
