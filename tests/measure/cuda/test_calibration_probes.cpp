// measure/cuda/calibration_probes.cpp: every probe of core::calibration_probes() measured on device 0,
// one record each in the table's order, named and timed, with the analytic cost it must do. A GPU test:
// exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include <string>

#include "core/calibration.hpp"
#include "gpu/gpu_test_support.hpp"
#include "measure/backend.hpp"
#include "measure/cuda/calibration_probes.hpp"
#include "measure/cuda/device.hpp"

namespace {
uint64_t g_seed = 0;
}  // namespace

TEST_CASE("calibration probes: one ok, timed record per probe of the table, in its order") {
  namespace m = attnprof::measure;
  const attnprof::core::DeviceInfo info = m::query_device(0);
  m::MeasureOptions options;
  options.counters = false;  // timing only: CUPTI is tested on its own
  options.verify = false;
  options.max_seconds_per_point = 0.2;
  options.min_seconds_per_point = 0.05;
  options.warmup_seconds = 0.1;
  const auto records = m::measure_calibration_probes(0, info, options);
  const auto& probes = attnprof::core::calibration_probes();
  REQUIRE(records.size() == probes.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    INFO(r.kernel << ": " << r.reason);
    CHECK(r.kernel == std::string(probes[i].name));
    CHECK(r.backend == attnprof::core::BackendKind::cuda);
    CHECK(r.status == attnprof::core::Status::ok);
    CHECK(r.latency.p50_us > 0);
    CHECK(r.wall_s > 0);
  }
}

int main(int argc, char** argv) {
  return attnprof::gpu_test::run_session("test_calibration_probes", argc, argv, g_seed);
}
