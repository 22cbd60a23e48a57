#include "run/worker_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "run/interrupt.hpp"
#include "run/subprocess.hpp"
#include "run/worker.hpp"

namespace attnprof::run {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// A worker gets this long to open its backend (CUDA context creation, a first cuBLAS handle).
constexpr double kWorkerStartTimeoutS = 120;
// Consecutive workers of one device that die without finishing a point before the sweep gives up.
constexpr int kMaxConsecutiveLosses = 3;

// A worker process (its pid and pipes: Child) and what the pool knows of it.
struct Worker : Child {
  enum class State { starting, idle, busy };
  int device = 0;
  State state = State::starting;
  std::string buffer;
  std::optional<Point> point;          // busy with a point, or
  std::optional<CounterGroup> group;   // busy with a counter group
  Clock::time_point since;      // state change: start, or the point's hand-out
  Clock::time_point deadline;
};

class Pool {
 public:
  Pool(const PoolConfig& config, std::deque<Point> queue, const PoolEvents& events)
      : config_(config), queue_(std::move(queue)), events_(events) {
    exe_ = config.executable.empty() ? self_executable() : config.executable;
    losses_.assign(config.devices.size(), 0);
    settle_next_.assign(config.devices.size(), false);
    workers_.resize(config.devices.size());
  }

  ~Pool() {
    for (auto& w : workers_)
      if (w) kill_and_reap(*w);
  }

  PoolOutcome run(int signal_fd) {
    while (true) {
      handle_signals_seen();
      ask_counter_groups();
      if (outcome_.fatal.empty()) start_and_dispatch();
      const bool active = std::any_of(workers_.begin(), workers_.end(), [](const auto& w) {
        return w && w->state != Worker::State::idle;
      });
      const bool work_left = !queue_.empty() || !groups_.empty() || !counter_phase_asked_;
      if (!active && (!work_left || stopping_ || !outcome_.fatal.empty())) break;
      wait_and_handle(signal_fd);
      check_deadlines();
    }
    for (auto& w : workers_)
      if (w) retire(w);
    return outcome_;
  }

 private:
  void handle_signals_seen() {
    const int count = interrupt_count();
    if (count == signals_handled_) return;
    signals_handled_ = count;
    if (events_.signalled) events_.signalled(count);
    outcome_.interrupted = true;
    stopping_ = true;
    if (count >= 2) {
      for (auto& w : workers_) {
        if (w && w->state == Worker::State::busy && w->point) ++outcome_.abandoned;
        if (w) kill_and_reap(*w), w.reset();
      }
    }
  }

  // Once every point has its record (none queued, none in flight), the owner's counter groups join
  // the work: the workers that timed the points collect their counters.
  void ask_counter_groups() {
    if (counter_phase_asked_ || stopping_ || !outcome_.fatal.empty() || !queue_.empty()) return;
    const bool busy = std::any_of(workers_.begin(), workers_.end(), [](const auto& w) {
      return w && w->state == Worker::State::busy;
    });
    if (busy) return;
    counter_phase_asked_ = true;
    if (!events_.counter_groups) return;
    for (auto& group : events_.counter_groups())
      if (!group.points.empty()) groups_.push_back(std::move(group));
  }

  void start_and_dispatch() {
    for (size_t slot = 0; slot < workers_.size(); ++slot) {
      auto& w = workers_[slot];
      const bool work = !queue_.empty() || !groups_.empty();
      if (!w && work && !stopping_) w = spawn(config_.devices[slot]);
      if (!w) continue;
      if (w->state == Worker::State::idle) {
        if (stopping_) {
          retire(w);
        } else if (!queue_.empty()) {
          hand_out(*w, queue_.front());
          queue_.pop_front();
        } else if (!groups_.empty()) {
          hand_out(*w, std::move(groups_.front()));
          groups_.pop_front();
        } else if (counter_phase_asked_) {
          retire(w);
        }  // else: idle until the counter groups are known
      }
    }
  }

