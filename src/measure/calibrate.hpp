// attnprof calibrate's measuring half: the probes of core::calibration_probes() run on one CUDA device
// through the measurement every attention point gets (event timing with graph replay for short
// calls, the SM clock under load, CUPTI counters, launch records, occupancy), each with the analytic
// cost it must do. core::check_calibration then diagnoses and checks them.
#pragma once
#include <string>

#include "core/results.hpp"
#include "measure/backend.hpp"

namespace attnprof::measure {

struct CalibrateOptions {
  int device = 0;
  bool counters = true;
  bool remeasure_ceilings = false;  // measure the ceilings again instead of reading the cache
  std::string command_line;         // for the results' context block
};

// Results with the device, its ceilings (cached or measured) and one record per probe, not yet
// diagnosed. Throws EnvironmentError without a CUDA device or in a build without CUDA.
core::Results run_calibration(const CalibrateOptions&);

}  // namespace attnprof::measure
