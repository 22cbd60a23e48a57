// attnprof calibrate: the known-answer set (src/core/calibration.hpp). Runs the probe kernels on the
// GPU through the measurement attention points get (src/measure/calibrate.hpp), diagnoses each,
// prints expected against got, and exits 1 when a verdict differs (docs/exit-codes.md).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/validators.hpp"
#include "core/calibration.hpp"
#include "core/escape.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/results.hpp"
#include "measure/calibrate.hpp"
#include "report/outputs.hpp"

namespace attnprof::cli {

void add_calibrate(CLI::App& app, Run& run) {
  struct Args {
    measure::CalibrateOptions options;
    bool no_counters = false;
    std::string output;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "calibrate", "Run probe kernels of known bound through the measurement and the diagnosis; exit 1 when a "
                   "verdict differs from the expected one");
  cmd->add_option("--device", args->options.device, "CUDA device index")->capture_default_str()->check(
      CLI::NonNegativeNumber);
  cmd->add_flag("--no-counters", args->no_counters, "Time only: no CUPTI counters (the diagnosis then derives "
                                                    "throughput from the ceilings)");
  cmd->add_flag("--remeasure", args->options.remeasure_ceilings, "Measure the ceilings again instead of using the cache");
  cmd->add_option("-o,--output", args->output, "Also write the probes' records as a results file")->check(kNonEmpty);
  cmd->callback([args, &run] {
    if (!args->output.empty()) core::check_distinct_paths({}, {{"-o", args->output}});
    args->options.counters = !args->no_counters;
    args->options.command_line = run.command_line;
    core::Results results = measure::run_calibration(args->options);
    const auto rows = core::check_calibration(results);
    std::cout << report::render_calibration(rows);
    if (!args->output.empty()) {
      core::write_results(results, args->output);
      fmt::print(stderr, "attnprof: wrote {}\n", core::escape::one_line(args->output));
    }
    run.exit_code = core::all_match(rows) ? 0 : kExitRegression;
  });
}

}  // namespace attnprof::cli
