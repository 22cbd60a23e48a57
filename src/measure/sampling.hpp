// The sampling loop every backend shares, in the spirit of a measurement script: warm up, take
// samples until the median is known well enough or the budget is spent, keep every raw sample.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "measure/backend.hpp"

namespace attnprof::measure {

// One measured call: returns {total_us, stage0_us, stage1_us, ...} (stages may be absent).
using SampleFn = std::function<std::vector<double>()>;

struct SampleSet {
  std::vector<double> total_us;                // one per sample
  std::vector<std::vector<double>> stage_us;   // [stage][sample]
  std::string stop_reason;                     // "converged", "max_samples", "time_budget"
  int64_t warmup_calls = 0;                    // untimed calls made before the first sample
};

// Calls fn() untimed options.warmup_calls times and until options.warmup_seconds have passed, then
// samples until at least min_samples were taken over at least min_seconds_per_point and the median's
// 95% CI half-width (core::median_ci: the bootstrap's, or the batch medians' where wider) is below
// target_rel_ci of the median, or max_samples / max_seconds_per_point is reached.
SampleSet sample_adaptively(const SampleFn& fn, const MeasureOptions& options);

}  // namespace attnprof::measure
