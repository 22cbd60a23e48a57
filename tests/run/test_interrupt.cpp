// run/interrupt.cpp: a scope installs the handler and restores the previous one; inside it each
// signal is counted and wakes the pipe, throw_if_interrupted names the step; nested scopes share the
// count; while the pool owns signals a second one does not end the process.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <string>

#include "core/errors.hpp"
#include "run/interrupt.hpp"

namespace run = attnprof::run;

namespace {

// Bytes waiting in the wake pipe (non-blocking), consumed.
int drain(int fd) {
  int bytes = 0;
  char buffer[16];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) bytes += static_cast<int>(n);
  return bytes;
}

sighandler_t current_handler(int sig) {
  struct sigaction now {};
  ::sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

}  // namespace

TEST_CASE("interrupt: outside a scope there is no pipe and the previous handlers stay") {
  const sighandler_t before_int = current_handler(SIGINT), before_term = current_handler(SIGTERM);
  CHECK(run::interrupt_wake_fd() == -1);
  {
    run::InterruptScope scope;
    CHECK(run::interrupt_wake_fd() >= 0);
    CHECK(current_handler(SIGINT) != before_int);
    CHECK(current_handler(SIGTERM) != before_term);
  }
  CHECK(run::interrupt_wake_fd() == -1);
  CHECK(current_handler(SIGINT) == before_int);
  CHECK(current_handler(SIGTERM) == before_term);
}

TEST_CASE("interrupt: a signal is counted, wakes the pipe, and stops the next step by name") {
  run::InterruptScope scope;
  CHECK(run::interrupt_count() == 0);
  CHECK_NOTHROW(run::throw_if_interrupted("the journal"));
  {
    run::InterruptScope inner;  // nested: the same count and pipe
    const int fd = run::interrupt_wake_fd();
    REQUIRE(fd >= 0);
    ::raise(SIGTERM);
    CHECK(run::interrupt_count() == 1);
    CHECK(drain(fd) == 1);
  }
  CHECK(run::interrupt_wake_fd() >= 0);  // the outer scope's pipe is still open
  CHECK(run::interrupt_count() == 1);
  CHECK_THROWS_AS(run::throw_if_interrupted("the journal"), attnprof::InterruptedError);
  CHECK_THROWS_WITH(run::throw_if_interrupted("the journal"), Catch::Contains("stopped before the journal"));
}

TEST_CASE("interrupt: while the pool owns signals, a second one is counted and the process goes on") {
  run::InterruptScope scope;
  run::PoolSignals pool;
  ::raise(SIGINT);
  ::raise(SIGINT);
  CHECK(run::interrupt_count() == 2);
  CHECK(drain(run::interrupt_wake_fd()) == 2);
}
