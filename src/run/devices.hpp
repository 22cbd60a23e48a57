// attnprof devices: every device of a backend with its properties and roofline ceilings (measured
// once and cached by the backend; --remeasure measures again). Rendered by report::render_devices
// (report/outputs.hpp).
#pragma once
#include <string>
#include <vector>

#include "core/results.hpp"

namespace attnprof::run {

struct DeviceEntry {
  int id = 0;
  std::string backend;
  core::DeviceInfo info;
  core::Ceilings ceilings;
};

struct DeviceList {
  std::vector<DeviceEntry> devices;
  std::vector<std::string> notices;  // e.g. the CPU fall-back of "auto"
};

// which: auto | cuda | cpu, opened by measure::make_backend (InputError for another name),
// EnvironmentError when the backend cannot be opened.
DeviceList list_devices(const std::string& which, bool remeasure);

}  // namespace attnprof::run
