// measure/calibrate.cpp: without a CUDA device (or in a build without CUDA) run_calibration refuses with
// an EnvironmentError before anything runs; with one, it returns one undiagnosed record per probe of
// core::calibration_probes(), in a context that says so.
#include <string>

#include <catch2/catch.hpp>

#include "core/calibration.hpp"
#include "core/errors.hpp"
#include "measure/backend.hpp"
#include "measure/calibrate.hpp"

namespace m = attnprof::measure;

TEST_CASE("run_calibration: refused without a CUDA device, else one record per probe") {
  m::CalibrateOptions options;
  options.counters = false;
  options.command_line = "attnprof calibrate --no-counters";
  std::string why;
  if (!m::cuda_available(&why)) {
    INFO(why);
    CHECK_THROWS_AS(m::run_calibration(options), attnprof::EnvironmentError);
    CHECK_THROWS_WITH(m::run_calibration(options), "attnprof calibrate needs an NVIDIA GPU: " + why);
    return;
  }
  const attnprof::core::Results results = m::run_calibration(options);
  CHECK(results.context.backend == attnprof::core::BackendKind::cuda);
  CHECK(results.context.command_line == options.command_line);
  CHECK(results.context.sweep.at("calibrate") == true);
  CHECK(results.records.size() == attnprof::core::calibration_probes().size());
  CHECK(results.context.ceilings.peak_bw_bytes_per_s > 0);
}
