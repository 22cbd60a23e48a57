// The CUDA backend: the steps of one (shape, kernel) point (CudaPoint) that the shared lifecycle
// (point_lifecycle.hpp) runs — device memory check, allocation, fresh inputs, poisoned outputs, the
// verified call, launch records, timing (cold L2 by default), counters, occupancy — and the batched
// counter phase. Point-level failures become a status; only a sticky CUDA error (the context is
// lost) escapes, as EnvironmentError, so that the sweep runner restarts its worker.
#include "measure/cuda/cuda_backend.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nvtx3/nvtx3.hpp>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "core/roofline.hpp"
#include "core/stats.hpp"
#include "kernels/common/testbed.hpp"
#include "measure/ceilings_cache.hpp"
#include "measure/counter_batch.hpp"
#include "measure/cuda/ceilings.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/cupti_profiler.hpp"
#include "measure/cuda/device.hpp"
#include "measure/cuda/launch_records.hpp"
#include "measure/cuda/occupancy.hpp"
#include "measure/cuda/pc_sampling.hpp"
#include "measure/cuda/pm_sampling.hpp"
#include "measure/cuda/timer.hpp"
#include "measure/point_lifecycle.hpp"

namespace attnprof::measure {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The settle check after a killed point: an empty launch within this factor of the recorded one (or
// this many us above it, for a latency of a few us) is an idle GPU; polled at this interval.
constexpr double kSettleLaunchFactor = 2.0;
constexpr double kSettleLaunchSlackUs = 2.0;
constexpr int kSettlePollMs = 100;

// The achieved occupancy of `launch`: the sm__warps_active counter of its range, found by name, else
// by position when every launch of the call has a range.
std::optional<double> achieved_occupancy(const core::Counters& counters,
                                         const std::vector<kernels::LaunchInfo>& launches,
                                         const kernels::LaunchInfo& launch) {
  const core::KernelCounters* match = nullptr;
  if (!launch.kernel_name.empty()) {
    for (const auto& k : counters.per_kernel) {
      if (k.kernel.find(launch.kernel_name) != std::string::npos) {
        match = &k;
        break;
      }
    }
  }
  if (match == nullptr && counters.per_kernel.size() == launches.size()) {
    match = &counters.per_kernel[static_cast<size_t>(&launch - launches.data())];
  }
  if (match == nullptr) return std::nullopt;
  const auto it = match->metrics.find(core::kMetricAchievedOccupancy);
  if (it == match->metrics.end()) return std::nullopt;
  return it->second;
}

// Auto-range names are launch indices: name each range after its launch (or stage) when the call
// made exactly the launches the kernel declares, else after CUPTI's launch records; then the achieved
// occupancy of the dominant launch.
void attribute_counters(core::Record& rec, const kernels::Kernel& kernel) {
  const std::vector<kernels::LaunchInfo> launches = kernel.launch_info(rec.shape);
  const std::vector<std::string> stage_names = kernel.stage_names(rec.shape);
  auto& per_kernel = rec.counters.per_kernel;
  const bool by_records = launches.empty() && per_kernel.size() == rec.launches.size();
  for (size_t i = 0; i < per_kernel.size(); ++i) {
    if (per_kernel.size() == launches.size() && !launches[i].kernel_name.empty()) {
      per_kernel[i].kernel = launches[i].kernel_name;
    } else if (by_records) {
      per_kernel[i].kernel = rec.launches[i].name;
    } else if (per_kernel.size() == stage_names.size()) {
      per_kernel[i].kernel = stage_names[i];
    }
  }
  if (rec.counters.status != core::CounterStatus::ok) return;
  if (per_kernel.size() == rec.launches.size()) {
    for (size_t i = 0; i < per_kernel.size(); ++i) {
      const auto it = per_kernel[i].metrics.find(core::kMetricAchievedOccupancy);
      if (it != per_kernel[i].metrics.end()) rec.launches[i].occupancy.achieved_pct = it->second;
    }
  }
  if (const kernels::LaunchInfo* launch = dominant_launch(launches, rec.launches)) {
    rec.occupancy.achieved_pct = achieved_occupancy(rec.counters, launches, *launch);
  } else if (const core::Launch* longest = longest_launch(rec.launches)) {
    rec.occupancy.achieved_pct = longest->occupancy.achieved_pct;
  }
}

// Launches one call makes: as the kernel declares them, else as CUPTI recorded them (library and
// plugin kernels declare none); what a batched counter session sizes its range capacity by.
int64_t launches_per_call(const core::Record& rec, const kernels::Kernel& kernel) {
  return static_cast<int64_t>(std::max(kernel.launch_info(rec.shape).size(), rec.launches.size()));
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device_index) : device_index_(device_index), seed_rng_(std::random_device{}()) {
    check_cuda(cudaSetDevice(device_index), "cudaSetDevice");
    info_ = query_device(device_index);
    sm_ = sm_resources(device_index);
    stream_ = std::make_unique<Stream>();
    flusher_ = std::make_unique<L2Flusher>(info_.l2_bytes);
  }

  core::BackendKind kind() const override { return core::BackendKind::cuda; }
  core::DeviceInfo device_info() override { return info_; }
  std::vector<const kernels::Kernel*> kernels() override { return kernels::registered(kernels::Backend::cuda); }

  core::Ceilings ceilings(bool remeasure) override {
    const std::string key = device_cache_key(info_.name);
    if (!remeasure) {
      if (auto cached = load_ceilings(key)) return *cached;
    }
    const nvtx3::scoped_range range("attnprof ceilings");
    check_cuda(cudaSetDevice(device_index_), "cudaSetDevice");
    try {
      core::Ceilings ceilings = core::merge_with_datasheet(measure_ceilings(), info_.name);
      save_ceilings(key, ceilings);
      return ceilings;
    } catch (const kernels::DeviceOutOfMemory&) {
      // Too little free memory for the 2 x 2 GiB copy probe: the datasheet is the honest fallback.
      if (const auto sheet = core::find_datasheet(info_.name)) return core::datasheet_ceilings(*sheet);
      throw;
    }
  }

  core::Record measure(const core::Shape& shape, const kernels::Kernel& kernel, const MeasureOptions& options) override;

  // Idle: back-to-back empty launches cost what the ceilings recorded (within kSettleLaunchFactor),
  // which they do not while another context time-slices the GPU.
  SettleReport settle(double limit_s) override {
    check_cuda(cudaSetDevice(device_index_), "cudaSetDevice");
    const double recorded_us = ceilings(false).launch_latency_us;
    SettleReport report;
    report.checked = true;
    const auto start = std::chrono::steady_clock::now();
    const auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    const double bound_us = std::max(recorded_us * kSettleLaunchFactor, recorded_us + kSettleLaunchSlackUs);
    double now_us = 0;
    for (;;) {
      now_us = measure_empty_launch_us();
      report.idle = recorded_us <= 0 || now_us <= bound_us;
      if (report.idle || waited() >= limit_s) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(kSettlePollMs));
    }
    report.waited_s = waited();
    report.detail = recorded_us <= 0 ? "no recorded launch latency to compare with"
                                     : fmt::format("an empty launch took {:.2f} us, {:.2f} us recorded, {:.2f} us allowed",
                                                   now_us, recorded_us, bound_us);
    return report;
  }

