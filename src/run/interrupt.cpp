#include "run/interrupt.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace attnprof::run {

namespace {

volatile sig_atomic_t g_signal_count = 0;
volatile sig_atomic_t g_pool_owns_signals = 0;
int g_wake_write = -1;
int g_wake_read = -1;
int g_scope_depth = 0;
struct sigaction g_old_int {}, g_old_term {};

void on_signal(int) {
  const int saved_errno = errno;
  g_signal_count = g_signal_count + 1;
  if (g_wake_write >= 0) {
    const char byte = 's';
    [[maybe_unused]] ssize_t n = ::write(g_wake_write, &byte, 1);
  }
  if (!g_pool_owns_signals && g_signal_count >= 2) {
    // Only async-signal-safe calls: write and _exit.
    constexpr const char kMessage[] = "attnprof: interrupted again: stopped at once (exit 130)\n";
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    ::_exit(kExitInterrupted);
  }
  errno = saved_errno;
}

}  // namespace

InterruptScope::InterruptScope() {
  if (g_scope_depth++ > 0) return;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    --g_scope_depth;
    throw EnvironmentError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  g_wake_read = pipe_fds[0];
  g_wake_write = pipe_fds[1];
  g_signal_count = 0;
  g_pool_owns_signals = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the pool's poll() returns at once
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptScope::~InterruptScope() {
  if (--g_scope_depth > 0) return;
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  const int read_fd = g_wake_read, write_fd = g_wake_write;
  g_wake_write = g_wake_read = -1;
  ::close(read_fd);
  ::close(write_fd);
}

PoolSignals::PoolSignals() { g_pool_owns_signals = 1; }
PoolSignals::~PoolSignals() { g_pool_owns_signals = 0; }

int interrupt_count() { return g_signal_count; }

int interrupt_wake_fd() { return g_wake_read; }

void throw_if_interrupted(std::string_view step) {
  if (g_signal_count > 0)
    throw InterruptedError(
        fmt::format("stopped before {}: no point measured, no results written (--out's results.json as it was)", step));
}

}  // namespace attnprof::run
