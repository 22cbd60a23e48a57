// SIGINT and SIGTERM during a sweep: exit 130 (docs/exit-codes.md), whatever step the sweep is at.
// One handler serves the sweep's whole life, installed by an InterruptScope before its first step; it
// counts the signals and wakes the worker pool's poll() through a pipe.
//   - Before the pool (plugins, the device and its ceilings, the journal): the sweep stops at its next
//     step, where throw_if_interrupted() throws InterruptedError (exit 130, no results written); a
//     second signal while a step is still running (the ceilings take seconds) ends the process at
//     once with exit 130, before anything was measured or written.
//   - While the pool runs (a PoolSignals is alive): the pool decides; the point in flight finishes,
//     a second signal abandons it, and the points done are written (run/worker_pool.hpp).
//   - After the pool (results.json, the reports): a second signal ends the process at once; every
//     file is written whole or not at all (core::write_file), so none is left half-written.
#pragma once
#include <string_view>

namespace attnprof::run {

// Installs the handler for its lifetime and restores the previous ones after; scopes nest (an inner
// one shares the outer's count and pipe). Not thread-safe: one sweep per process.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// While one is alive, the worker pool owns the reaction to signals (no exit on the second).
class PoolSignals {
 public:
  PoolSignals();
  ~PoolSignals();
  PoolSignals(const PoolSignals&) = delete;
  PoolSignals& operator=(const PoolSignals&) = delete;
};

// Signals seen since the outermost InterruptScope began (0 outside any).
int interrupt_count();
// The read end of the pipe the handler writes a byte to per signal (-1 outside any scope); non-blocking.
int interrupt_wake_fd();
// Throws InterruptedError naming `step` (what was about to start) when a signal has come.
void throw_if_interrupted(std::string_view step);

}  // namespace attnprof::run
