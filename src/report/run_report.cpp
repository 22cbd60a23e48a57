// `attnprof report`: read, diagnose, render.
#include "core/diagnosis.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "report/report.hpp"

namespace attnprof::report {

int run_report(const ReportOptions& options, std::ostream& out) {
  core::check_distinct_paths({{"results", options.results_path}}, named_paths(options.outputs));
  core::Results results = core::read_results(options.results_path);
  core::annotate(results);
  if (!options.quiet) renderer("terminal").render(results, out);
  write_outputs(results, options.outputs);
  return kExitOk;
}

}  // namespace attnprof::report
