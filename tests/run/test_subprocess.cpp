// run/subprocess.cpp: wait statuses in words, one JSON line written whole (bytes that are not UTF-8
// replaced), a child started with pipes on both ends, and killed and reaped.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "run/subprocess.hpp"

namespace run = attnprof::run;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buffer[256];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("describe_exit: exit codes and signals in words") {
  CHECK(run::describe_exit(0) == "exit code 0");
  CHECK(run::describe_exit(3 << 8) == "exit code 3");  // as waitpid reports exit(3)
  const std::string killed = run::describe_exit(SIGKILL);  // as waitpid reports death by SIGKILL
  CHECK(killed.rfind("signal 9", 0) == 0);
  CHECK(killed.find("Killed") != std::string::npos);
}

TEST_CASE("send_line: one JSON object and a newline; bytes that are not UTF-8 replaced; a gone reader") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(run::send_line(fds[1], {{"reason", std::string("bad \xff byte")}, {"n", 7}}));
  ::close(fds[1]);
  const std::string line = read_all(fds[0]);
  ::close(fds[0]);
  REQUIRE(!line.empty());
  CHECK(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);
  const nlohmann::json back = nlohmann::json::parse(line);
  CHECK(back.at("n") == 7);
  CHECK(back.at("reason") == "bad \xef\xbf\xbd byte");

  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);
  const auto old = ::signal(SIGPIPE, SIG_IGN);
  CHECK_FALSE(run::send_line(fds[1], {{"to", "nobody"}}));
  ::signal(SIGPIPE, old);
  ::close(fds[1]);
}

TEST_CASE("spawn_child: a child's stdin and stdout are ours; kill_and_reap ends it and closes the pipes") {
  CHECK(run::self_executable().find("test_run") != std::string::npos);
  run::Child cat = run::spawn_child("/bin/cat", {});
  REQUIRE(cat.pid > 0);
  REQUIRE(run::send_line(cat.to_fd, {{"echo", 1}}));
  ::close(cat.to_fd);
  cat.to_fd = -1;
  const std::string echoed = read_all(cat.from_fd);
  REQUIRE(!echoed.empty());
  CHECK(echoed.back() == '\n');
  CHECK(nlohmann::json::parse(echoed) == nlohmann::json{{"echo", 1}});
  // cat ends at end of input; its output closes a moment before it exits. Wait for the exit (without
  // reaping it), so the kill finds it ended and kill_and_reap returns its own status.
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(cat.pid), &info, WEXITED | WNOWAIT) == 0);
  const int status = run::kill_and_reap(cat);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(cat.from_fd == -1);

  run::Child sleeper = run::spawn_child("/bin/sleep", {"60"});
  const pid_t pid = sleeper.pid;
  REQUIRE(pid > 0);
  const int killed = run::kill_and_reap(sleeper);
  CHECK((WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL));
  CHECK(sleeper.pid == -1);
  CHECK(::waitpid(pid, nullptr, WNOHANG) == -1);  // already reaped: not our child any more
  CHECK_THROWS_AS(run::spawn_child("/nonexistent/attnprof", {"sweep"}), attnprof::EnvironmentError);
}
