// attnprof report RESULTS.json [--html F] [--md F] [--csv F] [--openmetrics F] [--quiet]
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "report/report.hpp"

namespace attnprof::cli {

void add_report(CLI::App& app, Run& run) {
  auto options = std::make_shared<report::ReportOptions>();
  auto* cmd = app.add_subcommand(
      "report", "diagnose a results file and render it: a table on stdout, and HTML, Markdown or "
                "CSV files on request");
  cmd->add_option("results", options->results_path, "results JSON written by 'attnprof sweep'")
      ->required();
  cmd->add_option("--html", options->html_path, "write a self-contained HTML report here");
  cmd->add_option("--md", options->markdown_path, "write a Markdown summary here (CI job summary)");
  cmd->add_option("--csv", options->csv_path, "write one CSV row per point here");
  cmd->add_option("--openmetrics", options->openmetrics_path,
                  "write the points as OpenMetrics text here (Prometheus; docs/openmetrics.md)");
  cmd->add_flag("-q,--quiet", options->quiet, "do not print the table");
  cmd->callback([options, &run] { run.exit_code = report::run_report(*options, std::cout); });
}

}  // namespace attnprof::cli
