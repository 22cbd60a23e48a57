#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace attnprof::cli {

void add_merge(CLI::App& app, Run&) {
  auto* cmd = app.add_subcommand("merge", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'merge' is not built yet in this version"); });
}

}  // namespace attnprof::cli
