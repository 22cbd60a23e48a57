// Synthetic results for the gate tests: latency samples drawn from a log-normal distribution with
// rare slow outliers (what GPU timings look like), wrapped in core::Record / core::Results.
#pragma once
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/results.hpp"

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

}  // namespace attnprof::test
