// The latency timer, in the spirit of nvbench's cold measurement: warm up, then per sample flush L2
// (cold mode) and bracket one call with CUDA events, with events between the stages of a
// multi-launch call for the per-stage breakdown. Calls too short for events to time honestly (under
// core::kGraphTimingBelowUs) are replayed from a CUDA graph of many calls and divided. The SM clock is
// measured under load, over one call per batch of samples (clock_stamps.hpp), so throttled samples
// can be flagged and the run's clock range is the one its samples ran at. Counters are never collected
// here: they perturb timing and have their own phase (cupti_profiler.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/results.hpp"
#include "core/thresholds.hpp"
#include "kernels/registry.hpp"
#include "measure/backend.hpp"
#include "measure/clock_stamps.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/sampling.hpp"

namespace attnprof::measure {

inline constexpr int kClockBatchSamples = 10;        // SM clock measured once per this many calls
// A graph-replay sample is the calls' graph minus the flushes' graph; one that comes out <= 0 (the GPU
// ran something else meanwhile) is taken again this many times before the point fails.
inline constexpr int kGraphSampleAttempts = 3;

// One call of the code under test, enqueued on `stream`; `hook` (may be null) marks stage
// boundaries. Must not synchronise (it is captured into a CUDA graph for short calls).
using CallFn = std::function<void(cudaStream_t stream, kernels::StageHook* hook)>;

// Evicts L2 by reading a buffer twice its size (lines the previous call dirtied are written back
// during the flush), then discards the buffer's lines, leaving L2 empty, as Nsight Compute's cache
// control does. One launch ("attnprof_l2_flush_kernel", a grid barrier between the two phases) whose
// launched-warp count is the begin-marker signature of a batched counter session.
class L2Flusher {
 public:
  static constexpr int kLaunches = 1;  // kernel launches of one flush
  explicit L2Flusher(int64_t l2_bytes);
  void flush(cudaStream_t stream);
  size_t bytes() const { return buffer_.bytes(); }
  // Blocks of one flush on a device of `sms` SMs: two per SM, less one, so the count is odd.
  static int flush_blocks(int sms);

 private:
  DeviceBuffer buffer_;
  DeviceBuffer state_;  // grid barrier (arrivals, generation) and the read sink
  int blocks_ = 1;
};

struct Timing {
  SampleSet samples;                 // total_us: GPU time of one call; stage_us: [stage][sample]
  core::TimingMode timing_mode = core::TimingMode::cold;  // with "+graph" when replayed from a graph
  int64_t calls_per_graph = 1;       // calls captured in one graph (1 when not replayed)
  double launch_overhead_us = 0;     // median host time to enqueue one call
  core::ClockInfo clock;
  std::string note;                  // e.g. why graph replay was not possible
};

// What a kernel asks of the timer (kernels/registry.hpp): whether its calls may be captured into a
// graph, and work enqueued before every call outside the timed region (a plugin's zeroed workspace).
struct CallTraits {
  bool graph_capturable = true;
  std::function<void(cudaStream_t)> before_call;  // may be empty
  // Hold the stream while the host enqueues each event-timed call (StreamHold): for calls whose host
  // side is slow or unknown (a plugin's, Python's), so the GPU time has no gap waiting for the host.
  bool hold_stream = false;
};

// nvbench's blocking kernel: one spinning block keeps the stream busy until the host has enqueued the
// whole sample (flush, start event, call, stop event), so they then run back to back. The spin gives
// up after kTimeoutNs: the host took that long to enqueue, or the call waited for the GPU, which
// a launch() must never do; timed_out() then says so.
class StreamHold {
 public:
  static constexpr unsigned long long kTimeoutNs = 2'000'000'000;
  StreamHold();
  ~StreamHold();
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  void hold(cudaStream_t stream);
  void release();
  bool timed_out() const;  // of the last hold; read after the stream has passed it

 private:
  volatile int* host_ = nullptr;  // [0]: released, [1]: timed out (mapped pinned memory)
  int* device_ = nullptr;
};

// Enqueues one clock stamp per SM into slots[0, sms) (clock_stamps.hpp): one block per SM stamps its
// cycle counter and the global timer. The slots are filled with -1 first, so a slot no block wrote
// reads sm = -1. Stamps before and after a launch give the SM clock it ran at (clock_mhz_between).
void enqueue_clock_stamps(ClockStamp* slots, int sms, cudaStream_t stream);

// Runs the timing phase for `call` (stage_count > 1 records per-stage times).
Timing time_call(const CallFn& call, int stage_count, cudaStream_t stream, const MeasureOptions& options,
                 double sm_clock_max_mhz, L2Flusher& flusher, const CallTraits& traits = {});

}  // namespace attnprof::measure
