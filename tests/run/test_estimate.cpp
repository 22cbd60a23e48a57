// The sweep's time estimate: against the H200 fa-bench sweep it was made to fit, the point timeout
// cap, and its wording.
#include <catch2/catch.hpp>

#include "core/results.hpp"
#include "core/sweep_spec.hpp"
#include "run/estimate.hpp"

using namespace attnprof;
using namespace attnprof::run;

namespace {

std::vector<Point> fa_bench_points() {
  const core::SweepSpec spec = core::preset("fa-bench");
  return plan_points(spec.shapes, {{"reference", core::KernelKind::materialized},
                                   {"fused-sm90", core::KernelKind::fused},
                                   {"fused", core::KernelKind::fused}});
}

core::Ceilings h200() {  // the measured ceilings of reports/h200-fa-bench/results.json
  core::Ceilings c;
  c.peak_bw_bytes_per_s = 3.97e12;
  c.peak_flops_per_s = {{"bf16", 7.998e14}, {"fp16", 7.648e14}, {"fp32", 5.58e13}};
  return c;
}

}  // namespace

TEST_CASE("estimate: the H200 fa-bench with the default options is within 2x of its measured time") {
  // The README's A/As: 144 points, 184-191 s per sweep with the defaults and no counters.
  measure::MeasureOptions o;
  o.counters = false;
  const auto points = fa_bench_points();
  REQUIRE(points.size() == 144);
  const SweepEstimate e = estimate_sweep(points, o, "cuda", h200());
  CHECK(e.points == 144);
  CHECK(e.seconds > 187.0 / 2);
  CHECK(e.seconds < 187.0 * 2);
  CHECK(e.over_timeout == 0);
}

TEST_CASE("estimate: a CPU fa-bench takes hours, and the point timeout caps each point") {
  measure::MeasureOptions o;
  core::Ceilings cpu;  // a 2-core host's measured ceilings
  cpu.peak_bw_bytes_per_s = 3e10;
  cpu.peak_flops_per_s = {{"bf16", 1.8e11}, {"fp16", 1.8e11}, {"fp32", 1.8e11}};
  const SweepEstimate e = estimate_sweep(fa_bench_points(), o, "cpu", cpu);
  CHECK(e.seconds > 3600);
  CHECK(e.over_timeout > 0);
  CHECK(e.seconds <= 144 * o.point_timeout_s);
  const std::string text = describe(e, "cpu", o);
  CHECK(text.rfind("144 points, about ", 0) == 0);
  CHECK(text.find(" h on the cpu backend; ") != std::string::npos);
  CHECK(text.find("likely exceed --point-timeout 120 s") != std::string::npos);

  o.point_timeout_s = 1e9;
  CHECK(estimate_sweep(fa_bench_points(), o, "cpu", cpu).seconds > e.seconds);
}

TEST_CASE("estimate: a larger sampling budget takes longer; durations read roughly") {
  measure::MeasureOptions o;
  const auto points = fa_bench_points();
  const double base = estimate_sweep(points, o, "cuda", h200()).seconds;
  o.max_seconds_per_point = 4;
  CHECK(estimate_sweep(points, o, "cuda", h200()).seconds > base + 144);
  CHECK(rough_duration(12) == "12 s");
  CHECK(rough_duration(600) == "10 min");
  CHECK(rough_duration(7560) == "2.1 h");
}

TEST_CASE("estimate: an fp8 point's compute time from the fp8 roof, else from the largest figure") {
  measure::MeasureOptions o;
  o.counters = false;
  o.point_timeout_s = 1e9;  // no cap: the calls' time decides
  std::vector<Point> points = fa_bench_points();
  for (auto& p : points) p.shape.dtype = core::DType::fp8_e4m3;
  core::Ceilings slow;  // compute-bound at every point
  slow.peak_bw_bytes_per_s = 1e12;
  slow.peak_flops_per_s = {{"bf16", 1e10}, {"fp16", 1e10}, {"fp32", 1e9}};
  const double without_fp8 = estimate_sweep(points, o, "cuda", slow).seconds;
  slow.peak_flops_per_s["fp8_e4m3"] = 2e10;
  const double with_fp8 = estimate_sweep(points, o, "cuda", slow).seconds;
  CHECK(without_fp8 > 0);
  CHECK(with_fp8 < 0.6 * without_fp8);
}
