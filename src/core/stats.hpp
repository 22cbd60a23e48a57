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

LatencySummary summarize(std::span<const double> samples_us);

}  // namespace attnprof::core
