#include "run/worker.hpp"

#include <execinfo.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include <fmt/format.h>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "kernels/plugin/plugin.hpp"
#include "run/subprocess.hpp"

namespace attnprof::run {

using nlohmann::json;

namespace {

int env_index(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (end && *end == '\0') ? static_cast<int>(n) : -1;
}

// A crash in a worker (a plugin's, or attnprof's) prints where it happened before the worker dies, so
// the sweep's log says more than "signal 11". Only async-signal-safe calls: backtrace_symbols_fd
// writes straight to stderr.
void print_crash(int signal_number) {
  constexpr const char kHead[] = "attnprof worker: fatal signal; backtrace:\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kHead, sizeof(kHead) - 1);
  void* frames[64];
  const int count = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, count, STDERR_FILENO);
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  void send(const json& message) {
    if (!send_line(fd_, message)) std::_Exit(3);  // the parent is gone: nothing left to report to
  }

 private:
  int fd_;
};

// The counter phase of a group of timed points: {"counters": [{"index": i, "record": {...}}, ...]}
// answered by {"counters_for": [i, ...], "records": [...], "restart": false}. Returns false when the
// worker must exit (the backend threw: its device state cannot be trusted).
bool run_counter_group(measure::Backend& backend, const measure::MeasureOptions& options, const json& members,
                       Channel& out) {
  const int fail_index = env_index(kTestFailCountersEnv);
  json indices = json::array();
  std::vector<core::Record> records;
  for (const auto& member : members) {
    indices.push_back(member.at("index").get<int>());
    if (indices.back() == fail_index) std::abort();
    records.push_back(member.at("record").get<core::Record>());
  }
  bool restart = false;
  try {
    backend.collect_counters(records, options);
  } catch (const std::exception& e) {
    for (auto& record : records) {
      if (record.counters.status != core::CounterStatus::pending) continue;  // collected before the failure
      record.counters = core::Counters{};
      record.counters.status = core::CounterStatus::unavailable;
      record.counters.reason = fmt::format("collecting counters failed: {}", e.what());
    }
    restart = true;
  }
  out.send({{"counters_for", indices}, {"records", records}, {"restart", restart}});
  return !restart;
}

}  // namespace

int worker_main() {
  // The parent owns the reaction to Ctrl-C and SIGTERM (the whole process group receives them).
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  for (int crash : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) ::signal(crash, print_crash);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 3;  // the parent died before the line above took effect

  Channel out(::dup(STDOUT_FILENO));
  ::dup2(STDERR_FILENO, STDOUT_FILENO);

  const int fail_index = env_index(kTestFailPointEnv);
  const int hang_index = env_index(kTestHangPointEnv);

  std::string line;
  if (!std::getline(std::cin, line)) return 3;
  std::unique_ptr<measure::Backend> backend;
  measure::MeasureOptions options;
  int device = 0;
  bool settle = false;
  // Kernels of a plugin rebuilt since the sweep started, with why: their points fail, the rest run.
  std::map<std::string, std::string> changed_plugins;
  try {
    const auto config = json::parse(line).get<WorkerConfig>();
    device = config.device;
    options = config.options;
    settle = config.settle;
    for (const auto& plugin : config.plugins) {
      try {
        kernels::load_plugin(plugin.path, plugin.sha256);
      } catch (const kernels::PluginChanged& e) {
        for (const auto& name : plugin.kernels) changed_plugins[name] = e.what();
      }
    }
    std::vector<std::string> notices;
    backend = measure::make_backend(config.backend, device, &notices);
    if (options.stalls) measure::prepare_stall_sampling(*backend);
  } catch (const std::exception& e) {
    out.send({{"fatal", e.what()}});
    return kExitEnvironment;
  }
  const auto kernels = backend->kernels();
  json names = json::array();
  for (const auto* k : kernels) names.push_back(k->name());
  json ready = {{"ready", true}, {"kernels", names}};
  if (settle) {
    try {
      const measure::SettleReport r = backend->settle(kSettleLimitS);
      if (r.checked) ready["settled"] = {{"idle", r.idle}, {"waited_s", r.waited_s}, {"detail", r.detail}};
    } catch (const std::exception& e) {
      out.send({{"fatal", fmt::format("checking that the device is idle after a lost point: {}", e.what())}});
      return kExitEnvironment;
    }
  }
  out.send(ready);

  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const json request = json::parse(line);
    if (request.contains("counters")) {
      if (!run_counter_group(*backend, options, request.at("counters"), out)) return kExitEnvironment;
      continue;
    }
    const int index = request.at("index").get<int>();
    const auto shape = request.at("shape").get<core::Shape>();
    const auto kernel_name = request.at("kernel").get<std::string>();
    if (index == fail_index) std::abort();
    if (index == hang_index)
      for (;;) ::pause();

    const kernels::Kernel* kernel = nullptr;
    for (const auto* k : kernels)
      if (k->name() == kernel_name) kernel = k;
    core::Record record;
    bool restart = false;
    const auto start = std::chrono::steady_clock::now();
    if (!kernel) {
      record.shape = shape;
      record.kernel = kernel_name;
      record.status = core::Status::failed;
      const auto changed = changed_plugins.find(kernel_name);
      record.reason = changed != changed_plugins.end()
                          ? changed->second
                          : fmt::format("kernel '{}' is not in the {} backend", kernel_name, backend->name());
    } else {
      try {
        record = backend->measure(shape, *kernel, options);
      } catch (const std::exception& e) {
        // The backend reports point failures in the record; an exception means the worker's state
        // (a sticky CUDA error above all) cannot be trusted for another point.
        record.shape = shape;
        record.kernel = kernel_name;
        record.status = core::Status::failed;
        record.reason = e.what();
        record.cost = core::cost_of(shape, kernel->kind());
        restart = true;
      }
    }
    record.backend = backend->kind();
    record.device_id = device;
    if (record.wall_s <= 0)
      record.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.send({{"index", index}, {"record", record}, {"restart", restart}});
    if (restart) return kExitEnvironment;
  }
  return kExitOk;
}

}  // namespace attnprof::run
