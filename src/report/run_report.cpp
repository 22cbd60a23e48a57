// `attnprof report`: read, diagnose, render.
#include <sstream>

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "report/report.hpp"

namespace attnprof::report {

namespace {

template <class Render>
void write_rendered(const std::string& path, const core::Results& results, Render render) {
  std::ostringstream text;
  render(results, text);
  core::write_file(path, text.str());
}

}  // namespace

int run_report(const ReportOptions& options, std::ostream& out) {
  core::check_distinct_paths({{"results", options.results_path}},
                             {{"--html", options.html_path}, {"--md", options.markdown_path}, {"--csv", options.csv_path},
                              {"--openmetrics", options.openmetrics_path}});
  core::Results results = core::read_results(options.results_path);
  core::annotate(results);
  if (!options.quiet) write_terminal(results, out);
  if (!options.html_path.empty()) write_rendered(options.html_path, results, write_html);
  if (!options.markdown_path.empty()) write_rendered(options.markdown_path, results, write_markdown);
  if (!options.csv_path.empty()) write_rendered(options.csv_path, results, write_csv);
  if (!options.openmetrics_path.empty()) write_rendered(options.openmetrics_path, results, write_openmetrics);
  return kExitOk;
}

}  // namespace attnprof::report
