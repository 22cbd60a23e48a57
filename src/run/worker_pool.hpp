// The parent's side of failure isolation (run/worker.hpp has the protocol): spawns workers by
// re-executing this binary, hands out points over a shared queue, and turns a worker that crashes,
// hangs past the point timeout, or retires after a sticky error into a `failed` record for the point
// it held. One worker per device; a fresh one replaces a lost one. After the points, the same workers
// run the counter groups (--counter-batch); a group whose worker is lost keeps its timing records,
// with counters "unavailable".
#pragma once
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "measure/backend.hpp"
#include "run/plan.hpp"
#include "run/plugin_probe.hpp"

namespace attnprof::run {

struct PoolConfig {
  std::string backend;                 // resolved: "cuda" or "cpu"
  std::vector<int> devices;
  measure::MeasureOptions options;
  std::string executable;              // this binary; empty: /proc/self/exe
  std::vector<PinnedPlugin> plugins;   // --plugin libraries, loaded by every worker if unchanged
};

// A counter group (--counter-batch): points already timed whose counters one worker collects in one
// profiling session. records[i] is points[i]'s record, counters "pending".
struct CounterGroup {
  std::vector<Point> points;
  std::vector<core::Record> records;
};

// What the pool tells its owner.
struct PoolEvents {
  std::function<void(const Point&, core::Record)> finished;  // in completion order
  std::function<void(int count)> signalled;                  // SIGINT/SIGTERM number `count`
  // Asked once, when every point has its record and no signal or fatal error stopped the sweep: the
  // counter groups to run next, on the same workers. May be empty (then the pool ends).
  std::function<std::vector<CounterGroup>()> counter_groups;
  // One per point of a finished counter group, its record with counters filled in (or "unavailable"
  // when the worker was lost meanwhile).
  std::function<void(const Point&, core::Record)> counters_finished;
  // A line for the results' notices: what a fresh worker found when it checked its device after a
  // lost point (the wait, and whether the device was idle).
  std::function<void(const std::string&)> notice;
};

struct PoolOutcome {
  bool interrupted = false;            // a signal stopped the hand-out of points
  int abandoned = 0;                   // points in flight dropped by a second signal
  std::string fatal;                   // a worker could not start: why (the sweep must stop)
};

// Runs `queue` to completion, then the counter groups (or until a signal / a fatal start failure).
// Owns the reaction to SIGINT/SIGTERM for its duration, through the sweep's InterruptScope when there
// is one (run/interrupt.hpp), else one of its own.
PoolOutcome run_points(const PoolConfig&, std::deque<Point> queue, const PoolEvents&);

}  // namespace attnprof::run
