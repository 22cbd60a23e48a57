// run/plugin_probe.cpp: the parent's side of the probe, against stand-in probe programs (shell scripts
// that speak, or break, the protocol): each way a probe can fail is one InputError line naming the
// step it was at; no paths start no process; a pinned plugin reads back from JSON.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "run/plugin_probe.hpp"

namespace run = attnprof::run;
namespace fs = std::filesystem;

namespace {

// An executable shell script standing in for `attnprof sweep --plugin-probe`.
std::string fake_probe(const std::string& name, const std::string& body) {
  const fs::path dir = fs::temp_directory_path() / ("attnprof-probe-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << "#!/bin/sh\nread request\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path.string();
}

std::string failure_of(const std::string& exe, double timeout_s = 20) {
  try {
    run::probe_plugins({"/plugins/my.so"}, false, timeout_s, exe);
  } catch (const attnprof::InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("plugin probe: nothing to probe starts nothing; a timeout must be positive") {
  const run::PluginProbe none = run::probe_plugins({}, true, 1, "/nonexistent/probe");
  CHECK(none.plugins.empty());
  CHECK(none.kernels.empty());
  CHECK_THROWS_AS(run::probe_plugins({"/plugins/my.so"}, false, 0, "/bin/true"), attnprof::InputError);
}

TEST_CASE("plugin probe: a probe that dies, hangs, errs, garbles or answers for others is one line") {
  const std::string died = failure_of(fake_probe("died", "echo '{\"step\": \"loading plugin x\"}'\nexit 3"));
  CHECK(died.find("plugin probe: loading plugin x: the probe process ended (exit code 3) without answering") !=
        std::string::npos);
  const std::string hung = failure_of(fake_probe("hung", "echo '{\"step\": \"calling init\"}'\nexec sleep 30"), 0.5);
  CHECK(hung.find("calling init: no answer within 0.5 s") != std::string::npos);
  CHECK(failure_of(fake_probe("errs", "echo '{\"error\": \"my.so: no attnprof_plugin_v1\"}'")) ==
        "my.so: no attnprof_plugin_v1");
  CHECK(failure_of(fake_probe("garbles", "echo 'hello from a constructor'")).find("corrupted") != std::string::npos);
  CHECK(failure_of(fake_probe("others", "echo '{\"plugins\": [], \"kernels\": [], \"catalogue\": []}'"))
            .find("answered for other plugins") != std::string::npos);
  fs::remove_all(fs::temp_directory_path() / ("attnprof-probe-test-" + std::to_string(::getpid())));
}

TEST_CASE("PinnedPlugin: JSON round trip, its path as hex (a path may hold bytes that are not UTF-8)") {
  run::PinnedPlugin p;
  p.path = "/opt/plugins/fl\xff" "ash.so";
  p.sha256 = std::string(64, 'a');
  p.kernels = {"flash-v3", "flash-v3-causal"};
  const nlohmann::json j = p;
  CHECK(j.contains("path_hex"));
  CHECK(j.dump().find("plugins") == std::string::npos);
  const run::PinnedPlugin back = j.get<run::PinnedPlugin>();
  CHECK(back.path == p.path);
  CHECK(back.sha256 == p.sha256);
  CHECK(back.kernels == p.kernels);
}
