#include "run/subprocess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/files.hpp"

extern char** environ;

namespace attnprof::run {

std::string self_executable() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw EnvironmentError("cannot find this program's path (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

Child spawn_child(const std::string& exe, const std::vector<std::string>& args) {
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) throw EnvironmentError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]), ::close(to_child[1]);
    throw EnvironmentError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &blocked);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> words{exe};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (rc != 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    throw EnvironmentError(fmt::format("cannot start '{} {}': {}", exe, args.empty() ? "" : args.front(), std::strerror(rc)));
  }
  return Child{pid, to_child[1], from_child[0]};
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return fmt::format("signal {} ({})", sig, ::strsignal(sig));
  }
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  return "unknown status";
}

bool send_line(int fd, const nlohmann::json& message) {
  const std::string line = core::dump_json(message) + '\n';
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int kill_and_reap(Child& child) {
  int status = 0;
  if (child.pid > 0) {
    ::kill(child.pid, SIGKILL);
    while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
    child.pid = -1;
  }
  if (child.to_fd >= 0) ::close(child.to_fd), child.to_fd = -1;
  if (child.from_fd >= 0) ::close(child.from_fd), child.from_fd = -1;
  return status;
}

}  // namespace attnprof::run
