// Statistics over latency samples. Quantiles use the Hyndman-Fan type 7 estimator (linear
// interpolation between order statistics, numpy's default), documented in docs/statistics.md.
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/results.hpp"

namespace attnprof::core {

// The value when it is a finite number, else none: a ratio over a zero or a missing counter reads as absent.
inline std::optional<double> finite(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

double mean(std::span<const double>);
double stddev(std::span<const double>);           // sample standard deviation (n - 1)
double quantile(std::span<const double>, double q);  // q in [0, 1]; type 7; input need not be sorted
double median(std::span<const double>);

struct Interval {
  double low = 0, high = 0;
};
// Percentile bootstrap CI of the median: `resamples` resamples, seeded, so results are reproducible.
Interval bootstrap_median_ci(std::span<const double>, double confidence = 0.95, int resamples = 2000,
                             uint64_t seed = 0x5eed);
// 95% CI of the median from batch medians, for samples in the order they were taken: the samples are
// cut into `batches` contiguous batches (2..31) and the interval is the overall median +- t(batches - 1)
// x (standard deviation of the batch medians) / sqrt(batches). Unlike the bootstrap, which treats the
// samples as independent, it widens when neighbouring samples move together (a GPU clock held on one
// step for tens of milliseconds). [NaN, NaN] with fewer samples than batches.
Interval batch_median_ci(std::span<const double> samples_in_order, int batches = 10);

// The median's 95% CI that sampling stops on and the results report: the wider of the two above, the
// batch interval once there are at least kMinSamplesPerBatch samples per batch (default batches).
inline constexpr int kCiBatches = 10;
inline constexpr int kMinSamplesPerBatch = 3;
Interval median_ci(std::span<const double> samples_in_order);
// Whether median_ci's half-width is at most `half_width`, deciding on the batch interval (O(n)) before
// the bootstrap (2000 resamples of n: 38 ms at 1000 samples, 360 ms at 10000 on a 2-core build
// machine), which runs only when the batch interval is narrow enough. The sampling loop asks this
// between samples, while the GPU idles.
bool median_ci_within(std::span<const double> samples_in_order, double half_width);

LatencySummary summarize(std::span<const double> samples_us);

// Fewest samples at which the distribution-free interval of the q-quantile (order statistics with
// binomial coverage, `confidence` two-sided) has both ends at observed samples: n >= ln((1 - c) / 2)
// / ln(max(q, 1 - q)). Below it the samples cannot bound the quantile on one side (P99 of 30 samples
// is interpolated from the two largest). P50: 6, P90: 36, P99: 368 at 95%.
int64_t min_samples_for_quantile(double q, double confidence = 0.95);
bool quantile_supported(int64_t n, double q);

// What a report shows for a percentile of a LatencySummary: the type-7 estimate where the sample
// count supports it (`note` empty); otherwise, above the median, the sample maximum with `note`
// "n=30: max", and for the median the estimate with `note` "n=3" (docs/statistics.md).
struct ShownPercentile {
  double value_us = 0;
  std::string note;
};
ShownPercentile shown_percentile(const LatencySummary&, double q);  // q: 0.5, 0.9 or 0.99
// "1234.56" or "1250.00 (n=30: max)": `number` formats the value.
std::string percentile_text(const ShownPercentile&, const std::string& number);

}  // namespace attnprof::core
