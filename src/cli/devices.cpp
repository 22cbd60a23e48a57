// attnprof devices: the devices a backend sees, with their ceilings (src/run/devices.hpp).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/validators.hpp"
#include "report/outputs.hpp"
#include "run/devices.hpp"

namespace attnprof::cli {

void add_devices(CLI::App& app, Run& run) {
  struct Args {
    std::string backend = "auto";
    bool remeasure = false, json = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("devices", "List devices with their properties and roofline ceilings");
  cmd->add_option("--backend", args->backend, kBackendHelp)->capture_default_str()->check(kBackend);
  cmd->add_flag("--remeasure", args->remeasure, "Measure the ceilings again instead of using the cache");
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->callback([args, &run] {
    const auto list = run::list_devices(args->backend, args->remeasure);
    std::cout << (args->json ? report::render_devices_json(list) : report::render_devices(list));
    run.exit_code = 0;
  });
}

}  // namespace attnprof::cli
