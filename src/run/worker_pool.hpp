// The parent's side of failure isolation (run/worker.hpp has the protocol): spawns workers by
// re-executing this binary, hands out points over a shared queue, and turns a worker that crashes,
// hangs past the point timeout, or retires after a sticky error into a `failed` record for the point
// it held. One worker per device; a fresh one replaces a lost one.
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

namespace attnprof::run {

struct PoolConfig {
  std::string backend;                 // resolved: "cuda" or "cpu"
  std::vector<int> devices;
  measure::MeasureOptions options;
  std::string executable;              // this binary; empty: /proc/self/exe
};

// What the pool tells its owner.
struct PoolEvents {
  std::function<void(const Point&, core::Record)> finished;  // in completion order
  std::function<void(int count)> signalled;                  // SIGINT/SIGTERM number `count`
};

struct PoolOutcome {
  bool interrupted = false;            // a signal stopped the hand-out of points
  int abandoned = 0;                   // points in flight dropped by a second signal
  std::string fatal;                   // a worker could not start: why (the sweep must stop)
};

// Runs `queue` to completion (or until a signal / a fatal start failure). Installs SIGINT/SIGTERM
// handlers for its duration and restores the previous ones after.
PoolOutcome run_points(const PoolConfig&, std::deque<Point> queue, const PoolEvents&);

}  // namespace attnprof::run
