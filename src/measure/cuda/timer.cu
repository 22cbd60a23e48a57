#include "measure/cuda/timer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <cmath>
#include <optional>

#include <cuda_runtime.h>

#include "core/stats.hpp"
#include "measure/clock_stamps.hpp"
#include "measure/counter_batch.hpp"

namespace attnprof::measure {

namespace {

// SMs of the current device: the flush's grid and the clock stamps' grid are sized by it.
int current_device_sms() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device_attribute(cudaDevAttrMultiProcessorCount, device);
}

// One block per SM: thread 0 stamps its SM's cycle counter and the global timer (clock_stamps.hpp).
__global__ void clock_stamp_kernel(ClockStamp* out) {
  if (threadIdx.x != 0) return;
  unsigned sm = 0;
  unsigned long long ns = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  const long long cycles = clock64();
  out[blockIdx.x] = ClockStamp{cycles, ns, static_cast<int32_t>(sm), 0};
}

// The flush is one launch of blocks of kBeginMarkerWarps warps, an odd number of them: its launched-
// warp count is odd and a multiple of kBeginMarkerWarps, the begin marker's signature in a batched
// counter session (counter_batch.hpp), so a cold point's flush is its own begin marker.
constexpr int kL2FlushThreads = kBeginMarkerWarps * 32;
constexpr int kL2FlushBlocksPerSm = 2;  // 2 x 992 threads fit one SM: every block is resident at once
constexpr int64_t kL2LineBytes = 128;
constexpr unsigned long long kBarrierTimeoutNs = 20'000'000;

__device__ unsigned long long global_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Every block of the grid waits here for the others (state: arrivals, generation; both start at 0 and
// are left consistent for the next launch). The grid is sized so all blocks are resident; if they are
// not (another process holds SMs), a block stops waiting after kBarrierTimeoutNs instead of hanging,
// and the flush is only less thorough.
__device__ void bounded_grid_barrier(unsigned* state) {
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned* generation = state + 1;
    const unsigned mine = *generation;
    __threadfence();
    if (atomicAdd(state, 1u) == gridDim.x - 1) {
      atomicExch(state, 0u);
      __threadfence();
      atomicAdd(state + 1, 1u);
    } else {
      const unsigned long long start = global_ns();
      while (*generation == mine && global_ns() - start < kBarrierTimeoutNs) __nanosleep(256);
    }
    __threadfence();
  }
  __syncthreads();
}

// One launch, two phases.
// 1. Reads the whole buffer (twice the L2 size) with loads cached in L2 only. Every line the call
//    under test left in L2 is evicted, dirty ones written back now rather than during the next call.
//    (A memset flush left L2 full of dirty lines that the next call's misses then wrote back, counted
//    as that call's writes.) The sink is written only if the XOR of the zero-filled buffer is not
//    zero, which keeps the loads.
// 2. After every block has read, invalidates the buffer's lines without writing them back (PTX
//    discard, sm_80+): L2 is left empty, the state Nsight Compute's cache control leaves before each
//    kernel it profiles. The buffer's contents are never used.
__global__ void __launch_bounds__(kL2FlushThreads, kL2FlushBlocksPerSm)
    attnprof_l2_flush_kernel(const uint4* __restrict__ buffer, int64_t count, uint32_t* sink, unsigned* barrier) {
  uint32_t acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < count; i += stride) {
    const uint4 v = __ldcg(buffer + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc != 0) *sink = acc;
  bounded_grid_barrier(barrier);
#if __CUDA_ARCH__ >= 800
  const char* bytes = reinterpret_cast<const char*>(buffer);
  const int64_t lines = count * static_cast<int64_t>(sizeof(uint4)) / kL2LineBytes;
  for (int64_t i = first; i < lines; i += stride)
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(bytes + i * kL2LineBytes) : "memory");
#endif
}

// Records an event before every stage and after the last: stage i lasts from event i to event i+1.
class StageEvents final : public kernels::StageHook {
 public:
  StageEvents(int stage_count, cudaStream_t stream) : stream_(stream), recorded_(stage_count + 1, false) {
    events_.reserve(stage_count + 1);
    for (int i = 0; i <= stage_count; ++i) events_.emplace_back();
  }
  void before_stage(int index) override {
    if (index < 0 || index + 1 >= static_cast<int>(events_.size())) return;
    events_[index].record(stream_);
    recorded_[index] = true;
  }
  void after_last() override {
    events_.back().record(stream_);
    recorded_.back() = true;
  }
  void reset() { std::fill(recorded_.begin(), recorded_.end(), false); }
  bool complete() const { return std::all_of(recorded_.begin(), recorded_.end(), [](bool r) { return r; }); }
  std::vector<double> stage_us() const {
    std::vector<double> us;
    for (size_t i = 0; i + 1 < events_.size(); ++i) us.push_back(elapsed_ms(events_[i], events_[i + 1]) * 1e3);
    return us;
  }

