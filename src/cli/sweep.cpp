#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace attnprof::cli {

void add_sweep(CLI::App& app, Run&) {
  auto* cmd = app.add_subcommand("sweep", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'sweep' is not built yet in this version"); });
}

}  // namespace attnprof::cli