  void collect_counters(std::vector<core::Record>& records, const MeasureOptions& options) override {
    check_cuda(cudaSetDevice(device_index_), "cudaSetDevice");
    const nvtx3::scoped_range range("attnprof counters");
    std::vector<BatchMember> members;
    std::vector<BatchItem> items;
    for (auto& rec : records) {
      if (rec.counters.status != core::CounterStatus::pending) continue;
      const kernels::Kernel* kernel = nullptr;
      for (const auto* k : kernels())
        if (k->name() == rec.kernel) kernel = k;
      if (!options.counters) {
        rec.counters.status = core::CounterStatus::not_collected;
        rec.counters.reason = "counters are switched off (--no-counters)";
        continue;
      }
      if (!kernel) {
        rec.counters.status = core::CounterStatus::unavailable;
        rec.counters.reason = fmt::format("kernel '{}' is not in the cuda backend", rec.kernel);
        continue;
      }
      members.push_back({&rec, kernel});
      items.push_back({footprint_of(rec.shape, *kernel),
                       batch_ranges(launches_per_call(rec, *kernel), options.cold_l2)});
    }
    if (members.empty()) return;
    if (const core::Counters* failure = CounterProfiler::instance().init_failure()) {
      for (const BatchMember& m : members) m.rec->counters = *failure;
      return;
    }
    validate_extra_metrics(options.extra_metrics);
    size_t free_bytes = 0, total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    // A kernel that is not pure is replayed launch by launch with its memory restored (kernel replay),
    // which a shared session cannot do: it gets a session of its own.
    std::vector<BatchMember> pure_members;
    std::vector<BatchItem> pure_items;
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].kernel->pure()) {
        pure_members.push_back(members[i]);
        pure_items.push_back(items[i]);
      } else {
        collect_group({members[i]}, options);
      }
    }
    members = std::move(pure_members);
    // Groups of one kernel each: a call CUPTI cannot profile under user replay (a PyTorch call on the
    // H200) fails its whole group, which then falls back to a session per point.
    std::vector<std::string> kernel_order;
    for (const BatchMember& m : members)
      if (std::find(kernel_order.begin(), kernel_order.end(), m.kernel->name()) == kernel_order.end())
        kernel_order.push_back(m.kernel->name());
    for (const std::string& name : kernel_order) {
      std::vector<size_t> of_kernel;
      std::vector<BatchItem> kernel_items;
      for (size_t i = 0; i < members.size(); ++i) {
        if (members[i].kernel->name() != name) continue;
        of_kernel.push_back(i);
        kernel_items.push_back(pure_items[i]);
      }
      const auto groups = form_batches(kernel_items, kBatchMemoryShare * static_cast<double>(free_bytes),
                                       kMaxBatchRanges, options.counter_batch);
      for (const auto& group : groups) {
        std::vector<BatchMember> batch;
        for (size_t i : group) batch.push_back(members[of_kernel[i]]);
        collect_group(batch, options);
      }
    }
  }

 private:
  friend class CudaPoint;
  struct BatchMember {
    core::Record* rec;
    const kernels::Kernel* kernel;
  };

  // One counter session for `batch`: fresh buffers for every point, inputs from its recorded seed,
  // then CounterProfiler::collect (one point) or collect_batch. A group that does not fit after all is
  // collected point by point; any other failure marks the group's counters unavailable.
  void collect_group(const std::vector<BatchMember>& batch, const MeasureOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      cudaStream_t stream = stream_->get();
      void* stream_arg = static_cast<void*>(stream);
      std::vector<std::unique_ptr<kernels::CudaProblem>> problems;
      std::vector<std::unique_ptr<kernels::Call>> calls;
      for (const BatchMember& m : batch) {
        problems.push_back(std::make_unique<kernels::CudaProblem>(m.rec->shape, *m.kernel));
        problems.back()->fill_inputs(m.rec->verification.seed, stream_arg);
        calls.push_back(m.kernel->prepare(problems.back()->args(stream_arg)));
      }
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      CounterProfiler& profiler = CounterProfiler::instance();
      std::vector<CounterProfiler::BatchPoint> points;
      for (size_t i = 0; i < batch.size(); ++i) {
        kernels::Call& call = *calls[i];
        kernels::CudaProblem& problem = *problems[i];
        const bool zero = batch[i].kernel->needs_zeroed_workspace();
        const auto launch = [&call, &problem, zero, stream_arg] {
          if (zero) problem.zero_workspace(stream_arg);
          call.launch();
        };
        // Cold: L2 flushed before the call, as before each pass of a session of its own. Warm: the
        // call once before, so that L2 holds what the previous pass of its own session left there.
        std::function<void()> before = options.cold_l2 ? std::function<void()>([this, stream] { flusher_->flush(stream); })
                                                       : std::function<void()>(launch);
        points.push_back({std::move(before), launch, options.cold_l2});
      }
      std::vector<core::Counters> counters;
      if (points.size() == 1) {
        const std::function<void()> before_pass = options.cold_l2 ? points[0].before_pass : std::function<void()>([] {});
        counters.push_back(profiler.collect(before_pass, points[0].call, stream, options.extra_metrics,
                                            options.cold_l2 ? L2Flusher::kLaunches : 0, !batch[0].kernel->pure()));
      } else {
        int64_t ranges = kRangesPerBatch;
        for (const BatchMember& m : batch)
          ranges += batch_ranges(launches_per_call(*m.rec, *m.kernel), options.cold_l2);
        counters = profiler.collect_batch(points, stream, options.extra_metrics,
                                          static_cast<size_t>(std::min(ranges, kMaxBatchRanges)));
      }
      // Counters from kernel replay count the DRAM traffic of the memory it restores between passes:
      // the call's own bytes come from one more pass of the DRAM counters alone.
      for (size_t i = 0; i < batch.size(); ++i) {
        const std::function<void()> before =
            options.cold_l2 || points.size() > 1 ? points[i].before_pass : std::function<void()>([] {});
        profiler.recount_dram(counters[i], before, points[i].call, stream,
                              options.cold_l2 ? L2Flusher::kLaunches : 0);
      }
      for (size_t i = 0; i < batch.size(); ++i) {
        core::Record& rec = *batch[i].rec;
        rec.counters = std::move(counters[i]);
        attribute_counters(rec, *batch[i].kernel);
        rec.wall_s += rec.counters.profiling_ms * 1e-3;
      }
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    } catch (const InputError&) {
      throw;
    } catch (const kernels::DeviceOutOfMemory& e) {
      if (batch.size() > 1) {
        for (const BatchMember& m : batch) collect_group({m}, options);
        return;
      }
      mark_unavailable(batch, fmt::format("re-creating the buffers for counters: {}", e.what()), t0);
    } catch (const std::exception& e) {
      const std::string sticky = sticky_error_message();
      if (!sticky.empty()) throw EnvironmentError(sticky + " (collecting counters: " + e.what() + ")");
      mark_unavailable(batch, e.what(), t0);
    }
  }

  static void mark_unavailable(const std::vector<BatchMember>& batch, const std::string& reason,
                               std::chrono::steady_clock::time_point t0) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (const BatchMember& m : batch) {
      m.rec->counters = core::Counters{};
      m.rec->counters.status = core::CounterStatus::unavailable;
      m.rec->counters.reason = reason;
      m.rec->counters.profiling_ms = ms / static_cast<double>(batch.size());
    }
  }

  void validate_extra_metrics(const std::vector<std::string>& extra) {
    if (extra.empty()) return;
    if (validated_.contains(extra)) return;
    CounterProfiler& profiler = CounterProfiler::instance();
    if (profiler.init_failure()) return;  // counters unavailable anyway: reported per point
    validate_metrics(extra, profiler.chip_name());
    validated_.insert(extra);
  }

  // Device memory one point needs: the cost model's footprint, or the tensors plus the kernel's
  // declared workspace when that is larger (a plugin's workspace is its own).
  static double footprint_of(const core::Shape& shape, const kernels::Kernel& kernel) {
    // The fused footprint is the tensors alone.
    return std::max(core::footprint_bytes(shape, kernel.kind()),
                    core::footprint_bytes(shape, core::KernelKind::fused) + static_cast<double>(kernel.workspace_bytes(shape)));
  }

  int device_index_;
  core::DeviceInfo info_;
  SmResources sm_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<L2Flusher> flusher_;
  std::mt19937_64 seed_rng_;
  std::set<std::vector<std::string>> validated_;  // metric lists already checked
};

