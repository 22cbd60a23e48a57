// `attnprof report`: read, diagnose, render.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "core/errors.hpp"
#include "report/report.hpp"

namespace attnprof::report {

namespace {

// Renders into memory first, then writes next to the target and renames, so that a failed or
// interrupted write never leaves a half report behind.
template <class Render>
void write_file(const std::string& path, const core::Results& results, Render render) {
  std::ostringstream text;
  render(results, text);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw EnvironmentError(fmt::format("cannot write report file '{}'", path));
    out << text.str();
    if (!out) throw EnvironmentError(fmt::format("write to '{}' failed", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw EnvironmentError(fmt::format("cannot rename '{}' to '{}'", tmp, path));
}

}  // namespace

int run_report(const ReportOptions& options, std::ostream& out) {
  core::Results results = core::read_results(options.results_path);
  core::annotate(results);
  if (!options.quiet) write_terminal(results, out);
  if (!options.html_path.empty()) write_file(options.html_path, results, write_html);
  if (!options.markdown_path.empty()) write_file(options.markdown_path, results, write_markdown);
  if (!options.csv_path.empty()) write_file(options.csv_path, results, write_csv);
  if (!options.openmetrics_path.empty()) write_file(options.openmetrics_path, results, write_openmetrics);
  return kExitOk;
}

}  // namespace attnprof::report
