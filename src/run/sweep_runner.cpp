#include "run/sweep_runner.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/host_load.hpp"
#include "core/version.hpp"
#include "kernels/plugin/plugin.hpp"
#include "run/counter_phase.hpp"
#include "run/estimate.hpp"
#include "run/interrupt.hpp"
#include "run/journal.hpp"
#include "run/plugin_probe.hpp"
#include "run/worker_pool.hpp"

namespace attnprof::run {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kResultsFile = "results.json";
constexpr const char* kJournalFile = "results.journal.jsonl";
constexpr const char* kLockFile = ".lock";
// The reports scripts/run.sh puts beside the results: replaced with them (--overwrite).
constexpr const char* kReportFile = "report.html";
constexpr const char* kSummaryFile = "summary.md";

// Holds an exclusive flock on DIR/.lock for the sweep's life: a second sweep into the same folder
// would replace the first's results and journal, and the first could then no longer resume. The
// kernel releases the lock when the process ends, however it ends, so a crashed sweep never leaves
// a stale lock behind. O_CLOEXEC: the workers need not hold it.
class OutputLock {
 public:
  OutputLock(const std::string& dir) {
    const std::string path = (fs::path(dir) / kLockFile).string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0)
      throw EnvironmentError(fmt::format("cannot open the lock file '{}': {}", path, std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(fd_);
      if (error == EWOULDBLOCK)
        throw InputError(fmt::format("the output folder '{}' is in use by another running attnprof sweep "
                                     "(it holds '{}'); choose another --out", dir, path));
      throw EnvironmentError(fmt::format("cannot lock '{}': {}", path, std::strerror(error)));
    }
  }
  ~OutputLock() { ::close(fd_); }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  int fd_ = -1;
};

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Prints one line per finished point: \r-updated in place on a terminal, appended otherwise (logs).
class Progress {
 public:
  Progress(size_t total, size_t already_done)
      : total_(total), done_(already_done), tty_(::isatty(STDERR_FILENO) != 0) {}

  void point(const core::Record& r) {
    ++done_;
    const std::string p50 = r.status == core::Status::ok || r.status == core::Status::incorrect
                                ? fmt::format("p50 {:.1f} us", r.latency.p50_us)
                                : std::string("");
    std::string line = fmt::format("[{}/{}] {} | {} {} {}", done_, total_, r.shape.label(), r.kernel,
                                   p50, core::to_string(r.status));
    if (r.status != core::Status::ok && !r.reason.empty()) line += ": " + r.reason;
    line = core::escape::one_line(line);  // a reason or path may hold newlines, ESC, non-UTF-8 bytes
    if (tty_) {
      // Keep the in-place line within a typical terminal width so \r can overwrite it.
      if (line.size() > 118) line = line.substr(0, 115) + "...";
      fmt::print(stderr, "\r\x1b[K{}", line);
    } else {
      fmt::print(stderr, "{}\n", line);
    }
    std::fflush(stderr);
  }

  void message(const std::string& text) {
    end_line();
    fmt::print(stderr, "{}\n", core::escape::one_line(text));
    std::fflush(stderr);
  }

  void end_line() {
    if (tty_ && done_ > 0) fmt::print(stderr, "\r\x1b[K");
  }