// One point on the GPU: device buffers through the testbed, launch records, the event timer (cold
// L2, graphs for short calls), CUPTI counters in the point's own session or left pending for a
// batched one, occupancy.
class CudaPoint final : public PointSteps {
 public:
  CudaPoint(CudaBackend& backend, const core::Shape& shape, const kernels::Kernel& kernel)
      : b_(backend), shape_(shape), kernel_(kernel), stream_(backend.stream_->get()),
        stream_arg_(static_cast<void*>(stream_)) {}

  void check_options(const MeasureOptions& options) override {
    if (options.counters) b_.validate_extra_metrics(options.extra_metrics);
  }

  // Each launch the kernel declares, against the shared memory a block may take on this device (a
  // kernel built for a larger one would fail at launch).
  std::string launch_refusal() override {
    check_cuda(cudaSetDevice(b_.device_index_), "cudaSetDevice");
    for (const kernels::LaunchInfo& launch : kernel_.launch_info(shape_)) {
      if (launch.func == nullptr) continue;
      cudaFuncAttributes attributes{};
      check_cuda(cudaFuncGetAttributes(&attributes, launch.func), "cudaFuncGetAttributes");
      if (std::string why = smem_refusal(launch.kernel_name, attributes.sharedSizeBytes, launch.dynamic_smem_bytes,
                                         b_.sm_.smem_per_block_optin);
          !why.empty())
        return why;
    }
    return {};
  }