 private:
  cudaStream_t stream_;
  std::vector<Event> events_;
  std::vector<bool> recorded_;
};

// The SM clock under load, read every kClockBatchSamples calls: stamps just before the call's flush
// and just after the call (clock_stamps.hpp), outside the timed events. Readings are keyed by the
// index of the call they bracket.
class ClockLog {
 public:
  // Calls 0, kClockBatchSamples, 2 * kClockBatchSamples, ... are read, warm-up calls included (how
  // many there are is known only when sampling starts: the warm-up may be timed).
  ClockLog(cudaStream_t stream, int sms)
      : stream_(stream),
        sms_(std::max(sms, 1)),
        stamps_(2 * static_cast<size_t>(std::max(sms, 1)) * sizeof(ClockStamp)) {}
  // Enqueue before the call (and before its flush).
  void before_call() {
    pending_ = call_index_ % kClockBatchSamples == 0;
    if (pending_) stamp(0);
  }
  // Enqueue after the call; reads the stamps back (the sample synchronises on its stop event anyway).
  void after_call() {
    if (pending_) {
      stamp(1);
      std::vector<ClockStamp> host(2 * static_cast<size_t>(sms_));
      check_cuda(cudaMemcpyAsync(host.data(), stamps_.get(), host.size() * sizeof(ClockStamp),
                                 cudaMemcpyDeviceToHost, stream_),
                 "cudaMemcpyAsync (clock stamps)");
      check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      const std::vector<ClockStamp> before(host.begin(), host.begin() + sms_);
      const std::vector<ClockStamp> after(host.begin() + sms_, host.end());
      const double mhz = clock_mhz_between(before, after);
      if (mhz > 0) readings_.push_back({call_index_, mhz});
      pending_ = false;
    }
    ++call_index_;
  }
  // Sample j is call warmup_calls + j; its clock is the latest reading at or before it. The readings
  // reported are those of sampled calls, and the last warm-up reading when it is the first sample's.
  core::ClockInfo summarize(int64_t warmup_calls, size_t samples, double sm_clock_max_mhz) const {
    core::ClockInfo info;
    info.sm_mhz_unthrottled = sm_clock_max_mhz;
    info.samples_per_reading = kClockBatchSamples;
    std::vector<Reading> used;
    for (const auto& r : readings_) {
      if (r.call_index >= warmup_calls + static_cast<int64_t>(samples)) break;
      if (r.call_index <= warmup_calls && !used.empty()) used.clear();  // a later one still at or before sample 0
      used.push_back(r);
    }
    if (used.empty()) return info;
    for (const auto& r : used) info.sm_mhz_batches.push_back(r.mhz);
    info.sm_mhz_min = *std::min_element(info.sm_mhz_batches.begin(), info.sm_mhz_batches.end());
    info.sm_mhz_max = *std::max_element(info.sm_mhz_batches.begin(), info.sm_mhz_batches.end());
    info.sm_mhz_median = core::median(info.sm_mhz_batches);
    for (size_t j = 0; j < samples; ++j) {
      const int64_t call = warmup_calls + static_cast<int64_t>(j);
      double mhz = used.front().mhz;
      for (const auto& r : used) {
        if (r.call_index <= call) mhz = r.mhz;
      }
      if (sm_clock_max_mhz > 0 && mhz < core::kThrottledClockFraction * sm_clock_max_mhz) ++info.throttled_samples;
    }
    return info;
  }

 private:
  struct Reading {
    int64_t call_index;
    double mhz;
  };
  void stamp(int which) {
    enqueue_clock_stamps(static_cast<ClockStamp*>(stamps_.get()) + static_cast<size_t>(which) * sms_, sms_, stream_);
  }
  cudaStream_t stream_;
  int sms_;
  DeviceBuffer stamps_;  // [before | after], one slot per block
  int64_t call_index_ = 0;
  bool pending_ = false;
  std::vector<Reading> readings_;
};

