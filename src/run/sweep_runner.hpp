// attnprof sweep: plans the points, runs them in worker processes (one per device, a shared queue),
// journals each finished point, survives crashes, hangs and signals, and writes results.json and the
// requested reports from what was done.
#pragma once
#include <string>
#include <vector>

#include "core/sweep_spec.hpp"
#include "measure/backend.hpp"
#include "run/plan.hpp"

namespace attnprof::run {

// The devices a sweep asked for (--devices, parsed and validated by CLI11 in src/cli/sweep.cpp):
// every visible one, or these ids.
struct DeviceSelection {
  bool all = false;
  std::vector<int> ids{0};
};

struct SweepRequest {
  core::SweepSpec spec;
  std::string spec_source;                 // "preset", "axes" or "file:<path>"
  std::string spec_path;                   // the --spec-file read, for the output collision check
  std::vector<std::string> kernel_names;   // empty: every kernel of the backend
  std::vector<std::string> plugins;        // shared libraries of kernels (include/attnprof/plugin.h)
  std::string python_bridge;               // for torch: and py: kernels; empty: found beside attnprof
  std::string backend = "auto";            // auto | cuda | cpu
  DeviceSelection devices;                 // --devices: 0,1 or all
  std::string out_dir = "reports/latest";
  std::string html_path, markdown_path, csv_path, openmetrics_path;
  bool resume = false;
  bool overwrite = false;                  // replace another sweep's results in out_dir
  ShardSpec shard;
  measure::MeasureOptions options;
  std::string command_line;
};

// Runs the sweep; returns the exit code (0, or kExitInterrupted after a signal). Throws InputError /
// EnvironmentError for what stops a sweep before or outside any point. Before any work it refuses
// (InputError) outputs that name the spec file, each other or the files in --out, and an --out
// folder whose lock another running sweep holds.
int run_sweep(const SweepRequest&);

// The device ids to run on for the backend named: `all` is every visible CUDA device (cpu: device 0).
// Throws InputError for an id listed twice or one the backend does not have, EnvironmentError when no
// CUDA device is visible.
std::vector<int> resolve_devices(const DeviceSelection&, const std::string& backend_name);

}  // namespace attnprof::run
