// attnprof kernels: every kernel this attnprof can run, built-in and from --plugin libraries, with
// its backend, origin and what it supports (kernels/catalogue.hpp).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "kernels/catalogue.hpp"
#include "cli/validators.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "run/plugin_probe.hpp"

namespace attnprof::cli {

namespace {

std::string yes_no(bool v) { return v ? "yes" : "no"; }

void print_table(const std::vector<kernels::CatalogueEntry>& entries, std::ostream& out) {
  for (const auto& e : entries) {
    out << fmt::format("{}  [{}]  {}\n", e.name, e.backend, e.description);
    out << fmt::format("    from {}; layout {}; flags {}\n", e.origin, e.layout,
                       e.flags.empty() ? std::string("none") : fmt::format("{}", fmt::join(e.flags, ",")));
    if (e.hdims.empty()) {
      out << fmt::format("    supports none of the probe shapes ({})\n", e.example_refusal);
    } else {
      out << fmt::format(
          "    supports hdim {}; {}; causal {}; GQA {}; seq_q != seq_k {}; window {}; varlen {}; hdim_v != hdim {}; "
          "backward {}\n",
          fmt::join(e.hdims, ","), fmt::join(e.dtypes, ","), yes_no(e.causal), yes_no(e.gqa), yes_no(e.seq_q_ne_seq_k),
          yes_no(e.window), yes_no(e.varlen), yes_no(e.hdim_v), yes_no(e.backward));
      if (!e.example_refusal.empty()) out << fmt::format("    e.g. refuses: {}\n", e.example_refusal);
    }
  }
}

}  // namespace

void add_kernels(CLI::App& app, Run& run) {
  struct Args {
    std::vector<std::string> plugins;
    double plugin_timeout_s = run::kDefaultPluginTimeoutS;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("kernels", "List every kernel (built-in and --plugin), its backend and what it supports");
  cmd->add_option("--plugin", args->plugins, "Shared library of your own kernels (docs/plugins.md); repeatable");
  cmd->add_option("--plugin-timeout", args->plugin_timeout_s,
                  "Time limit for loading and asking the --plugin libraries, in the probe process [s]")
      ->capture_default_str()
      ->check(kFinite & CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  cmd->callback([args, &run] {
    // Built-in kernels are asked here; plugin kernels in the probe process (src/run/plugin_probe.hpp).
    const run::PluginProbe probe = run::probe_plugins(args->plugins, true, args->plugin_timeout_s);
    std::vector<kernels::CatalogueEntry> entries = kernels::catalogue();
    entries.insert(entries.end(), probe.catalogue.begin(), probe.catalogue.end());
    if (args->json) {
      std::cout << core::dump_json(nlohmann::json{{"kernels", entries}, {"plugins", probe.plugins}}, 2) << "\n";
    } else {
      for (const auto& p : probe.plugins)
        std::cout << core::escape::one_line(fmt::format("plugin {} {} ({}, sha256 {})", p.name, p.version, p.path,
                                                        p.sha256.substr(0, 16)))
                  << "\n";
      print_table(entries, std::cout);
    }
    run.exit_code = 0;
  });
}

}  // namespace attnprof::cli
