#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace attnprof::cli {

void add_compare(CLI::App& app, Run&) {
  auto* cmd = app.add_subcommand("compare", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'compare' is not built yet in this version"); });
}

}  // namespace attnprof::cli
