#include "run/estimate.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/cost_model.hpp"
#include "core/roofline.hpp"

namespace attnprof::run {

namespace {

// The point's roof (core::peak_flops_for); without one (an fp8 point on a GPU without fp8 tensor cores)
// the largest figure, which an estimate needs more than an exact roof.
double peak_flops(const core::Ceilings& c, core::DType dtype) {
  if (const double roof = core::peak_flops_for(c, dtype); roof > 0) return roof;
  double best = 0;
  for (const auto& [name, v] : c.peak_flops_per_s) best = std::max(best, v);
  return best;
}

// Seconds of one point: its calls, warm-up, sampling, verification and counters.
double point_seconds(const Point& p, const measure::MeasureOptions& o, bool gpu, const core::Ceilings& c) {
  const core::Cost cost = core::cost_of(p.shape, p.kind);
  const double bytes = cost.min_bytes_read + cost.min_bytes_write;
  const double share = gpu ? kGpuRoofShare : kCpuRoofShare;
  const double flops_per_s = peak_flops(c, p.shape.dtype) * share;
  const double bytes_per_s = c.peak_bw_bytes_per_s * share;
  double call_s = 0;
  if (flops_per_s > 0) call_s = std::max(call_s, cost.flops / flops_per_s);
  if (bytes_per_s > 0) call_s = std::max(call_s, bytes / bytes_per_s);
  const double warmup_s = std::max(o.warmup_calls * call_s, o.warmup_seconds);
  // Sampling stops between the minimum time (converged) and the budget (still noisy); the middle is
  // what the H200's fa-bench spends on average. min_samples are always taken.
  const double typical_s = (std::min(o.min_seconds_per_point, o.max_seconds_per_point) + o.max_seconds_per_point) / 2;
  const double sampling_s = std::max(o.min_samples * call_s, std::min(o.max_samples * call_s, typical_s));
  double verify_s = 0;
  if (o.verify) {
    const double rows = std::min<double>(o.verify_rows, static_cast<double>(p.shape.lse_elems()));
    verify_s = call_s + rows * 2.0 * static_cast<double>(p.shape.seq_k * (p.shape.hdim + p.shape.value_hdim())) /
                            kHostReferenceFlopsPerS;
  }
  double counters_s = 0;
  if (gpu && o.counters) counters_s = kCounterPasses * call_s + kCounterSessionS / std::max(1, o.counter_batch);
  return warmup_s + sampling_s + verify_s + counters_s;
}

}  // namespace

SweepEstimate estimate_sweep(const std::vector<Point>& points, const measure::MeasureOptions& o,
                             const std::string& backend, const core::Ceilings& c) {
  SweepEstimate e;
  e.points = points.size();
  const bool gpu = backend != "cpu";
  for (const auto& p : points) {
    const double s = point_seconds(p, o, gpu, c);
    if (s > o.point_timeout_s) ++e.over_timeout;
    e.seconds += std::min(s, o.point_timeout_s);
  }
  return e;
}

std::string rough_duration(double seconds) {
  if (seconds < 90) return fmt::format("{:.0f} s", std::max(1.0, seconds));
  if (seconds < 90 * 60) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

std::string describe(const SweepEstimate& e, const std::string& backend, const measure::MeasureOptions& o) {
  std::string s = fmt::format("{} points, about {} on the {} backend", e.points, rough_duration(e.seconds), backend);
  if (e.over_timeout > 0)
    s += fmt::format("; {} of them likely exceed --point-timeout {:g} s and are cut there", e.over_timeout,
                     o.point_timeout_s);
  return s;
}

}  // namespace attnprof::run
