// Child processes of this binary: the workers (run/worker.hpp) and the plugin probe
// (run/plugin_probe.hpp) are re-executions of attnprof in a hidden mode, spoken to over their stdin
// and stdout, one JSON object per line. (exec, not fork: CUDA state does not survive fork.)
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnprof::run {

struct Child {
  pid_t pid = -1;
  int to_fd = -1;    // the child's stdin
  int from_fd = -1;  // the child's stdout
};

// This program's path (/proc/self/exe); EnvironmentError when it cannot be read.
std::string self_executable();

// Starts `exe args...` with pipes for its stdin and stdout (its stderr is ours). SIGINT and SIGTERM
// are blocked from birth, so a Ctrl-C during its start cannot kill it before it decides what to do
// with them; SIGPIPE is back to its default. EnvironmentError when it cannot start.
Child spawn_child(const std::string& exe, const std::vector<std::string>& args);

// "signal 7 (Bus error)", "exit code 0": a wait status in words.
std::string describe_exit(int status);

// Writes one message and a newline to `fd`, whole (retrying short writes). Bytes that are not UTF-8
// (in a reason a plugin wrote) are replaced, so they cannot break the protocol. False when the
// reader is gone.
bool send_line(int fd, const nlohmann::json& message);

// Kills the child (SIGKILL) if it still runs, waits for it and closes its pipes. Returns its wait
// status.
int kill_and_reap(Child& child);

}  // namespace attnprof::run
