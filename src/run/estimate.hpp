// How long a sweep will take, printed before it starts ("96 points, about 2.1 h on the cpu backend"),
// so that nobody waits hours for a CPU fa-bench without being told. A simple model per point: a call
// at a fixed share of the roofline the backend's ceilings give, the warm-up and sampling the options
// ask for, verification on the host, the counter passes, all capped by the point timeout. It is an
// order of magnitude, not a promise: converged points stop early, noisy ones use the whole budget.
#pragma once
#include <string>
#include <vector>

#include "core/results.hpp"
#include "measure/backend.hpp"
#include "run/plan.hpp"

namespace attnprof::run {

// Share of the attainable FLOP/s (roofline at the call's intensity) a call is assumed to reach. On
// the H200 the fused kernels reach 40-78% of the tensor roof and the reference about 10-20%
// (reports/h200-fa-bench); the CPU kernels 3-8% of the measured FMA peak on a shared 2-core host.
inline constexpr double kGpuRoofShare = 0.4;
inline constexpr double kCpuRoofShare = 0.05;
// The float64 reference that verification runs on the host, single-threaded [FLOP/s].
inline constexpr double kHostReferenceFlopsPerS = 1e9;
// CUPTI counter passes per point and the fixed cost of a session's passes [s], shared by a batch.
inline constexpr int kCounterPasses = 30;
inline constexpr double kCounterSessionS = 0.75;

struct SweepEstimate {
  size_t points = 0;
  double seconds = 0;
  size_t over_timeout = 0;  // points whose estimate exceeds --point-timeout (they would be cut there)
};

SweepEstimate estimate_sweep(const std::vector<Point>& points, const measure::MeasureOptions&,
                             const std::string& backend, const core::Ceilings&);

// "96 points, about 2.1 h on the cpu backend; 40 of them likely exceed --point-timeout 120 s"
std::string describe(const SweepEstimate&, const std::string& backend, const measure::MeasureOptions&);

// "45 s", "12 min", "2.1 h"
std::string rough_duration(double seconds);

}  // namespace attnprof::run
