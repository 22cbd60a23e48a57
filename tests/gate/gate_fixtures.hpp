// Synthetic results for the gate tests: latency samples drawn from a log-normal distribution with
// rare slow outliers (what GPU timings look like), wrapped in core::Record / core::Results.
#pragma once
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "core/stats.hpp"

namespace attnprof::test {

// `n` samples around `median_us` with relative spread `rel_sigma`; 2% of samples take an extra
// 5-30% (preemption, a late launch), and values are rounded to 10 ns as a GPU timer would.
inline std::vector<double> latency_samples(std::mt19937_64& rng, int n, double median_us, double rel_sigma) {
  std::normal_distribution<double> normal(0.0, rel_sigma);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    double v = median_us * std::exp(normal(rng));
    if (uniform(rng) < 0.02) v *= 1.05 + 0.25 * uniform(rng);
    out.push_back(std::round(v * 100.0) / 100.0);
  }
  return out;
}

inline core::Record make_record(const std::string& kernel, std::vector<double> samples_us, int64_t seq = 1024) {
  core::Record r;
  r.shape = core::Shape{1, 8, 8, seq, seq, 64, false, core::DType::bf16};
  r.kernel = kernel;
  r.backend = attnprof::core::BackendKind::cuda;
  r.status = core::Status::ok;
  r.samples_us = std::move(samples_us);
  r.latency.n = static_cast<int64_t>(r.samples_us.size());
  return r;
}

inline core::Results make_results(std::vector<core::Record> records) {
  core::Results r;
  r.context.backend = attnprof::core::BackendKind::cuda;
  r.context.tool_version = "test";
  r.context.device.name = "NVIDIA H200";
  r.context.device.driver_version = "570.86.15";
  r.context.device.sm_clock_max_mhz = 1980;
  r.records = std::move(records);
  return r;
}

// One run of a history: two points (fused at seq 1024 and 2048) whose medians are the given ones.
inline core::Results history_run(std::mt19937_64& rng, double fused_1k_us, double fused_2k_us,
                                 const std::string& revision, const std::string& date) {
  auto record = [&](double median, int64_t seq) {
    core::Record r = make_record("fused", latency_samples(rng, 200, median, 0.01), seq);
    r.latency.p50_us = core::median(r.samples_us);
    r.latency.p50_ci_low_us = r.latency.p50_us * 0.995;
    r.latency.p50_ci_high_us = r.latency.p50_us * 1.005;
    return r;
  };
  core::Results res = make_results({record(fused_1k_us, 1024), record(fused_2k_us, 2048)});
  res.context.git_revision = revision;
  res.context.date_utc = date;
  return res;
}

}  // namespace attnprof::test