  std::unique_ptr<Worker> spawn(int device) {
    const Child child = spawn_child(exe_, {"sweep", "--worker"});
    auto w = std::make_unique<Worker>();
    static_cast<Child&>(*w) = child;
    w->device = device;
    w->state = Worker::State::starting;
    w->since = Clock::now();
    w->deadline = w->since + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(kWorkerStartTimeoutS));
    const size_t slot = static_cast<size_t>(std::find(config_.devices.begin(), config_.devices.end(), device) -
                                            config_.devices.begin());
    send(*w, json(WorkerConfig{config_.backend, device, config_.options, config_.plugins, settle_next_[slot]}));
    settle_next_[slot] = false;
    return w;
  }

  // False when the worker died (EPIPE); its EOF is handled by the loop.
  bool send(Worker& w, const json& message) { return send_line(w.to_fd, message); }

  void hand_out(Worker& w, const Point& p) {
    w.point = p;
    w.state = Worker::State::busy;
    w.since = Clock::now();
    w.deadline = w.since + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(config_.options.point_timeout_s));
    send(w, {{"index", p.index}, {"shape", p.shape}, {"kernel", p.kernel}});
  }

  // A group gets the point timeout once per point: its session runs every point's call per pass.
  void hand_out(Worker& w, CounterGroup group) {
    json members = json::array();
    for (size_t i = 0; i < group.points.size(); ++i)
      members.push_back({{"index", group.points[i].index}, {"record", group.records[i]}});
    w.state = Worker::State::busy;
    w.since = Clock::now();
    w.deadline = w.since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                               config_.options.point_timeout_s * static_cast<double>(group.points.size())));
    w.group = std::move(group);
    send(w, {{"counters", members}});
  }

  // Closing its stdin ends an idle worker; it is reaped on the spot (killed after grace_s).
  void retire(std::unique_ptr<Worker>& w, double grace_s = 2.0) {
    if (w->to_fd >= 0) ::close(w->to_fd), w->to_fd = -1;
    if (w->state == Worker::State::busy) {
      kill_and_reap(*w);
    } else {
      reap(*w, grace_s);
    }
    w.reset();
  }

  // Waits up to grace_s for the worker to exit by itself, then kills it. Returns its wait status.
  int reap(Worker& w, double grace_s) {
    int status = 0;
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(grace_s));
    while (true) {
      const pid_t r = ::waitpid(w.pid, &status, WNOHANG);
      if (r == w.pid || (r < 0 && errno != EINTR)) break;
      if (Clock::now() >= until) {
        ::kill(w.pid, SIGKILL);
        while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      ::usleep(10'000);
    }
    close_fds(w);
    w.pid = -1;
    return status;
  }

  static void kill_and_reap(Worker& w) { run::kill_and_reap(w); }

  static void close_fds(Worker& w) {
    if (w.to_fd >= 0) ::close(w.to_fd), w.to_fd = -1;
    if (w.from_fd >= 0) ::close(w.from_fd), w.from_fd = -1;
  }

  core::Record failure_record(const Worker& w, std::string reason) {
    const Point& p = *w.point;
    core::Record r;
    r.shape = p.shape;
    r.kernel = p.kernel;
    r.backend = core::parse_enum<core::BackendKind>(config_.backend);
    r.device_id = w.device;
    r.status = core::Status::failed;
    r.reason = std::move(reason);
    r.cost = core::cost_of(p.shape, p.kind);
    r.wall_s = std::chrono::duration<double>(Clock::now() - w.since).count();
    return r;
  }

  void finish(Worker& w, core::Record record) {
    const Point point = *w.point;
    w.point.reset();
    if (events_.finished) events_.finished(point, std::move(record));
  }

  void finish_group(Worker& w, std::vector<core::Record> records) {
    const CounterGroup group = std::move(*w.group);
    w.group.reset();
    const auto& done = events_.counters_finished ? events_.counters_finished : events_.finished;
    if (!done) return;
    for (size_t i = 0; i < group.points.size(); ++i) done(group.points[i], std::move(records[i]));
  }

  // A group whose worker was lost keeps its timing records; its counters are unavailable.
  void fail_group(Worker& w, const std::string& what) {
    std::vector<core::Record> records = w.group->records;
    for (auto& r : records) {
      r.counters = core::Counters{};
      r.counters.status = core::CounterStatus::unavailable;
      r.counters.reason = fmt::format("collecting counters (with {} points in one session): {}", records.size(), what);
    }
    finish_group(w, std::move(records));
  }

  // A worker was lost (died, hung, retired): its point, if any, is recorded as failed.
  void lose(size_t slot, const std::string& what) {
    auto& w = workers_[slot];
    if (w->state == Worker::State::busy && w->group) {
      losses_[slot] = 0;
      fail_group(*w, what);
    } else if (w->state == Worker::State::busy) {
      losses_[slot] = 0;  // it got as far as a point: the point is to blame, not the device
      settle_next_[slot] = true;  // its work may still hold the device
      finish(*w, failure_record(*w, what));
    } else if (++losses_[slot] >= kMaxConsecutiveLosses || w->state == Worker::State::starting) {
      outcome_.fatal = fmt::format("the worker for {} device {} could not start: {}", config_.backend,
                                   w->device, what);
    }
    w.reset();
  }

  void wait_and_handle(int signal_fd) {
    std::vector<pollfd> fds;
    std::vector<size_t> slots;
    fds.push_back({signal_fd, POLLIN, 0});
    Clock::time_point next = Clock::now() + std::chrono::seconds(1);
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (!workers_[i]) continue;
      fds.push_back({workers_[i]->from_fd, POLLIN, 0});
      slots.push_back(i);
      if (workers_[i]->state != Worker::State::idle) next = std::min(next, workers_[i]->deadline);
    }
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    const int timeout_ms = static_cast<int>(std::clamp<int64_t>(wait_ms.count() + 1, 0, 1000));
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n <= 0) return;  // timeout or EINTR: the caller checks signals and deadlines
    if (fds[0].revents) {
      char drain[64];
      while (::read(signal_fd, drain, sizeof(drain)) > 0) {
      }
    }
    for (size_t k = 1; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      const size_t slot = slots[k - 1];
      if (workers_[slot]) read_from(slot);
    }
  }

  void read_from(size_t slot) {
    Worker& w = *workers_[slot];
    char chunk[65536];
    const ssize_t n = ::read(w.from_fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
      const int status = reap(w, 2.0);
      const std::string how = describe_exit(status);
      lose(slot, w.state == Worker::State::busy && w.point
                     ? fmt::format("the worker process died while measuring this point ({})", how)
                     : fmt::format("the worker process died ({})", how));
      return;
    }
    w.buffer.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while (workers_[slot] && (newline = w.buffer.find('\n')) != std::string::npos) {
      const std::string line = w.buffer.substr(0, newline);
      w.buffer.erase(0, newline + 1);
      handle_line(slot, line);
    }
  }

  void handle_line(size_t slot, const std::string& line) {
    auto& w = workers_[slot];
    json message;
    try {
      message = json::parse(line);
    } catch (const json::exception&) {
      kill_and_reap(*w);
      lose(slot, "the worker sent a malformed message");
      return;
    }
    if (message.contains("fatal")) {
      reap(*w, 2.0);
      w->state = Worker::State::starting;
      lose(slot, message.at("fatal").get<std::string>());
      return;
    }
    if (message.contains("ready")) {
      w->state = Worker::State::idle;
      if (message.contains("settled") && events_.notice) {
        const json& s = message.at("settled");
        events_.notice(fmt::format(
            "{} device {}, after a lost point: {} after {:.2f} s ({})", config_.backend, w->device,
            s.value("idle", false) ? "idle" : fmt::format("still busy at the {:g} s limit", kSettleLimitS),
            s.value("waited_s", 0.0), s.value("detail", std::string())));
      }
      return;
    }
    if (message.contains("counters_for")) {
      handle_group_answer(slot, message);
      return;
    }
    if (!message.contains("record") || !w->point || message.value("index", -1) != w->point->index) {
      kill_and_reap(*w);
      lose(slot, "the worker answered for another point");
      return;
    }
    core::Record record;
    try {
      record = message.at("record").get<core::Record>();
    } catch (const std::exception& e) {
      kill_and_reap(*w);
      lose(slot, fmt::format("the worker sent an unreadable record: {}", e.what()));
      return;
    }
    record.device_id = w->device;
    losses_[slot] = 0;
    finish(*w, std::move(record));
    idle_or_retire(w, message);
  }

  // Back to idle after an answer; a worker that asked to restart (its device state is gone: a sticky
  // CUDA error) exits, and a fresh one follows.
  void idle_or_retire(std::unique_ptr<Worker>& w, const json& message) {
    w->state = Worker::State::idle;
    if (message.value("restart", false)) retire(w, 5.0);
  }

  void handle_group_answer(size_t slot, const json& message) {
    auto& w = workers_[slot];
    std::vector<core::Record> records;
    try {
      if (!w->group) throw std::runtime_error("no counter group was handed out");
      const auto indices = message.at("counters_for").get<std::vector<int>>();
      records = message.at("records").get<std::vector<core::Record>>();
      bool same = indices.size() == w->group->points.size() && records.size() == indices.size();
      for (size_t i = 0; same && i < indices.size(); ++i) same = indices[i] == w->group->points[i].index;
      if (!same) throw std::runtime_error("it answered for other points");
    } catch (const std::exception& e) {
      kill_and_reap(*w);
      lose(slot, fmt::format("the worker sent an unreadable counter answer: {}", e.what()));
      return;
    }
    losses_[slot] = 0;
    finish_group(*w, std::move(records));
    idle_or_retire(w, message);
  }

  void check_deadlines() {
    const auto now = Clock::now();
    for (size_t slot = 0; slot < workers_.size(); ++slot) {
      auto& w = workers_[slot];
      if (!w || w->state == Worker::State::idle || now < w->deadline) continue;
      kill_and_reap(*w);
      if (w->state == Worker::State::busy && w->group)
        lose(slot, fmt::format("timed out after {:g} s ({} x --point-timeout); the worker was killed",
                               config_.options.point_timeout_s * static_cast<double>(w->group->points.size()),
                               w->group->points.size()));
      else if (w->state == Worker::State::busy)
        lose(slot, fmt::format("timed out after {:g} s (--point-timeout); the worker was killed",
                               config_.options.point_timeout_s));
      else
        lose(slot, fmt::format("it did not start within {:g} s", kWorkerStartTimeoutS));
    }
  }

  const PoolConfig& config_;
  std::deque<Point> queue_;
  std::deque<CounterGroup> groups_;
  bool counter_phase_asked_ = false;
  const PoolEvents& events_;
  std::string exe_;
  std::vector<std::unique_ptr<Worker>> workers_;  // one slot per device
  std::vector<int> losses_;
  std::vector<bool> settle_next_;  // per slot: the next worker checks that its device is idle first
  PoolOutcome outcome_;
  bool stopping_ = false;
  int signals_handled_ = 0;
};

// A dead worker's pipe must not kill the parent: SIGPIPE is ignored while the pool runs.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old_pipe_);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &old_pipe_, nullptr); }

 private:
  struct sigaction old_pipe_ {};
};

}  // namespace

PoolOutcome run_points(const PoolConfig& config, std::deque<Point> queue, const PoolEvents& events) {
  if (config.devices.empty()) throw InputError("no device to run on");
  // The sweep's scope when it has one (run_sweep installs it before its first step), else this one.
  const InterruptScope interrupts;
  const PoolSignals pool_signals;
  const IgnoreSigpipe ignore_sigpipe;
  Pool pool(config, std::move(queue), events);
  return pool.run(interrupt_wake_fd());
}

}  // namespace attnprof::run
