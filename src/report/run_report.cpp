// `attnprof report`: read, analyse, render.
#include "core/errors.hpp"
#include "core/files.hpp"
#include "report/report.hpp"

namespace attnprof::report {

int run_report(const ReportOptions& options, std::ostream& out) {
  core::check_distinct_paths({{"results", options.results_path}}, named_paths(options.outputs));
  core::Results results = core::read_results(options.results_path);
  analyse(results);
  render_all(results, {.files = options.outputs, .missing_folder = MissingFolder::fail,
                       .terminal = options.quiet ? nullptr : &out});
  return kExitOk;
}

}  // namespace attnprof::report