class Graph {
 public:
  Graph() = default;
  ~Graph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  // Captures `enqueue` on `stream`; returns an error message (empty on success).
  std::string capture(cudaStream_t stream, const std::function<void()>& enqueue) {
    cudaError_t error = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (error != cudaSuccess) return cudaGetErrorString(error);
    std::string failure;
    try {
      enqueue();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    error = cudaStreamEndCapture(stream, &graph_);
    if (failure.empty() && error != cudaSuccess) failure = cudaGetErrorString(error);
    if (failure.empty()) {
      error = cudaGraphInstantiate(&exec_, graph_, 0);
      if (error != cudaSuccess) failure = cudaGetErrorString(error);
    }
    if (!failure.empty()) cudaGetLastError();  // capture errors are not sticky; clear them
    return failure;
  }
  void launch(cudaStream_t stream) const { check_cuda(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch"); }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

__global__ void attnprof_stream_hold_kernel(volatile int* flags, unsigned long long timeout_ns) {
  const unsigned long long start = global_ns();
  while (flags[0] == 0) {
    if (global_ns() - start > timeout_ns) {
      flags[1] = 1;
      return;
    }
    __nanosleep(128);
  }
}

double median_launch_overhead_us(const CallFn& call, const std::function<void()>& before_call, cudaStream_t stream,
                                  double call_us) {
  // Enough enqueues for a stable median, fewer when each call is long (the GPU work is waited for).
  const int launches = call_us > 10'000 ? 5 : 21;
  std::vector<double> host_us;
  for (int i = 0; i < launches; ++i) {
    before_call();
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const auto t0 = std::chrono::steady_clock::now();
    call(stream, nullptr);
    const auto t1 = std::chrono::steady_clock::now();
    host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return core::median(host_us);
}

}  // namespace

StreamHold::StreamHold() {
  void* host = nullptr;
  check_cuda(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped), "cudaHostAlloc (stream hold)");
  host_ = static_cast<volatile int*>(host);
  host_[0] = 1;
  host_[1] = 0;
  void* device = nullptr;
  check_cuda(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer (stream hold)");
  device_ = static_cast<int*>(device);
}

StreamHold::~StreamHold() {
  if (host_ != nullptr) cudaFreeHost(const_cast<int*>(host_));
}

void StreamHold::hold(cudaStream_t stream) {
  host_[0] = 0;
  host_[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  attnprof_stream_hold_kernel<<<1, 1, 0, stream>>>(device_, kTimeoutNs);
  check_cuda(cudaGetLastError(), "attnprof_stream_hold_kernel launch");
}

void StreamHold::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  host_[0] = 1;
}

bool StreamHold::timed_out() const { return host_[1] != 0; }

void enqueue_clock_stamps(ClockStamp* slots, int sms, cudaStream_t stream) {
  check_cuda(cudaMemsetAsync(slots, 0xff, sms * sizeof(ClockStamp), stream), "cudaMemsetAsync (clock stamps)");
  clock_stamp_kernel<<<sms, 32, 0, stream>>>(slots);
  check_cuda(cudaGetLastError(), "clock_stamp_kernel launch");
}

L2Flusher::L2Flusher(int64_t l2_bytes)
    : buffer_(static_cast<size_t>(std::max<int64_t>(l2_bytes, 1 << 20)) * 2), state_(3 * sizeof(unsigned)) {
  check_cuda(cudaMemset(buffer_.get(), 0, buffer_.bytes()), "cudaMemset (L2 flush buffer)");
  check_cuda(cudaMemset(state_.get(), 0, state_.bytes()), "cudaMemset (L2 flush barrier)");
  blocks_ = flush_blocks(current_device_sms());
}

int L2Flusher::flush_blocks(int sms) { return std::max(kL2FlushBlocksPerSm * sms - 1, 1); }

void L2Flusher::flush(cudaStream_t stream) {
  auto* state = static_cast<unsigned*>(state_.get());  // barrier arrivals, generation, then the sink
  attnprof_l2_flush_kernel<<<blocks_, kL2FlushThreads, 0, stream>>>(
      static_cast<const uint4*>(buffer_.get()), static_cast<int64_t>(buffer_.bytes() / sizeof(uint4)),
      reinterpret_cast<uint32_t*>(state + 2), state);
  check_cuda(cudaGetLastError(), "attnprof_l2_flush_kernel launch");
}

Timing time_call(const CallFn& call, int stage_count, cudaStream_t stream, const MeasureOptions& options,
                 double sm_clock_max_mhz, L2Flusher& flusher, const CallTraits& traits) {
  Timing timing;
  const bool cold = options.cold_l2;
  timing.timing_mode = cold ? core::TimingMode::cold : core::TimingMode::warm;
  // Enqueued before every call, before the flush: outside the timed region, and out of L2 when cold.
  const auto before_call = [&] {
    if (traits.before_call) traits.before_call(stream);
  };

  // One call to warm lazy loading and caches, then one event-timed call decides between event
  // timing and graph replay.
  Event start, stop;
  before_call();
  call(stream, nullptr);
  before_call();
  if (cold) flusher.flush(stream);
  start.record(stream);
  call(stream, nullptr);
  stop.record(stream);
  const double probe_us = elapsed_ms(start, stop) * 1e3;

  // Host enqueue cost, measured apart from GPU time.
  timing.launch_overhead_us = median_launch_overhead_us(call, before_call, stream, probe_us);

  StageEvents stage_events(std::max(stage_count, 1), stream);
  const bool want_stages = stage_count > 1;
  // Event-timed sample: flush, bracket one call, read stage events.
  std::optional<StreamHold> hold;
  if (traits.hold_stream) hold.emplace();
  auto event_sample = [&](ClockLog& clocks) {
    clocks.before_call();
    if (hold) hold->hold(stream);
    before_call();
    if (cold) flusher.flush(stream);
    stage_events.reset();
    start.record(stream);
    call(stream, want_stages ? &stage_events : nullptr);
    stop.record(stream);
    if (hold) hold->release();
    clocks.after_call();
    std::vector<double> values{elapsed_ms(start, stop) * 1e3};
    if (hold && hold->timed_out())
      throw std::runtime_error("the call kept the host enqueueing for over " +
                               std::to_string(StreamHold::kTimeoutNs / 1'000'000'000) +
                               " s, or waited for the GPU inside launch() (a synchronisation in the timed call)");
    if (want_stages && stage_events.complete()) {
      for (double us : stage_events.stage_us()) values.push_back(us);
    }
    return values;
  };

  std::optional<int64_t> graph_calls;
  Graph with_calls, flush_only;
  const bool has_before = static_cast<bool>(traits.before_call);
  if (probe_us < core::kGraphTimingBelowUs && !traits.graph_capturable) {
    timing.note = "the kernel is not graph-capturable: short calls timed with events, launch gaps included";
  } else if (probe_us < core::kGraphTimingBelowUs) {
    // Enough calls per graph launch that the replay lasts ~1 ms.
    const double flush_us = cold ? 40 : 0;
    const auto n = static_cast<int64_t>(std::clamp(std::ceil(1000.0 / (probe_us + flush_us + 1)), 4.0, 100.0));
    std::string failure = with_calls.capture(stream, [&] {
      for (int64_t i = 0; i < n; ++i) {
        before_call();
        if (cold) flusher.flush(stream);
        call(stream, nullptr);
      }
    });
    // The graph of what surrounds the calls, timed and subtracted: the flushes and before_call work.
    if (failure.empty() && (cold || has_before)) {
      failure = flush_only.capture(stream, [&] {
        for (int64_t i = 0; i < n; ++i) {
          before_call();
          if (cold) flusher.flush(stream);
        }
      });
    }
    if (failure.empty()) {
      graph_calls = n;
    } else {
      timing.note = "graph capture failed (" + failure + "): short calls timed with events, launch gaps included";
    }
  }

  const int sms = current_device_sms();
  ClockLog clocks(stream, sms);
  if (!graph_calls) {
    timing.samples = sample_adaptively([&] { return event_sample(clocks); }, options);
  } else {
    // Each sample: the graph of n calls (cold: n x [flush, call], minus a graph of n flushes timed
    // right before it), divided by n.
    const int64_t n = *graph_calls;
    timing.calls_per_graph = n;
    timing.timing_mode = core::graph_replayed(timing.timing_mode);
    // A sample is a difference of two timings: if the flushes alone took as long as the flushes and
    // the calls together, something else ran on the GPU between them (another process's work, a clock
    // change). Such a sample is taken again; one that stays impossible fails the point with the figures.
    const auto graph_sample = [&] {
      double flush_us = 0, total_us = 0;
      for (int attempt = 0; attempt < kGraphSampleAttempts; ++attempt) {
        if (cold || has_before) {
          start.record(stream);
          flush_only.launch(stream);
          stop.record(stream);
          flush_us = elapsed_ms(start, stop) * 1e3;
        }
        clocks.before_call();
        start.record(stream);
        with_calls.launch(stream);
        stop.record(stream);
        clocks.after_call();
        total_us = elapsed_ms(start, stop) * 1e3;
        if (total_us > flush_us) return std::vector<double>{(total_us - flush_us) / static_cast<double>(n)};
      }
      char what[320];
      std::snprintf(what, sizeof(what),
                    "graph replay: %lld calls with their L2 flushes took %.1f us and the flushes alone %.1f us, %d "
                    "times in a row: the GPU was not running this point alone, and no duration can be taken",
                    static_cast<long long>(n), total_us, flush_us, kGraphSampleAttempts);
      throw std::runtime_error(what);
    };
    timing.samples = sample_adaptively(graph_sample, options);
    if (want_stages) {
      // The per-stage split still needs events between launches: take it from a short event-timed
      // run (its shares, not its absolute times, are what the graph cannot give).
      ClockLog stage_clocks(stream, sms);
      MeasureOptions stage_options = options;
      stage_options.max_samples = std::max(options.min_samples, 1);
      stage_options.warmup_calls = 1;
      SampleSet stage_set = sample_adaptively([&] { return event_sample(stage_clocks); }, stage_options);
      timing.samples.stage_us = std::move(stage_set.stage_us);
    }
  }
  timing.clock = clocks.summarize(timing.samples.warmup_calls, timing.samples.total_us.size(), sm_clock_max_mhz);
  return timing;
}

}  // namespace attnprof::measure
