// Failure isolation: the points of a sweep run in worker processes, re-executions of this binary in a
// hidden mode (`attnprof sweep --worker`), so a crash, a hang or a sticky CUDA error costs one point
// and a fresh worker, never the sweep. (exec, not fork: CUDA state does not survive fork.)
//
// The protocol is one JSON object per line. Parent -> worker (the worker's stdin):
//   {"backend": "cuda", "device": 0, "options": {...},           first line: what to open
//    "plugins": [...]}                                           (WorkerConfig; plugins pinned by
//                                                                their hash: run/plugin_probe.hpp)
//   {"index": 7, "shape": {...}, "kernel": "fused"}              one per point
//   {"counters": [{"index": 7, "record": {...}}, ...]}           a counter group (--counter-batch):
//                                                                timed records whose counters are
//                                                                "pending", collected in one session
// Worker -> parent (the worker's stdout; the worker points its own fd 1 at stderr so that stray
// prints cannot corrupt the stream):
//   {"ready": true, "kernels": ["reference", "fused"]}           backend opened ("settled":
//                                                                {"idle", "waited_s", "detail"} too
//                                                                when the config asked to settle)
//   {"fatal": "message"}                                         backend could not be opened
//   {"index": 7, "record": {...}, "restart": false}              one per point; restart: the worker
//                                                                exits after it (the backend threw,
//                                                                e.g. "sticky CUDA error: ...")
//   {"counters_for": [7, ...], "records": [...], "restart": false}
//                                                                the group's records, counters filled
// The worker exits when its stdin closes. It ignores SIGINT/SIGTERM: the parent decides whether the
// point in flight finishes (first signal) or is abandoned (second signal, SIGKILL).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/backend.hpp"
#include "run/plugin_probe.hpp"

namespace attnprof::run {

// Test hooks, read by the worker: the point with this sweep index crashes the worker (abort) or hangs
// it (sleeps until killed). They exercise the isolation for real in tests/run.
inline constexpr const char* kTestFailPointEnv = "ATTNPROF_TEST_FAIL_POINT";
inline constexpr const char* kTestHangPointEnv = "ATTNPROF_TEST_HANG_POINT";
// The counter group holding the point with this sweep index crashes the worker.
inline constexpr const char* kTestFailCountersEnv = "ATTNPROF_TEST_FAIL_COUNTERS";

// The protocol's first line: the backend and device to open, the options for every point, and the
// plugin libraries to load first (--plugin, in order), each loaded only if its file still holds the
// bytes the sweep pinned. Every field required on read.
// settle: the worker before this one on the device was lost in a point (killed at the timeout, or
// dead): before its first point, this one waits until the device runs its work alone
// (measure::Backend::settle) and says what it found in its "ready" line ("settled").
struct WorkerConfig {
  std::string backend;
  int device = 0;
  measure::MeasureOptions options;
  std::vector<PinnedPlugin> plugins;
  bool settle = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorkerConfig, backend, device, options, plugins, settle)

// How long a fresh worker waits for its device to be idle after a lost point.
inline constexpr double kSettleLimitS = 30;

// The worker's whole life; returns its exit code.
int worker_main();

}  // namespace attnprof::run