  std::string memory_refusal() override {
    check_cuda(cudaSetDevice(b_.device_index_), "cudaSetDevice");  // another backend may have switched it
    const double footprint = CudaBackend::footprint_of(shape_, kernel_);
    size_t free_bytes = 0, total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    if (footprint > static_cast<double>(free_bytes))
      return fmt::format("needs {:.2f} GiB of device memory, {:.2f} GiB free", footprint / kGiB,
                         static_cast<double>(free_bytes) / kGiB);
    return {};
  }

  uint64_t fresh_seed() override { return b_.seed_rng_(); }

  void allocate(uint64_t seed) override {
    problem_ = std::make_unique<kernels::CudaProblem>(shape_, kernel_);
    // Inputs first (a backward point's O and LSE by its forward): a plugin's prepare may run the call,
    // and PyTorch's backward records its autograd graph there.
    problem_->fill_inputs(seed, stream_arg_);
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    // Untimed: a plugin's planning, handles and allocation happen here.
    call_ = kernel_.prepare(problem_->args(stream_arg_));
    zero_workspace_ = kernel_.needs_zeroed_workspace();
    problem_->poison_outputs(stream_arg_);
  }

  // Nothing left to do: a bwd problem's fill_inputs ran the kernel's forward (CudaProblem::run_forward),
  // as every CudaProblem of the point does, the counter phase's too.
  void call_forward() override {}

