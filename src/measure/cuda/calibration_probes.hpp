// The CUDA half of attnprof calibrate: each probe of core::calibration_probes() set up with its
// buffers, its launch and its analytic cost, then measured as the CUDA backend measures an attention
// point (timer.hpp, cupti_profiler.hpp, launch_records.hpp, occupancy.hpp) into a core::Record.
#pragma once
#include <vector>

#include "core/results.hpp"
#include "measure/backend.hpp"

namespace attnprof::measure {

// One record per probe of the table, in its order; a probe that fails gets status failed and the
// reason (a sticky CUDA error throws EnvironmentError). `options` apply to every probe, except that
// the L2-resident probe is timed and profiled with L2 warm.
std::vector<core::Record> measure_calibration_probes(int device_index, const core::DeviceInfo&,
                                                     const MeasureOptions& options);

}  // namespace attnprof::measure
