// The shared sampling loop (sampling.hpp): warm up, sample, stop on convergence or budget.
#include "measure/sampling.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/stats.hpp"

namespace attnprof::measure {

namespace {

// The bootstrap CI costs resamples x n work; re-checking it after every sample would cost more than a
// fast kernel's samples. Checking again once the set grew by an eighth keeps the overhead a small
// constant factor while stopping at most ~12% later than an every-sample check would.
int64_t next_check_after(int64_t n) { return n + std::max<int64_t>(1, n / 8); }

// core::median_ci: the bootstrap alone treats the samples as independent, but the GPU's power manager
// holds the SM clock on one step for tens of milliseconds, so neighbouring samples move together. On
// the H200 its interval claimed 0.3% for fused-sm90 points whose P50 then moved 1-4% between two runs;
// their batch medians spread 1-2% (docs/measurement.md). The batch interval keeps such a point sampling
// until the clock's steps average out, or the time budget is spent.
bool converged(const std::vector<double>& samples, double target_rel_ci) {
  return core::median_ci_within(samples, target_rel_ci * core::median(samples));
}

}  // namespace

SampleSet sample_adaptively(const SampleFn& fn, const MeasureOptions& options) {
  using clock = std::chrono::steady_clock;
  const auto seconds_since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  SampleSet set;
  const auto warmup_start = clock::now();
  while (set.warmup_calls < options.warmup_calls || seconds_since(warmup_start) < options.warmup_seconds) {
    fn();
    ++set.warmup_calls;
  }

  const int64_t min_samples = std::max(1, options.min_samples);
  const int64_t max_samples = std::max<int64_t>(1, options.max_samples);
  const auto start = clock::now();
  int64_t check_at = min_samples;
  for (;;) {
    const std::vector<double> sample = fn();
    if (sample.empty()) throw std::runtime_error("sampling: a sample returned no total time");
    if (set.total_us.empty()) set.stage_us.resize(sample.size() - 1);
    if (sample.size() - 1 != set.stage_us.size())
      throw std::runtime_error("sampling: samples disagree on the number of stages");
    // A duration is finite and not negative; anything else is a broken measurement, never a record.
    for (double us : sample)
      if (!std::isfinite(us) || us < 0)
        throw std::runtime_error(fmt::format("sampling: a sample of {} us cannot be a duration", us));
    set.total_us.push_back(sample[0]);
    for (size_t s = 1; s < sample.size(); ++s) set.stage_us[s - 1].push_back(sample[s]);

    const auto n = static_cast<int64_t>(set.total_us.size());
    if (n >= min_samples && n >= check_at && seconds_since(start) >= options.min_seconds_per_point) {
      if (converged(set.total_us, options.target_rel_ci)) {
        set.stop_reason = "converged";
        break;
      }
      check_at = next_check_after(n);
    }
    if (n >= max_samples) {
      set.stop_reason = "max_samples";
      break;
    }
    if (seconds_since(start) >= options.max_seconds_per_point) {
      set.stop_reason = "time_budget";
      break;
    }
  }
  return set;
}

}  // namespace attnprof::measure
