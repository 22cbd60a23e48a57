// Exit codes and the error types that map onto them. main.cpp owns the one catch that turns an
// exception into a one-line message and an exit code; every other layer just throws.
#pragma once
#include <stdexcept>
#include <string>

namespace attnprof {

enum ExitCode : int {
  kExitOk = 0,
  kExitRegression = 1,    // compare: a confirmed regression; calibrate: a verdict that differs
  kExitBadInput = 2,      // usage, malformed spec, unreadable / wrong-version JSON, impossible shape
  kExitInconclusive = 3,  // compare: noisy points and no regression
  kExitEnvironment = 4,   // no device, CUDA error, counters not permitted where they were required
  kExitInterrupted = 130, // SIGINT/SIGTERM: results so far were written (none before the first point)
};

// Bad input from the user: exit 2. The message is one line and names the offending token.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The environment cannot do what was asked (no GPU, driver too old, CUDA error): exit 4.
struct EnvironmentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A SIGINT/SIGTERM stopped a sweep before it measured a point: exit 130, nothing written.
struct InterruptedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace attnprof
