// attnprof report RESULTS.json [--html F] [--md F] [--csv F] [--openmetrics F] [--quiet]
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "report/report.hpp"

namespace attnprof::cli {

namespace {

struct ReportArgs {
  report::ReportOptions options;
  OutputPaths outputs;
};

}  // namespace

void add_report(CLI::App& app, Run& run) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report", "diagnose a results file and render it: a table on stdout, and HTML, Markdown, CSV or "
                "OpenMetrics files on request");
  cmd->add_option("results", args->options.results_path, "results JSON written by 'attnprof sweep'")
      ->required();
  add_output_options(*cmd, args->outputs);
  cmd->add_flag("-q,--quiet", args->options.quiet, "do not print the table");
  cmd->callback([args, &run] {
    args->options.outputs = args->outputs.outputs();
    run.exit_code = report::run_report(args->options, std::cout);
  });
}

}  // namespace attnprof::cli
