// attnprof history RUN.json... [--html F] [--md F]: each point's P50 across runs, change points by the
// gate's own test between consecutive runs. Declares the options and calls gate::build_history.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/validators.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/results.hpp"
#include "gate/history.hpp"
#include "gate/render.hpp"

namespace attnprof::cli {

namespace {

struct HistoryArgs {
  std::vector<std::string> runs;
  std::string html_path, md_path;
  gate::Options options;
  bool quiet = false;
};

void run_history(const HistoryArgs& a) {
  std::vector<core::NamedPath> inputs;
  for (const auto& path : a.runs) inputs.push_back({"run", path});
  core::check_distinct_paths(inputs, {{"--html", a.html_path}, {"--md", a.md_path}});
  std::vector<core::Results> runs;
  for (const auto& path : a.runs) runs.push_back(core::read_results(path));
  const gate::History h = gate::build_history(runs, a.runs, a.options);
  // Said on stderr even with -q: a step between runs from a busy machine may be the machine's.
  for (const auto& w : h.busy_warnings) fmt::print(stderr, "attnprof: warning: {}\n", core::escape::terminal(w));
  if (!a.md_path.empty()) core::write_file(a.md_path, gate::render_history_markdown(h));
  if (!a.html_path.empty()) core::write_file(a.html_path, gate::render_history_html(h));
  if (!a.quiet) std::fputs(gate::render_history_terminal(h).c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

void add_history(CLI::App& app, Run& run) {
  auto args = std::make_shared<HistoryArgs>();
  auto* cmd = app.add_subcommand(
      "history", "P50 of every point across runs, in the order given, with the change points the gate's own "
                 "test finds between consecutive runs; worst regressions first");
  cmd->add_option("runs", args->runs, "Results JSON files, oldest first (two or more)")->required()->expected(2, -1);
  cmd->add_option("--html", args->html_path, "Write a self-contained HTML trend report");
  cmd->add_option("--md", args->md_path, "Write the trend as Markdown");
  auto& o = args->options;
  cmd->add_option("--alpha", o.alpha, "Significance level of the gate's one-sided Mann-Whitney U test")
      ->capture_default_str()
      ->check(kOpenUnitInterval);
  cmd->add_option("--threshold", o.threshold, "Smallest change the gate calls slower, as a fraction")
      ->capture_default_str()
      ->check(kFinite & kGateThreshold);
  cmd->add_option("--max-rel-stddev", o.max_rel_stddev, "Spread ceiling; above it a step is noisy")
      ->capture_default_str()
      ->check(kFinite & CLI::PositiveNumber);
  cmd->add_flag("--allow-device-mismatch", o.allow_device_mismatch,
                "Compare runs across GPU model, driver, max SM clock or backend (listed in the report)");
  cmd->add_flag("-q,--quiet", args->quiet, "Print nothing");
  cmd->callback([args, &run] {
    run_history(*args);
    run.exit_code = 0;
  });
}

}  // namespace attnprof::cli
