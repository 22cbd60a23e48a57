// The percentile bootstrap of a median without building resamples. A resample of n values drawn with
// replacement from n sorted samples has, as its median, the sample at the rank of the median of n
// uniform draws; that rank's distribution is a Beta (an order statistic of uniforms), so one resample
// median costs two or three gamma draws instead of n draws and a selection. The distribution of the
// medians is exactly the resampling bootstrap's: only the random stream differs. This makes the gate
// O(n log n) per point (the sort) plus O(resamples), where drawing resamples cost O(resamples x n).
// docs/statistics.md ("Bootstrap of the gate's median ratio") states it with the derivation.
#pragma once
#include <cstdint>
#include <random>
#include <span>

namespace attnprof::gate {

// Uniform, normal and gamma draws from std::mt19937_64, whose output the C++ standard fixes, by
// formulas written here: the standard library's distributions differ between implementations, and the
// gate promises that equal inputs give equal output everywhere.
class BootstrapRng {
 public:
  explicit BootstrapRng(uint64_t seed) : engine_(seed) {}
  double uniform();              // in (0, 1), never 0 or 1
  double normal();               // standard normal (Box-Muller)
  double gamma(double shape);    // Gamma(shape, 1) for shape >= 1 (Marsaglia and Tsang, 2000)

 private:
  std::mt19937_64 engine_;
};

// The type-7 median of one resample (size n, with replacement) of `sorted` (ascending, n >= 1).
double resampled_median(std::span<const double> sorted, BootstrapRng& rng);

}  // namespace attnprof::gate