 private:
  size_t total_, done_;
  bool tty_;
};

// What makes a journal belong to this sweep: resuming into another one would mix two sweeps.
// A plugin is part of it by content: a rebuilt plugin is another sweep.
json sweep_identity(const json& sweep, const std::string& backend, const std::string& device_name,
                    const std::vector<kernels::PluginInfo>& plugins) {
  json identity = {{"spec", sweep.at("spec")},       {"preset", sweep.at("preset")},
                   {"shard", sweep.at("shard")},     {"kernels", sweep.at("kernels")},
                   {"backend", backend},             {"device", device_name}};
  if (!plugins.empty()) {
    json hashes = json::array();
    for (const auto& p : plugins) hashes.push_back(p.sha256);
    identity["plugins"] = hashes;
  }
  return identity;
}

// A py: kernel is py:MODULE:FUNCTION, split at its colons by the bridge (kernels/python/attnprof_py.py,
// _split). The bridge registers any py: name it is given, so a malformed one would otherwise run a
// sweep of points all `unsupported` and exit 0; torch: names are checked by the kernel lookup, as
// the bridge lists the four it has.
void check_python_kernel_name(const std::string& name) {
  if (!name.starts_with("py:")) return;
  const std::string_view rest = std::string_view(name).substr(3);
  const size_t colon = rest.find(':');
  const bool well_formed = colon != std::string_view::npos && colon > 0 && colon + 1 < rest.size() &&
                           rest.find(':', colon + 1) == std::string_view::npos;
  if (!well_formed)
    throw InputError(fmt::format("kernel '{}' is not py:MODULE:FUNCTION (a Python module and a function in it, "
                                 "e.g. py:mymod:attention; docs/python.md)", core::escape::one_line(name)));
}

// The test hook kTestHoldStartEnv: the sweep's start held that many seconds, as long ceilings
// measurements hold it, without looking at signals meanwhile (a step that cannot be cut short).
void hold_for_test() {
  const char* env = std::getenv(kTestHoldStartEnv);
  if (env == nullptr || *env == '\0') return;
  // Said first, so that a test sends its signals once the handlers are in place: a binary that links
  // the CUDA libraries can take longer to reach main() than a test's fixed delay.
  fmt::print(stderr, "attnprof: test hook: holding the start for {} s\n", core::escape::one_line(env));
  std::fflush(stderr);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::atof(env));
  while (std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// The machine's load as the sweep starts (core::read_host_load), the 1-minute figure replaced by
// kTestLoadAvgEnv's when that is set.
std::optional<core::HostLoad> host_load_now() {
  std::optional<core::HostLoad> load = core::read_host_load();
  const char* env = std::getenv(kTestLoadAvgEnv);
  if (load && env != nullptr && *env != '\0') load->load_avg_1m = std::atof(env);
  return load;
}

// A sampling pass after timing and counters (--stalls, --timeline): every ok point without its
// samples, sampled by fresh workers with `option` set. Fresh, so that the timing and counter workers
// never run with the sampling enabled: enabled, PC sampling refuses the counters and slows the timed
// calls, and it must be enabled before any kernel loads (CUPTI attributes samples only to kernels
// loaded after). PM sampling, PC sampling and the counters all program the same performance
// monitors, so each pass has workers of its own. The CPU backend has neither: its points say so,
// unsampled.
template <class T>
struct SamplingPass {
  const char* name;      // "stalls", in the progress messages
  const char* pass;      // "the stall pass", in notices and reasons
  const char* sampling;  // "sampling the warp states of"
  bool measure::MeasureOptions::*option;
  std::optional<T> core::Record::*result;
  std::string_view cpu_reason;  // a CPU point's reason
};
const SamplingPass<core::Stalls> kStallPass{"stalls", "the stall pass", "sampling the warp states of",
                                            &measure::MeasureOptions::stalls, &core::Record::stalls,
                                            core::kNoWarpStatesReason};
const SamplingPass<core::Timeline> kTimelinePass{"timeline", "the timeline pass", "sampling the timelines of",
                                                 &measure::MeasureOptions::timeline, &core::Record::timeline,
                                                 core::kNoTimelineReason};

template <class T>
void run_sampling_pass(const SamplingPass<T>& kind, const PoolConfig& timed_config, const std::vector<Point>& points,
                       std::map<std::string, core::Record>& done, JournalWriter& journal, Progress& progress,
                       const PoolEvents& timed_events, core::Context& ctx, PoolOutcome& outcome) {
  std::deque<Point> queue;
  for (const auto& p : points) {
    const auto it = done.find(p.key);
    if (it == done.end() || it->second.status != core::Status::ok || it->second.*kind.result) continue;
    if (timed_config.backend == "cpu") {
      T none;
      none.status = core::SamplingStatus::unsupported;
      none.reason = std::string(kind.cpu_reason);
      it->second.*kind.result = std::move(none);
      journal.append(it->second);
      continue;
    }
    queue.push_back(p);
  }
  if (queue.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  const size_t count = queue.size();
  progress.message(fmt::format("attnprof: {}: {} {} points", kind.name, kind.sampling, count));
  PoolConfig config = timed_config;
  config.options.*kind.option = true;
  PoolEvents events = timed_events;
  events.counter_groups = nullptr;
  events.counters_finished = nullptr;
  events.finished = [&](const Point& p, core::Record sampled) {
    const auto it = done.find(p.key);
    if (it == done.end()) return;
    if (sampled.*kind.result) {
      it->second.*kind.result = std::move(sampled.*kind.result);
    } else {
      T failed;
      failed.status = core::SamplingStatus::unavailable;
      failed.reason = fmt::format("{} failed: {}", kind.pass, sampled.reason);
      it->second.*kind.result = std::move(failed);
    }
    journal.append(it->second);
  };
  const PoolOutcome sampled = run_points(config, std::move(queue), events);
  if (!sampled.fatal.empty()) ctx.notices.push_back(fmt::format("{} did not run: {}", kind.pass, sampled.fatal));
  outcome.interrupted = outcome.interrupted || sampled.interrupted;
  outcome.abandoned += sampled.abandoned;
  if (sampled.fatal.empty() && !sampled.interrupted)
    progress.message(fmt::format("attnprof: {} of {} points sampled in {:.1f} s", kind.name, count,
                                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
}

}  // namespace

std::vector<int> resolve_devices(const DeviceSelection& selection, const std::string& backend_name) {
  if (selection.all) {
    if (backend_name != "cuda") return {0};
    const int count = measure::visible_cuda_devices();
    if (count <= 0) throw EnvironmentError("--devices all: no CUDA device is visible");
    std::vector<int> all(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) all[static_cast<size_t>(i)] = i;
    return all;
  }
  std::vector<int> devices;
  for (int id : selection.ids) {
    if (id < 0) throw InputError(fmt::format("bad device {} in --devices (expected 0,1,... or all)", id));
    if (std::find(devices.begin(), devices.end(), id) != devices.end())
      throw InputError(fmt::format("device {} is listed twice in --devices {}", id, fmt::join(selection.ids, ",")));
    devices.push_back(id);
  }
  if (devices.empty()) throw InputError("--devices names no device");
  if (backend_name == "cuda") {
    const int count = measure::visible_cuda_devices();
    if (count == 0) {
      std::string why;  // the reason measure::cuda_available gives: the missing driver, a build without CUDA
      throw EnvironmentError(measure::cuda_available(&why) ? "--backend cuda: no CUDA device is visible"
                                                           : "--backend cuda: no usable CUDA device: " + why);
    }
    for (int id : devices)
      if (id >= count)
        throw InputError(fmt::format("no CUDA device {} ({} visible)", id, count));
  }
  return devices;
}

SweepOutcome run_sweep(const SweepRequest& req) {
  // First, so that a signal at any step is exit 130 rather than a kill (run/interrupt.hpp).
  const InterruptScope interrupts;
  const auto sweep_start = std::chrono::steady_clock::now();
  const auto in_out = [&](const char* name) { return (fs::path(req.out_dir) / name).string(); };
  std::vector<core::NamedPath> outputs = {
      {"--out", in_out(kResultsFile)}, {"--out", in_out(kJournalFile)}, {"--out", in_out(kLockFile)}};
  outputs.insert(outputs.end(), req.report_paths.begin(), req.report_paths.end());
  core::check_distinct_paths({{"--spec-file", req.spec_path}}, outputs);
  core::check_backend_choice(req.backend);
  const auto& o = req.options;
  if (o.warmup_calls < 0) throw InputError(fmt::format("--warmup {} must be >= 0", o.warmup_calls));
  if (o.min_samples < 1) throw InputError(fmt::format("--min-samples {} must be >= 1", o.min_samples));
  if (o.max_samples < o.min_samples)
    throw InputError(fmt::format("--max-samples {} is below --min-samples {}", o.max_samples, o.min_samples));
  if (!(o.max_seconds_per_point > 0))
    throw InputError(fmt::format("--max-seconds {} must be positive", o.max_seconds_per_point));
  if (!(o.warmup_seconds >= 0))
    throw InputError(fmt::format("--warmup-seconds {} must be >= 0", o.warmup_seconds));
  // --max-seconds is the budget: it wins over a larger --min-seconds.
  if (!(o.min_seconds_per_point >= 0))
    throw InputError(fmt::format("--min-seconds {} must be >= 0", o.min_seconds_per_point));
  if (!(o.point_timeout_s > 0))
    throw InputError(fmt::format("--point-timeout {} must be positive", o.point_timeout_s));
  if (o.counter_batch < 1) throw InputError(fmt::format("--counter-batch {} must be >= 1", o.counter_batch));

  // The backend this process opens is for the context (device, ceilings) and the kernel list; the
  // points themselves run in workers.
  std::vector<std::string> notices;
  const std::string expected_backend =
      req.backend == "auto" ? (measure::cuda_available() ? "cuda" : "cpu") : req.backend;

  // Plugins first: a bad one stops the sweep before any device work (exit 2). They are loaded in the
  // probe process and in the workers, never here; this process knows their kernels as data.
  // torch: and py: kernels bring attnprof's Python bridge.
  for (const auto& name : req.kernel_names) check_python_kernel_name(name);
  std::vector<std::string> plugin_paths = req.plugins;
  if (std::any_of(req.kernel_names.begin(), req.kernel_names.end(), kernels::is_python_kernel)) {
    kernels::configure_python_bridge(req.kernel_names, expected_backend);
    plugin_paths.push_back(kernels::find_python_bridge(req.python_bridge));
  }
  PluginProbe probe;
  try {
    probe = probe_plugins(plugin_paths, false, req.plugin_timeout_s);
  } catch (const InputError&) {
    throw_if_interrupted("opening the backend");  // the signal reached the probe too: not its plugin's fault
    throw;
  }
  throw_if_interrupted("opening the backend");
  for (const auto& k : probe.kernels) kernels::register_described(k);
  const std::vector<kernels::PluginInfo>& plugins = probe.plugins;
  auto devices = resolve_devices(req.devices, expected_backend);
  auto backend = measure::make_backend(req.backend, devices.front(), &notices);
  const std::string backend_name = backend->name();
  if (backend_name != expected_backend) devices = resolve_devices(req.devices, backend_name);

  std::vector<KernelRef> kernels;
  const auto available = backend->kernels();
  if (req.kernel_names.empty()) {
    for (const auto* k : available)
      if (k->listed_by_default()) kernels.push_back({k->name(), k->kind()});
  } else {
    for (const auto& name : req.kernel_names) {
      auto it = std::find_if(available.begin(), available.end(),
                             [&](const kernels::Kernel* k) { return k->name() == name; });
      if (it == available.end()) {
        std::vector<std::string> names;
        for (const auto* k : available) names.push_back(k->name());
        const std::string known = fmt::format("{}", fmt::join(names, ", "));
        if (const kernels::Kernel* other = kernels::find_any(name))
          throw InputError(fmt::format("kernel '{}' is a {} kernel, but this sweep runs the {} backend (available: {})",
                                       name, core::to_string(other->backend()), backend_name, known));
        throw InputError(fmt::format("unknown kernel '{}' for the {} backend (available: {}; a plugin's kernels "
                                     "need --plugin)", name, backend_name, known));
      }
      if (std::none_of(kernels.begin(), kernels.end(), [&](const KernelRef& k) { return k.name == name; }))
        kernels.push_back({name, (*it)->kind()});
    }
  }
  if (kernels.empty()) throw EnvironmentError(fmt::format("the {} backend has no kernels", backend_name));

  const auto all_points = plan_points(req.spec.shapes, kernels);
  const auto points = select_shard(all_points, req.shard);

  core::Results results;
  auto& ctx = results.context;
  ctx.tool_version = std::string(core::tool_version());
  ctx.git_revision = std::string(core::git_revision());
  ctx.command_line = req.command_line;
  ctx.date_utc = utc_now();
  ctx.host = host_name();
  // Before the ceilings: their probes load every core, and would count in the load average.
  ctx.host_load = host_load_now();
  ctx.backend = backend->kind();
  ctx.device = backend->device_info();
  throw_if_interrupted("measuring the device's ceilings");
  hold_for_test();
  ctx.ceilings = backend->ceilings(false);
  throw_if_interrupted("opening the output folder");
  json kernel_names = json::array();
  for (const auto& k : kernels) kernel_names.push_back(k.name);
  ctx.sweep = {{"spec", req.spec.text},
               {"preset", req.spec.preset},
               {"source", req.spec_source},
               {"shard", to_string(req.shard)},
               {"points", points.size()},
               {"points_total", all_points.size()},
               {"kernels", kernel_names},
               {"devices", devices}};
  ctx.options = json(req.options);
  ctx.plugins = plugins;
  if (all_points.size() < req.spec.shapes.size() * kernels.size())
    notices.push_back("the spec lists some shapes twice: each point is measured once");
  Progress progress(points.size(), 0);
  for (const auto& n : notices) progress.message("attnprof: notice: " + n);
  // A busy machine is said first as a warning, then kept among the notices for the reports.
  if (ctx.host_load && core::busy(*ctx.host_load)) {
    notices.push_back(core::busy_message(*ctx.host_load));
    progress.message("attnprof: warning: " + notices.back());
  }
  ctx.notices = notices;

  std::error_code ec;
  if (fs::exists(req.out_dir, ec) && !fs::is_directory(req.out_dir, ec))
    throw InputError(fmt::format("--out '{}' is a file, not a folder", req.out_dir));
  fs::create_directories(req.out_dir, ec);
  if (ec) throw EnvironmentError(fmt::format("cannot create the output folder '{}': {}", req.out_dir, ec.message()));
  const OutputLock lock(req.out_dir);
  const std::string journal_path = (fs::path(req.out_dir) / kJournalFile).string();
  const std::string results_path = (fs::path(req.out_dir) / kResultsFile).string();

  throw_if_interrupted("reading the journal");
  // Points already done (--resume), by key.
  const json identity = sweep_identity(ctx.sweep, backend_name, ctx.device.name, plugins);
  std::map<std::string, core::Record> done;
  if (req.resume) {
    if (fs::exists(journal_path)) {
      Journal journal = read_journal(journal_path);
      if (journal.identity != identity)
        throw InputError(fmt::format("--resume: '{}' belongs to another sweep ({}), not this one ({})",
                                     journal_path, core::dump_json(journal.identity), core::dump_json(identity)));
      std::set<std::string> mine;
      for (const auto& p : points) mine.insert(p.key);
      for (auto& r : journal.records) {
        const auto key = core::point_key(r);
        if (mine.count(key)) done.insert_or_assign(key, std::move(r));
      }
      size_t pending = 0;
      for (const auto& [key, r] : done) pending += r.counters.status == core::CounterStatus::pending ? 1 : 0;
      progress.message(fmt::format("attnprof: resuming: {} of {} points already done{}", done.size(),
                                   points.size(),
                                   pending ? fmt::format(" ({} with counters pending: collected after the rest)", pending)
                                           : std::string()));
    } else {
      progress.message(fmt::format("attnprof: --resume: no journal at '{}', starting afresh", journal_path));
    }
  } else if (fs::exists(journal_path) || fs::exists(results_path)) {
    // A sweep never silently replaces another sweep's results; the same sweep measured again may.
    std::optional<json> theirs;
    try {
      if (fs::exists(journal_path)) theirs = read_journal(journal_path).identity;
    } catch (const std::exception&) {
      theirs.reset();  // unreadable: whose it is cannot be told
    }
    const bool same_sweep = theirs && *theirs == identity;
    if (!same_sweep && !req.overwrite)
      throw InputError(fmt::format("'{}' holds the results of another sweep: choose another --out, --resume to "
                                   "continue that sweep, or --overwrite to replace them",
                                   req.out_dir));
    if (!same_sweep) {
      // The reports scripts/run.sh writes beside them belong to that sweep too.
      for (const char* stale : {kReportFile, kSummaryFile}) {
        std::error_code ec;
        const fs::path path = fs::path(req.out_dir) / stale;
        const bool asked_for = std::any_of(req.report_paths.begin(), req.report_paths.end(),
                                           [&](const core::NamedPath& r) { return path == fs::path(r.path); });
        if (!asked_for) fs::remove(path, ec);
      }
      progress.message(fmt::format("attnprof: --overwrite: replacing another sweep's results in '{}'", req.out_dir));
    }
  }
  // The last step that may stop with nothing written: the journal is replaced next.
  throw_if_interrupted("writing the journal");
  std::vector<core::Record> existing;
  for (const auto& p : points)
    if (auto it = done.find(p.key); it != done.end()) existing.push_back(it->second);
  JournalWriter journal(journal_path, identity, existing);

  std::deque<Point> queue;
  for (const auto& p : points)
    if (!done.count(p.key)) queue.push_back(p);

  progress = Progress(points.size(), done.size());
  progress.message(fmt::format(
      "attnprof: {} points ({} to run{}) on the {} backend ({}), device(s) {} -> {}", points.size(),
      queue.size(), req.shard.sharded() ? ", shard " + to_string(req.shard) : "", backend_name,
      ctx.device.name, json(devices).dump(), req.out_dir));
  progress.message("attnprof: estimate: " +
                   describe(estimate_sweep({queue.begin(), queue.end()}, req.options, backend_name, ctx.ceilings),
                            backend_name, req.options));
  backend.reset();  // the workers own the device from here
  throw_if_interrupted("the first point");

  // The sampling passes run after, in workers of their own; --stalls adds the instruction mix to the counters.
  PoolConfig pool_config{backend_name, devices, measure::timing_worker_options(req.options), "", probe.pinned()};
  PoolEvents events;
  events.finished = [&](const Point& p, core::Record record) {
    journal.append(record);
    progress.point(record);
    done.insert_or_assign(p.key, std::move(record));
  };
  // The counter phase (--counter-batch > 1): every record whose counters are pending, this run's and
  // those a crashed or interrupted run journaled (--resume collects them, without re-timing).
  auto counters_start = std::chrono::steady_clock::now();
  size_t counters_points = 0;
  events.counter_groups = [&] {
    auto groups = plan_counter_groups(points, done, req.options.counter_batch, devices.size());
    for (const auto& g : groups) counters_points += g.points.size();
    if (!groups.empty())
      progress.message(fmt::format("attnprof: counters: {} points in {} group(s) of up to {} per session",
                                   counters_points, groups.size(), req.options.counter_batch));
    counters_start = std::chrono::steady_clock::now();
    return groups;
  };
  events.counters_finished = [&](const Point& p, core::Record record) {
    journal.append(record);
    done.insert_or_assign(p.key, std::move(record));
  };
  events.notice = [&](const std::string& text) {
    progress.message("attnprof: notice: " + text);
    ctx.notices.push_back(text);
  };
  events.signalled = [&](int count) {
    progress.message(count == 1 ? "attnprof: interrupted: finishing the point in flight (signal again "
                                  "to abandon it)"
                                : "attnprof: interrupted again: abandoning the point in flight");
  };
  PoolOutcome outcome = run_points(pool_config, std::move(queue), events);
  progress.end_line();
  if (counters_points > 0 && !outcome.interrupted)
    progress.message(fmt::format("attnprof: counters of {} points collected in {:.1f} s", counters_points,
                                 std::chrono::duration<double>(std::chrono::steady_clock::now() - counters_start).count()));
  if (req.options.stalls && outcome.fatal.empty() && !outcome.interrupted)
    run_sampling_pass(kStallPass, pool_config, points, done, journal, progress, events, ctx, outcome);
  if (req.options.timeline && outcome.fatal.empty() && !outcome.interrupted)
    run_sampling_pass(kTimelinePass, pool_config, points, done, journal, progress, events, ctx, outcome);

  for (const auto& p : points)
    if (auto it = done.find(p.key); it != done.end()) results.records.push_back(it->second);
  ctx.sweep["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - sweep_start).count();
  const size_t missing = points.size() - results.records.size();
  if (outcome.interrupted || !outcome.fatal.empty())
    ctx.notices.push_back(fmt::format("incomplete: {} of {} points measured ({}); `attnprof sweep "
                                      "--resume --out {}` continues", results.records.size(),
                                      points.size(), outcome.interrupted ? "interrupted" : outcome.fatal,
                                      req.out_dir));
  if (const size_t pending = count_pending_counters(results.records); pending > 0)
    ctx.notices.push_back(fmt::format("the counters of {} points are still pending (the counter phase did not "
                                      "run to its end); `attnprof sweep --resume --out {}` collects them",
                                      pending, req.out_dir));
  if (req.analyse) req.analyse(results);
  core::write_results(results, results_path);

  SweepOutcome sweep_outcome{std::move(results), results_path, kExitOk, outcome.fatal};
  if (outcome.fatal.empty() && outcome.interrupted) {
    fmt::print(stderr, "attnprof: interrupted: wrote {} of {} points to {} ({} left; --resume continues)\n",
               sweep_outcome.results.records.size(), points.size(), core::escape::one_line(results_path), missing);
    sweep_outcome.exit_code = kExitInterrupted;
  }
  return sweep_outcome;
}

}  // namespace attnprof::run
