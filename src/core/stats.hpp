// Statistics over latency samples. Quantiles use the Hyndman-Fan type 7 estimator (linear
// interpolation between order statistics, numpy's default), documented in docs/statistics.md.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/results.hpp"

namespace attnprof::core {

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

}  // namespace attnprof::core
