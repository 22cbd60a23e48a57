// attnprof: why attention kernels are as fast or slow as they are.
// Registers every subcommand and owns the one catch that maps errors to exit codes
// (docs/exit-codes.md): 0 ok, 1 regression, 2 bad input, 3 inconclusive, 4 environment, 130
// interrupted. Every message is escaped to one line: it may quote a path or a name with newlines or
// terminal escapes.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/validators.hpp"
#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/version.hpp"

int main(int argc, char** argv) {
  using namespace attnprof;
  // A file-size limit (ulimit -f) would otherwise kill the process by SIGXFSZ mid-write with no
  // message; ignored, the write fails with EFBIG, which core::write_file reports (exit 4).
  std::signal(SIGXFSZ, SIG_IGN);
  cli::Run run;
  for (int i = 0; i < argc; ++i) run.command_line += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{"attnprof: profiles reference and fused attention kernels over a shape sweep and "
               "says why each is as fast or slow as it is"};
  app.set_version_flag("--version", fmt::format("{} ({})", core::tool_version(), core::git_revision()));
  app.require_subcommand(1);
  cli::add_sweep(app, run);
  cli::add_report(app, run);
  cli::add_compare(app, run);
  cli::add_merge(app, run);
  cli::add_devices(app, run);
  cli::add_explain(app, run);
  cli::add_kernels(app, run);
  cli::add_history(app, run);
  cli::add_calibrate(app, run);
  cli::add_why(app, run);
  cli::refuse_options_as_values(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "attnprof: {} (see --help)\n", core::escape::one_line(e.what()));
    return kExitBadInput;
  } catch (const InputError& e) {
    fmt::print(stderr, "attnprof: error: {}\n", core::escape::one_line(e.what()));
    return kExitBadInput;
  } catch (const InterruptedError& e) {
    fmt::print(stderr, "attnprof: interrupted: {}\n", core::escape::one_line(e.what()));
    return kExitInterrupted;
  } catch (const EnvironmentError& e) {
    fmt::print(stderr, "attnprof: environment error: {}\n", core::escape::one_line(e.what()));
    return kExitEnvironment;
  } catch (const std::exception& e) {
    fmt::print(stderr, "attnprof: internal error: {}\n", core::escape::one_line(e.what()));
    return kExitEnvironment;
  }
  // Tables and summaries go to stdout: a full disk or a closed pipe there is a failed write too.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    fmt::print(stderr, "attnprof: environment error: cannot write to standard output: {}\n", std::strerror(errno));
    return kExitEnvironment;
  }
  return run.exit_code;
}
