// The outputs of the commands that print a model other than a sweep's results: `explain` (a shape on a
// GPU's datasheet roofline), `calibrate` (the probes' verdicts against the expected ones) and
// `devices` (what a backend sees). Each renderer is pure: model in, text out; the command prints it.
// Golden outputs: tests/report/golden/ (tests/report/test_outputs.cpp).
#pragma once
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/explain.hpp"
#include "run/devices.hpp"

namespace attnprof::report {

// `attnprof explain`: a fixed-width table, one column per kernel kind, then how to read the FLOPs.
std::string render_explanation(const core::Explanation&);
// `attnprof explain --json`: core::to_json of the Explanation, indented.
std::string render_explanation_json(const core::Explanation&);

// `attnprof calibrate`: one line per probe (P50, bandwidth, throughput, speed of light, expected and
// got verdicts), then a one-line summary.
std::string render_calibration(const std::vector<core::CalibrationRow>&);

// `attnprof devices`: the backend's notices, then one line per device with its ceilings.
std::string render_devices(const run::DeviceList&);
// `attnprof devices --json`: {"devices": [{"id", "backend", "device", "ceilings"}], "notices": [...]}.
std::string render_devices_json(const run::DeviceList&);

}  // namespace attnprof::report
