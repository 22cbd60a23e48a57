// attnprof sweep: plans the points, runs them in worker processes (one per device, a shared queue),
// journals each finished point, survives crashes, hangs and signals, and writes results.json from
// what was done. It renders nothing: the caller (src/cli/sweep.cpp) hands the results it returns to
// the renderers (src/report).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/files.hpp"
#include "core/results.hpp"
#include "core/sweep_spec.hpp"
#include "measure/backend.hpp"
#include "run/plan.hpp"
#include "run/plugin_probe.hpp"

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
  double plugin_timeout_s = kDefaultPluginTimeoutS;  // the plugin probe's time limit (run/plugin_probe.hpp)
  std::string backend = "auto";            // auto | cuda | cpu
  DeviceSelection devices;                 // --devices: 0,1 or all
  std::string out_dir = "reports/latest";
  // The files the caller renders afterwards (--html ...): refused before any work when one names an
  // input or another output, and kept when --overwrite clears another sweep's reports from out_dir.
  std::vector<core::NamedPath> report_paths;
  bool resume = false;
  bool overwrite = false;                  // replace another sweep's results in out_dir
  ShardSpec shard;
  measure::MeasureOptions options;
  std::string command_line;
  // The analysis applied to the results before results.json is written (the caller's: the CLI passes
  // report::analyse, the one every output reads); empty: the file is written without a diagnosis.
  std::function<void(core::Results&)> analyse;
};

// What a sweep leaves: the results (analysed by SweepRequest::analyse, already written to results_path),
// and how it ended.
struct SweepOutcome {
  core::Results results;
  std::string results_path;
  int exit_code = 0;   // 0, or kExitInterrupted after a signal (the message is printed)
  std::string fatal;   // set when the workers could not go on: the caller reports it (exit 4)
};

// Test hook: the sweep's start (before the device's ceilings are measured) is held this many seconds,
// signals or not, so that tests/run can interrupt the phase before the worker pool for certain.
inline constexpr const char* kTestHoldStartEnv = "ATTNPROF_TEST_HOLD_START_S";
// Test hook: the 1-minute load average the sweep records and warns on, in place of getloadavg()'s
// (the cores stay the machine's), so that tests/cli can show the busy-machine warning on any machine.
inline constexpr const char* kTestLoadAvgEnv = "ATTNPROF_TEST_LOAD_AVG";

// Runs the sweep. Throws InputError / EnvironmentError for what stops a sweep before any point, and
// InterruptedError for a SIGINT/SIGTERM before the first point (run/interrupt.hpp: nothing written). Before
// any work it refuses (InputError) outputs that name the spec file, each other or the files in --out,
// and an --out folder whose lock another running sweep holds.
SweepOutcome run_sweep(const SweepRequest&);

// The device ids to run on for the backend named: `all` is every visible CUDA device (cpu: device 0).
// Throws InputError for an id listed twice or one the backend does not have, EnvironmentError when no
// CUDA device is visible.
std::vector<int> resolve_devices(const DeviceSelection&, const std::string& backend_name);

}  // namespace attnprof::run
