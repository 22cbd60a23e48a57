// Every subcommand registers itself on the app here; each lives in its own file (src/cli/<name>.cpp),
// declares its options, and calls one function of its area. main.cpp owns error -> exit code mapping.
// A subcommand's callback stores its exit code in `exit_code`.
#pragma once
#include <CLI/CLI.hpp>

namespace attnprof::cli {

struct Run {
  int exit_code = 0;
  std::string command_line;  // argv joined, for the results' context block
};

void add_sweep(CLI::App&, Run&);
void add_report(CLI::App&, Run&);
void add_compare(CLI::App&, Run&);
void add_merge(CLI::App&, Run&);
void add_devices(CLI::App&, Run&);
void add_explain(CLI::App&, Run&);
void add_kernels(CLI::App&, Run&);
void add_history(CLI::App&, Run&);
void add_calibrate(CLI::App&, Run&);
void add_why(CLI::App&, Run&);

}  // namespace attnprof::cli