  void call_once() override {
    before_call();
    call_->launch();
    call_->write_output();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  core::Verification verify(uint64_t seed, int max_rows) override {
    return problem_->verify(seed, max_rows, stream_arg_);
  }

  // Every launch of one call, whoever made it, from an untimed call of its own.
  void inspect(core::Record& rec) override {
    LaunchRecording recording = record_launches([&] {
      before_call();
      call_->launch();
    }, stream_);
    rec.launches = std::move(recording.launches);
    for (core::Launch& launch : rec.launches) launch.occupancy = occupancy_of_record(launch, b_.sm_);
    if (!recording.error.empty())
      fmt::print(stderr, "attnprof: launch records unavailable at {}, {}: {}\n", shape_.label(), kernel_.name(),
                 recording.error);
  }

  PointTiming time(const MeasureOptions& options, const PointDeadline&) override {
    const CallFn timed_call = [&](cudaStream_t, kernels::StageHook* hook) { call_->launch(hook); };
    CallTraits traits;
    traits.graph_capturable = kernel_.graph_capturable();
    traits.hold_stream = kernel_.host_side_heavy();
    if (zero_workspace_) traits.before_call = [&](cudaStream_t) { before_call(); };
    Timing timing = time_call(timed_call, static_cast<int>(kernel_.stage_names(shape_).size()), stream_, options,
                              b_.info_.sm_clock_max_mhz, *b_.flusher_, traits);
    PointTiming out;
    out.samples = std::move(timing.samples);
    out.timing_mode = timing.timing_mode;
    out.clock = std::move(timing.clock);
    out.launch_overhead_us = timing.launch_overhead_us;
    return out;
  }

  void profile(const MeasureOptions& options, core::Record& rec) override {
    if (options.counters && options.counter_batch <= 1) {
      rec.counters = CounterProfiler::instance().collect(
          [&] {
            if (options.cold_l2) b_.flusher_->flush(stream_);
          },
          [&] {
            before_call();
            call_->launch();
          },
          stream_, options.extra_metrics, options.cold_l2 ? L2Flusher::kLaunches : 0, !kernel_.pure());
      CounterProfiler::instance().recount_dram(
          rec.counters,
          [&] {
            if (options.cold_l2) b_.flusher_->flush(stream_);
          },
          [&] {
            before_call();
            call_->launch();
          },
          stream_, options.cold_l2 ? L2Flusher::kLaunches : 0);
    } else if (options.counters) {
      if (const core::Counters* failure = CounterProfiler::instance().init_failure()) {
        rec.counters = *failure;  // unavailable in this process: nothing to collect later
      } else {
        rec.counters.status = core::CounterStatus::pending;
        rec.counters.reason = "collected after timing, with other points in one session (--counter-batch)";
      }
    }
    // Theoretical occupancy: the occupancy API where the kernel names its function, else the launch
    // record of the call's longest launch (a library's or a plugin's kernel).
    const std::vector<kernels::LaunchInfo> launches = kernel_.launch_info(shape_);
    if (const kernels::LaunchInfo* launch = dominant_launch(launches, rec.launches)) {
      rec.occupancy = occupancy_of(*launch, b_.sm_);
    } else if (const core::Launch* longest = longest_launch(rec.launches)) {
      rec.occupancy = longest->occupancy;
    }
    attribute_counters(rec, kernel_);
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  // One call at a time under warp-state sampling, L2 flushed before each when timing is cold; the flush
  // and the workspace zeroing run outside the sampled range.
  core::Stalls sample_stalls(const MeasureOptions& options, const core::Record& rec) override {
    return measure::sample_stalls(
        [&] {
          if (options.cold_l2) b_.flusher_->flush(stream_);
          before_call();
        },
        [&] { call_->launch(); }, stream_, rec.latency.p50_us);
  }

  // The L2 flush (cold timing) and the workspace's zeroing before the sampled window; a later call
  // of a short one's back-to-back run zeroes its workspace inside it.
  core::Timeline sample_timeline(const MeasureOptions& options, const core::Record&) override {
    return measure::sample_timeline(
        [&] {
          if (options.cold_l2) b_.flusher_->flush(stream_);
          before_call();
        },
        [&] { call_->launch(); }, [&] { before_call(); }, stream_);
  }

  // A sticky CUDA error: the context is lost, and the sweep runner restarts its worker.
  void escalate(const std::exception& e, const core::Shape& shape, const kernels::Kernel& kernel) override {
    const std::string sticky = sticky_error_message();
    if (!sticky.empty())
      throw EnvironmentError(fmt::format("{} (at {}, {}: {})", sticky, shape.label(), kernel.name(), e.what()));
  }

  void begin_phase(std::string_view name) override {
    phase_.emplace(fmt::format("attnprof {}", name).c_str());
  }
  void end_phase() override { phase_.reset(); }

 private:
  void before_call() {
    if (zero_workspace_) problem_->zero_workspace(stream_arg_);
  }

  CudaBackend& b_;
  const core::Shape& shape_;
  const kernels::Kernel& kernel_;
  cudaStream_t stream_;
  void* stream_arg_;
  std::unique_ptr<kernels::CudaProblem> problem_;
  std::unique_ptr<kernels::Call> call_;
  bool zero_workspace_ = false;
  std::optional<nvtx3::scoped_range> phase_;
};

core::Record CudaBackend::measure(const core::Shape& shape, const kernels::Kernel& kernel,
                                  const MeasureOptions& options) {
  CudaPoint point(*this, shape, kernel);
  return run_point(point, {core::BackendKind::cuda, device_index_}, shape, kernel, options);
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device_index) {
  std::string why;
  if (!cuda_device_present(&why)) throw EnvironmentError("no CUDA device: " + why);
  int count = 0;
  cudaGetDeviceCount(&count);
  if (device_index < 0 || device_index >= count) {
    throw EnvironmentError(fmt::format("CUDA device {} does not exist ({} visible)", device_index, count));
  }
  try {
    return std::make_unique<CudaBackend>(device_index);
  } catch (const std::exception& e) {
    throw EnvironmentError(fmt::format("cannot use CUDA device {}: {}", device_index, e.what()));
  }
}

}  // namespace attnprof::measure
