// attnprof merge A.json B.json ... -o ALL.json: joins the shards of one sweep (src/run/merge.hpp).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/results.hpp"
#include "run/merge.hpp"

namespace attnprof::cli {

namespace {

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string output;
  run::MergeOptions options;
};

void run_merge(const MergeArgs& a, Run& run) {
  std::vector<core::NamedPath> named;
  for (const auto& path : a.inputs) named.push_back({"input", path});
  core::check_distinct_paths(named, {{"-o", a.output}});
  std::vector<run::MergeInput> inputs;
  for (const auto& path : a.inputs) inputs.push_back({path, core::read_results(path)});
  const core::Results merged = run::merge_results(inputs, a.options);
  core::write_results(merged, a.output);
  fmt::print(stderr, "attnprof: merged {} file(s), {} points -> {}\n", inputs.size(), merged.records.size(),
             core::escape::one_line(a.output));
  run.exit_code = 0;
}

}  // namespace

void add_merge(CLI::App& app, Run& run) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "Merge the results of the shards of one sweep into one file");
  cmd->add_option("inputs", args->inputs, "Results files (results.json of each shard)")->required();
  cmd->add_option("-o,--output", args->output, "Merged results file")->required();
  cmd->add_flag("--allow-duplicates", args->options.allow_duplicates,
                "Accept a point present in several inputs (the first one's record is kept)");
  cmd->add_flag("--allow-partial", args->options.allow_partial,
                "Accept points of the sweep missing from every input");
  cmd->callback([args, &run] { run_merge(*args, run); });
}

}  // namespace attnprof::cli
