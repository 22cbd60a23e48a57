#include "run/plugin_probe.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/escape.hpp"
#include "kernels/registry.hpp"
#include "run/subprocess.hpp"

namespace attnprof::run {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string to_hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

std::string from_hex(std::string_view hex) {
  const auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::invalid_argument(fmt::format("'{}' is not lower-case hex", core::escape::one_line(hex)));
  };
  if (hex.size() % 2 != 0) throw std::invalid_argument("a hex string of odd length");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) out += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
  return out;
}

// The probe's answer, checked as it is read: what a plugin wrote must not pass for it.
PluginProbe read_answer(const json& answer) {
  PluginProbe probe;
  probe.plugins = answer.at("plugins").get<std::vector<kernels::PluginInfo>>();
  probe.kernels = answer.at("kernels").get<std::vector<kernels::PluginKernelInfo>>();
  probe.catalogue = answer.at("catalogue").get<std::vector<kernels::CatalogueEntry>>();
  return probe;
}

}  // namespace

void to_json(json& j, const PinnedPlugin& p) {
  j = {{"path_hex", to_hex(p.path)}, {"sha256", p.sha256}, {"kernels", p.kernels}};
}

void from_json(const json& j, PinnedPlugin& p) {
  p.path = from_hex(j.at("path_hex").get<std::string>());
  p.sha256 = j.at("sha256").get<std::string>();
  p.kernels = j.at("kernels").get<std::vector<std::string>>();
}

std::vector<PinnedPlugin> PluginProbe::pinned() const {
  std::vector<PinnedPlugin> out;
  for (const auto& p : plugins) out.push_back({p.path, p.sha256, p.kernels});
  return out;
}

PluginProbe probe_plugins(const std::vector<std::string>& paths, bool with_catalogue, double timeout_s,
                          const std::string& exe) {
  if (paths.empty()) return {};
  if (!(timeout_s > 0)) throw InputError(fmt::format("--plugin-timeout {} must be positive", timeout_s));
  std::vector<std::string> absolute;
  json hex = json::array();
  for (const auto& given : paths) {
    std::error_code ec;
    const fs::path a = fs::absolute(given, ec);
    absolute.push_back(ec ? given : a.lexically_normal().string());
    hex.push_back(to_hex(given));
  }

  Child child = spawn_child(exe.empty() ? self_executable() : exe, {"sweep", "--plugin-probe"});
  struct Reaper {
    Child& c;
    ~Reaper() { kill_and_reap(c); }
  } reaper{child};
  // A probe that dies before reading its request must not kill us by SIGPIPE.
  struct sigaction ignore {}, old_pipe {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old_pipe);
  send_line(child.to_fd, {{"plugins", hex}, {"catalogue", with_catalogue}});
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::close(child.to_fd), child.to_fd = -1;

  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::string step = "starting the plugin probe", buffer;
  const auto failure = [&](const std::string& what) {
    return InputError(core::escape::one_line(fmt::format("plugin probe: {}: {}", step, what)));
  };
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      kill_and_reap(child);
      throw failure(fmt::format("no answer within {:g} s (--plugin-timeout); the probe was killed", timeout_s));
    }
    pollfd fd{child.from_fd, POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(child.from_fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The probe ended without an answer: a signal, an exit() in the plugin, or an abort.
      int status = 0;
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
      child.pid = -1;
      throw failure(fmt::format("the probe process ended ({}) without answering", describe_exit(status)));
    }
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t newline; (newline = buffer.find('\n')) != std::string::npos;) {
      json message;
      try {
        message = json::parse(buffer.substr(0, newline));
      } catch (const json::exception&) {
        throw failure("the probe's answer was corrupted (something wrote to its protocol stream)");
      }
      buffer.erase(0, newline + 1);
      if (message.contains("step")) {
        step = message.at("step").get<std::string>();
        continue;
      }
      if (message.contains("error")) throw InputError(core::escape::one_line(message.at("error").get<std::string>()));
      PluginProbe probe;
      try {
        probe = read_answer(message);
      } catch (const std::exception& e) {
        throw failure(fmt::format("the probe's answer is unreadable: {}", e.what()));
      }
      if (probe.plugins.size() != absolute.size()) throw failure("the probe answered for other plugins");
      for (size_t i = 0; i < absolute.size(); ++i) probe.plugins[i].path = absolute[i];
      return probe;
    }
  }
}

int plugin_probe_main() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return kExitEnvironment;  // the parent died before the line above took effect
  // The protocol keeps the real stdout; everything else printed (a plugin's constructor, its entry
  // point) goes to stderr.
  const int out = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  for (int s : {SIGINT, SIGTERM}) ::signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  std::string line;
  if (!std::getline(std::cin, line)) return kExitEnvironment;
  try {
    const json request = json::parse(line);
    std::vector<kernels::PluginInfo> plugins;
    json infos = json::array();
    for (const auto& hex : request.at("plugins")) {
      const std::string path = from_hex(hex.get<std::string>());
      send_line(out, {{"step", fmt::format("loading plugin '{}'", core::escape::one_line(path))}});
      plugins.push_back(kernels::load_plugin(path));
      for (const auto& name : plugins.back().kernels) infos.push_back(kernels::info_of(name));
    }
    std::vector<kernels::CatalogueEntry> entries;
    if (request.at("catalogue").get<bool>()) {
      for (const auto& p : plugins) {
        for (const auto& name : p.kernels) {
          send_line(out, {{"step", fmt::format("asking plugin kernel '{}' which probe shapes it supports", name)}});
          const auto more = kernels::catalogue({kernels::find_any(name)});
          entries.insert(entries.end(), more.begin(), more.end());
        }
      }
    }
    send_line(out, {{"plugins", plugins}, {"kernels", infos}, {"catalogue", entries}});
    return kExitOk;
  } catch (const std::exception& e) {
    // InputError: a defect the loader found. Anything else a plugin threw (guarded() names the call).
    send_line(out, {{"error", e.what()}});
    return kExitBadInput;
  }
}

}  // namespace attnprof::run
