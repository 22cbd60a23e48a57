#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace attnprof::cli {

void add_devices(CLI::App& app, Run&) {
  auto* cmd = app.add_subcommand("devices", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'devices' is not built yet in this version"); });
}

}  // namespace attnprof::cli
