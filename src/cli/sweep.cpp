// attnprof sweep: declares the options, builds a run::SweepRequest (with report::analyse as the
// analysis before results.json is written), calls run::run_sweep, and hands the results it returns
// to report::render_all, as `attnprof report` does. The hidden
// `--worker` mode is the worker process of the failure isolation (src/run/worker.hpp), and
// `--plugin-probe` the process that loads plugins for the others (src/run/plugin_probe.hpp).
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "cli/validators.hpp"
#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/results.hpp"
#include "core/sweep_spec.hpp"
#include "run/interrupt.hpp"
#include "run/sweep_runner.hpp"
#include "report/report.hpp"
#include "run/plugin_probe.hpp"
#include "run/worker.hpp"

namespace attnprof::cli {

namespace {

// Points per counter session: the passes cost ~25 ms each whatever they run, so 32 points share the
// ~30 passes' 0.75 s; a group is cut further when its buffers would not fit in device memory.
constexpr int kDefaultCounterBatch = 32;

// Without --out a sweep writes into a folder of its own, so earlier runs stay for `attnprof history`:
// reports/runs/<UTC time>/ (a suffix when two start in one second), with report.html and summary.md
// beside results.json, and reports/latest pointing at the newest once it has written its results.
constexpr const char* kRunsFolder = "reports/runs";
constexpr const char* kLatestLink = "reports/latest";

std::string new_run_folder() {
  const std::string stamp = fmt::format("{:%Y%m%d-%H%M%S}", fmt::gmtime(std::time(nullptr)));
  std::string folder = fmt::format("{}/{}", kRunsFolder, stamp);
  for (int n = 2; std::filesystem::exists(folder); ++n) folder = fmt::format("{}/{}-{}", kRunsFolder, stamp, n);
  return folder;
}

// reports/latest -> runs/<name>, replaced atomically. A real folder there (written by an older attnprof)
// is left alone, and so is any failure: the results are written either way, and the line says where.
void point_latest_at(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path latest = kLatestLink;
  if (fs::exists(fs::symlink_status(latest, ec)) && !fs::is_symlink(fs::symlink_status(latest, ec))) {
    fmt::print(stderr, "attnprof: notice: {} is a folder, not a link: left as it is (the results are in {})\n",
               kLatestLink, core::escape::one_line(folder));
    return;
  }
  const fs::path temp = fmt::format("{}.{}.tmp", kLatestLink, ::getpid());
  fs::create_directory_symlink(fs::path("runs") / fs::path(folder).filename(), temp, ec);
  if (!ec) fs::rename(temp, latest, ec);
  if (ec) {
    fs::remove(temp, ec);
    fmt::print(stderr, "attnprof: notice: could not point {} at {}\n", kLatestLink, core::escape::one_line(folder));
  }
}

struct SweepArgs {
  std::string axes, preset, spec_file;
  std::vector<std::string> kernels, plugins;
  std::string backend = "auto", out_dir, python_bridge;  // out_dir empty: a folder of the run's own
  run::DeviceSelection devices;
  OutputPaths outputs;
  std::string shard;
  bool resume = false, overwrite = false, warm = false, no_counters = false, no_verify = false, worker = false;
  bool plugin_probe = false;
  double plugin_timeout_s = run::kDefaultPluginTimeoutS;
  std::vector<std::string> metrics;
  measure::MeasureOptions options;
};

// --devices, each value checked whole by kDeviceList: `all` alone, or distinct ids.
run::DeviceSelection device_selection(const std::vector<std::string>& values) {
  std::vector<std::string> entries;
  for (const auto& value : values)
    for (auto& entry : device_entries(value)) entries.push_back(std::move(entry));
  run::DeviceSelection selection{.all = false, .ids = {}};
  for (const auto& entry : entries) {
    if (entry == "all") {
      if (entries.size() > 1) throw CLI::ValidationError("--devices", "all cannot be combined with device ids");
      selection.all = true;
      continue;
    }
    const int id = std::stoi(entry);
    if (std::find(selection.ids.begin(), selection.ids.end(), id) != selection.ids.end())
      throw CLI::ValidationError("--devices", fmt::format("device {} is listed twice", id));
    selection.ids.push_back(id);
  }
  if (!selection.all && selection.ids.empty()) throw CLI::ValidationError("--devices", "no device given");
  return selection;
}

void run_sweep_command(const SweepArgs& a, Run& run) {
  if (a.worker) {
    run.exit_code = run::worker_main();
    return;
  }
  if (a.plugin_probe) {
    run.exit_code = run::plugin_probe_main();
    return;
  }
  // From here to the last report written, a signal is exit 130, never a kill (run/interrupt.hpp).
  const run::InterruptScope interrupts;
  run::SweepRequest req;
  if (!a.axes.empty()) {
    req.spec = core::parse_axes(a.axes);
    req.spec_source = "axes";
  } else if (!a.spec_file.empty()) {
    req.spec = core::load_sweep_file(a.spec_file);
    req.spec_source = "file:" + a.spec_file;
    req.spec_path = a.spec_file;
  } else {
    req.spec = core::preset(a.preset.empty() ? "quick" : a.preset);
    req.spec_source = "preset";
  }
  req.kernel_names = a.kernels;
  req.plugins = a.plugins;
  req.python_bridge = a.python_bridge;
  req.plugin_timeout_s = a.plugin_timeout_s;
  req.backend = a.backend;
  req.devices = a.devices;
  // --resume without --out continues the newest run.
  const bool own_folder = a.out_dir.empty() && !a.resume;
  req.out_dir = !a.out_dir.empty() ? a.out_dir : a.resume ? kLatestLink : new_run_folder();
  OutputPaths paths = a.outputs;
  if (own_folder) {
    if (paths.paths[0].empty()) paths.paths[0] = req.out_dir + "/report.html";
    if (paths.paths[1].empty()) paths.paths[1] = req.out_dir + "/summary.md";
  }
  const std::vector<report::Output> outputs = paths.outputs();
  req.report_paths = report::named_paths(outputs);
  req.resume = a.resume;
  req.overwrite = a.overwrite;
  if (!a.shard.empty()) req.shard = run::parse_shard(a.shard);
  req.options = a.options;
  req.options.cold_l2 = !a.warm;
  req.options.counters = !a.no_counters;
  req.options.verify = !a.no_verify;
  req.options.extra_metrics = a.metrics;
  req.command_line = run.command_line;
  req.analyse = report::analyse;
  const run::SweepOutcome outcome = run::run_sweep(req);
  // The report files are written whatever the sweep's end (they show the points done so far); the
  // table only after a complete sweep.
  const bool complete = outcome.fatal.empty() && outcome.exit_code == kExitOk;
  report::render_all(outcome.results, {.files = outputs,
                                       .missing_folder = report::MissingFolder::create,
                                       .terminal = complete ? &std::cout : nullptr});
  if (!outcome.fatal.empty())
    throw EnvironmentError(fmt::format("{} (results so far in '{}')", outcome.fatal, outcome.results_path));
  run.exit_code = outcome.exit_code;
  if (!complete) return;
  if (own_folder) point_latest_at(req.out_dir);
  std::cout.flush();
  fmt::print(stderr, "attnprof: wrote {}\n", core::escape::one_line(outcome.results_path));
}

}  // namespace

void add_sweep(CLI::App& app, Run& run) {
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand(
      "sweep", "Measure every (shape, kernel) point of a sweep -> DIR/results.json (+ reports)");
  auto* axes = cmd->add_option("--axes", args->axes,
                               "Sweep grammar, e.g. \"batch=1,4;heads=16;seq=512:16384:x2;hdim=64,128\"")
                   ->check(kNonEmpty);
  auto* preset = cmd->add_option("--preset", args->preset,
                                 fmt::format("Named sweep: {} (quick by default; docs/sweep-spec.md)",
                                             fmt::join(core::preset_names(), ", ")))
                     ->check(kNonEmpty);
  auto* file = cmd->add_option("--spec-file", args->spec_file,
                               "JSON sweep file: {\"axes\": ...} | {\"preset\": ...} | {\"shapes\": [...]}")
                   ->check(kNonEmpty);
  axes->excludes(preset, file);
  preset->excludes(file);
  cmd->add_option("--kernels", args->kernels, "Kernels to run (default: all of the backend)")->delimiter(',');
  cmd->add_option("--plugin", args->plugins,
                  "Shared library of your own kernels (include/attnprof/plugin.h, docs/plugins.md); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--plugin-timeout", args->plugin_timeout_s,
                  "Time limit for loading the --plugin libraries (and the Python bridge) in the probe process [s]")
      ->capture_default_str()
      ->check(kFinite & CLI::PositiveNumber);
  cmd->add_option("--python-bridge", args->python_bridge,
                  "attnprof's Python bridge for torch: and py: kernels (docs/python.md); default: beside attnprof");
  cmd->add_option("--backend", args->backend, kBackendHelp)->capture_default_str()->check(kBackend);
  cmd->add_option_function<std::vector<std::string>>(
         "--devices", [args](const std::vector<std::string>& values) { args->devices = device_selection(values); },
         "Device ids, e.g. 0,1, or all: one worker per device")
      ->allow_extra_args(false)
      ->check(kDeviceList)
      ->default_str("0");
  cmd->add_option("--out", args->out_dir,
                  "Output folder: results.json and results.journal.jsonl (without it: a new folder "
                  "reports/runs/<UTC time>/, with report.html and summary.md, and reports/latest pointing at it; "
                  "with --resume: reports/latest)")
      ->check(kNonEmpty);
  add_output_options(*cmd, args->outputs);
  cmd->add_flag("--resume", args->resume, "Skip the points already in DIR's journal (same sweep only)");
  cmd->add_flag("--overwrite", args->overwrite,
                "Replace another sweep's results in DIR (without it, a sweep into a folder that holds another "
                "sweep's results exits 2)")->excludes(cmd->get_option("--resume"));
  cmd->add_option("--shard", args->shard, "Run only slice K of N (K/N), balanced by estimated cost")
      ->check(kNonEmpty);

  auto& o = args->options;
  cmd->add_option("--warmup", o.warmup_calls, "Untimed calls before sampling")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--warmup-seconds", o.warmup_seconds, "...and untimed calls until this long has passed [s]")
      ->capture_default_str()
      ->check(kFinite & CLI::NonNegativeNumber);
  cmd->add_option("--min-samples", o.min_samples, "Samples always taken")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, core::kMaxSamplesPerPoint));
  cmd->add_option("--max-samples", o.max_samples, "Most samples per point")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, core::kMaxSamplesPerPoint));
  cmd->add_option("--min-seconds", o.min_seconds_per_point,
                  "Sample at least this long per point, even once the median has converged; --max-seconds wins [s]")
      ->capture_default_str()
      ->check(kFinite & CLI::NonNegativeNumber);
  cmd->add_option("--max-seconds", o.max_seconds_per_point, "Sampling time budget per point [s]")
      ->capture_default_str()
      ->check(kFinite & CLI::PositiveNumber);
  cmd->add_option("--target-ci", o.target_rel_ci,
                  "Stop sampling when the median's 95% CI half-width is below this fraction of it (0: never early)")
      ->capture_default_str()
      ->check(kFinite & CLI::Range(0.0, 1.0));
  cmd->add_flag("--warm", args->warm, "Do not flush L2 between samples (default: cold)");
  cmd->add_flag("--no-counters", args->no_counters, "Do not collect CUPTI counters");
  o.counter_batch = kDefaultCounterBatch;
  cmd->add_option("--counter-batch", o.counter_batch,
                  "Points whose counters share one CUPTI session (its ~30 replay passes are paid once per "
                  "group); 1: a session per point")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--metrics", args->metrics, "Extra CUPTI metrics to collect, comma-separated")
      ->delimiter(',');
  cmd->add_flag("--stalls", o.stalls,
                "Sample warp states per point after timing: stall reasons, hot instructions and source lines "
                "(docs/why.md)");
  cmd->add_flag("--timeline", o.timeline,
                "Sample one call per point against time after timing: tensor pipe, DRAM, L2, L1, shared memory and "
                "active warps every 1-500 us (docs/why.md#timeline)");
  cmd->add_flag("--no-verify", args->no_verify, "Skip the check against the float64 reference");
  cmd->add_option("--verify-rows", o.verify_rows, "Rows of O checked against float64 (--no-verify checks none)")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  cmd->add_option("--seed", o.seed, "Input seed (0: a fresh seed per point)")->capture_default_str();
  cmd->add_option("--point-timeout", o.point_timeout_s,
                  "A point running longer is killed and recorded as failed [s]")
      ->capture_default_str()
      ->check(kFinite & CLI::PositiveNumber);
  // The worker process of the failure isolation; not for people.
  cmd->add_flag("--worker", args->worker)->group("");
  // The plugin probe (src/run/plugin_probe.hpp); not for people.
  cmd->add_flag("--plugin-probe", args->plugin_probe)->group("");
  cmd->callback([args, &run] { run_sweep_command(*args, run); });
}

}  // namespace attnprof::cli
