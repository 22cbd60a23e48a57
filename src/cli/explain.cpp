#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace attnprof::cli {

void add_explain(CLI::App& app, Run&) {
  auto* cmd = app.add_subcommand("explain", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'explain' is not built yet in this version"); });
}

}  // namespace attnprof::cli
