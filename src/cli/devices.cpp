// attnprof devices: the devices a backend sees, with their ceilings (src/run/devices.hpp).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "run/devices.hpp"

namespace attnprof::cli {

void add_devices(CLI::App& app, Run& run) {
  struct Args {
    std::string backend = "auto";
    bool remeasure = false, json = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("devices", "List devices with their properties and roofline ceilings");
  cmd->add_option("--backend", args->backend, "auto, cuda, cpu")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  cmd->add_flag("--remeasure", args->remeasure, "Measure the ceilings again instead of using the cache");
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->callback([args, &run] {
    const auto list = run::list_devices(args->backend, args->remeasure);
    if (args->json)
      run::write_devices_json(list, std::cout);
    else
      run::write_devices_table(list, std::cout);
    run.exit_code = 0;
  });
}

}  // namespace attnprof::cli
