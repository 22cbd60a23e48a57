#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace attnprof::cli {

void add_report(CLI::App& app, Run&) {
  auto* cmd = app.add_subcommand("report", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'report' is not built yet in this version"); });
}

}  // namespace attnprof::cli
