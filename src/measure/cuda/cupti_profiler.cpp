#include "measure/cuda/cupti_profiler.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include <cuda.h>  // CUcontext and CUresult types only: the driver is reached through cudart
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "measure/counter_batch.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/range_marker.hpp"

// CUPTI parameter structs are initialised the documented way, `T params{T_STRUCT_SIZE}`, which
// value-initialises every other member.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace attnprof::measure {

namespace {

// Ranges one call may produce: the reference makes three launches (cuBLAS may add a few); the
// fused kernel one. Ranges past this are dropped, and the drop is reported.
constexpr size_t kMaxRanges = 64;

// A Range Profiler call that failed, with the failing call's name (its messages put the two apart).
struct ProfilerFailure {
  CUptiResult result;
  std::string during;
};

void check_profiler(CUptiResult result, const char* during) {
  if (result != CUPTI_SUCCESS) throw ProfilerFailure{result, during};
}

// Host object for one metric set on one chip; deinitialised on destruction.
class HostObject {
 public:
  HostObject(const std::string& chip, const uint8_t* availability) {
    CUpti_Profiler_Host_Initialize_Params params{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    params.pChipName = chip.c_str();
    params.pCounterAvailabilityImage = availability;
    check_profiler(cuptiProfilerHostInitialize(&params), "cuptiProfilerHostInitialize");
    object_ = params.pHostObject;
  }
  ~HostObject() {
    CUpti_Profiler_Host_Deinitialize_Params params{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    params.pHostObject = object_;
    cuptiProfilerHostDeinitialize(&params);
  }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;
  CUpti_Profiler_Host_Object* get() const { return object_; }

  // Adds names to the configuration in one call; returns CUPTI's result.
  CUptiResult add(const std::vector<const char*>& names) {
    CUpti_Profiler_Host_ConfigAddMetrics_Params params{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    params.pHostObject = object_;
    params.ppMetricNames = const_cast<const char**>(names.data());
    params.numMetrics = names.size();
    return cuptiProfilerHostConfigAddMetrics(&params);
  }

  std::vector<uint8_t> config_image() {
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = object_;
    check_profiler(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
    std::vector<uint8_t> image(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params get{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    get.pHostObject = object_;
    get.configImageSize = image.size();
    get.pConfigImage = image.data();
    check_profiler(cuptiProfilerHostGetConfigImage(&get), "cuptiProfilerHostGetConfigImage");
    return image;
  }

 private:
  CUpti_Profiler_Host_Object* object_ = nullptr;
};

// Adds every name in one call, throwing InputError for the first name the chip does not know.
// One call matters: CUPTI schedules the counters of one call's names into passes together, while
// names added one call at a time each start passes of their own (the default set on GH100: 15 passes
// added at once; before its per-level, pipe and stall metrics, 13 at once against 29 one by one).
void add_all(HostObject& host, const std::vector<std::string>& names, const std::string& chip) {
  if (names.empty()) return;
  std::vector<const char*> pointers;
  for (const auto& name : names) pointers.push_back(name.c_str());
  const CUptiResult result = host.add(pointers);
  if (result == CUPTI_ERROR_INVALID_PARAMETER || result == CUPTI_ERROR_INVALID_METRIC_NAME) {
    for (const auto& name : names) {  // which one: each alone, in a scratch configuration
      HostObject scratch(chip, nullptr);
      const CUptiResult alone = scratch.add({name.c_str()});
      if (alone == CUPTI_ERROR_INVALID_PARAMETER || alone == CUPTI_ERROR_INVALID_METRIC_NAME) {
        throw InputError(fmt::format("unknown metric '{}' for chip {} (metric names as in Nsight Compute, "
                                     "e.g. dram__bytes_read.sum)", name, chip));
      }
    }
  }
  check_profiler(result, "cuptiProfilerHostConfigAddMetrics");
}

int64_t passes_of(std::vector<uint8_t>& image) {
  CUpti_Profiler_Host_GetNumOfPasses_Params params{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  params.configImageSize = image.size();
  params.pConfigImage = image.data();
  check_profiler(cuptiProfilerHostGetNumOfPasses(&params), "cuptiProfilerHostGetNumOfPasses");
  return static_cast<int64_t>(params.numOfPasses);
}

std::vector<std::string> with_defaults(const std::vector<std::string>& extra) {
  std::vector<std::string> names = default_metrics();
  for (const auto& name : extra) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// Range profiler enabled on a context for the length of one collection.
class RangeProfiler {
 public:
  explicit RangeProfiler(CUcontext ctx) {
    CUpti_RangeProfiler_Enable_Params params{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    params.ctx = ctx;
    check_profiler(cuptiRangeProfilerEnable(&params), "cuptiRangeProfilerEnable");
    object_ = params.pRangeProfilerObject;
  }
  ~RangeProfiler() {
    if (started_) {  // unwinding from a failed pass: stop without throwing
      CUpti_RangeProfiler_Stop_Params params{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
      params.pRangeProfilerObject = object_;
      cuptiRangeProfilerStop(&params);
    }
    CUpti_RangeProfiler_Disable_Params params{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    params.pRangeProfilerObject = object_;
    cuptiRangeProfilerDisable(&params);
  }
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;
  CUpti_RangeProfiler_Object* get() const { return object_; }

  void start() {
    CUpti_RangeProfiler_Start_Params params{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    params.pRangeProfilerObject = object_;
    check_profiler(cuptiRangeProfilerStart(&params), "cuptiRangeProfilerStart");
    started_ = true;
  }
  // Returns true once every pass was submitted.
  bool stop() {
    started_ = false;
    CUpti_RangeProfiler_Stop_Params params{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    params.pRangeProfilerObject = object_;
    check_profiler(cuptiRangeProfilerStop(&params), "cuptiRangeProfilerStop");
    return params.isAllPassSubmitted != 0;
  }

 private:
  CUpti_RangeProfiler_Object* object_ = nullptr;
  bool started_ = false;
};

}  // namespace

const std::vector<std::string>& default_metrics() {
  static const std::vector<std::string> kMetrics(core::kProfilerMetrics.begin(), core::kProfilerMetrics.end());
  return kMetrics;
}

void validate_metrics(const std::vector<std::string>& names, const std::string& chip_name) {
  if (names.empty()) return;
  for (const auto& name : names) {
    if (name.starts_with(core::kSassOpMetricPrefix) && std::find(default_metrics().begin(), default_metrics().end(), name) == default_metrics().end()) {
      throw InputError(fmt::format(
          "metric '{}' cannot be collected: one {}* metric per session (CUPTI returns the first one's count "
          "for every other), and the default set has {}",
          name, core::kSassOpMetricPrefix, core::kMetricFfma));
    }
  }
  try {
    HostObject host(chip_name, nullptr);
    add_all(host, names, chip_name);
  } catch (const ProfilerFailure& failure) {
    throw EnvironmentError(fmt::format("cannot check metric names for chip {}: {} failed: {}", chip_name,
                                       failure.during, cupti_result_text(failure.result)));
  }
}

int64_t passes_needed(const std::vector<std::string>& names, const std::string& chip_name) {
  try {
    HostObject host(chip_name, nullptr);
    add_all(host, names, chip_name);
    auto image = host.config_image();
    return passes_of(image);
  } catch (const ProfilerFailure& failure) {
    throw EnvironmentError(fmt::format("cannot plan counter passes for chip {}: {} failed: {}", chip_name,
                                       failure.during, cupti_result_text(failure.result)));
  }
}

core::Counters unavailable_counters(int cupti_result, const std::string& during) {
  const auto result = static_cast<CUptiResult>(cupti_result);
  std::string fix;
  switch (result) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      fix = "GPU counters are restricted to administrators: run as root, or set the driver option "
            "NVreg_RestrictProfilingToAdminUsers=0 (then reload the driver)";
      break;
    case CUPTI_ERROR_HARDWARE_BUSY:
      fix = "another profiler holds the GPU counters (ncu, nsys, DCGM profiling): stop it, or pause "
            "DCGM with 'dcgmi profile --pause'";
      break;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_CHIP_NAME:
      fix = "this GPU, driver or configuration does not expose counters to CUPTI: measure on bare metal "
            "with a driver matching the CUDA toolkit";
      break;
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      fix = "another component of this process uses the deprecated CUPTI profiler API";
      break;
    default:
      fix = "re-run with --no-counters to time only; report the error if it persists";
      break;
  }
  core::Counters counters;
  counters.status = core::CounterStatus::unavailable;
  counters.reason = fmt::format("{} failed: {}; fix: {}", during, cupti_result_text(result), fix);
  return counters;
}

std::map<std::string, double> total_of(const std::vector<core::KernelCounters>& per_kernel) {
  std::map<std::string, double> sums, weighted, weights;
  for (const auto& kernel : per_kernel) {
    const auto duration = kernel.metrics.find(core::kMetricDuration);
    const double weight = duration != kernel.metrics.end() ? duration->second : 1.0;
    for (const auto& [name, value] : kernel.metrics) {
      if (name.ends_with(".sum")) {
        sums[name] += value;
      } else {
        weighted[name] += value * weight;
        weights[name] += weight;
      }
    }
  }
  for (const auto& [name, value] : weighted) {
    sums[name] = weights[name] > 0 ? value / weights[name] : 0;
  }
  return sums;
}

struct CounterProfiler::Config {
  std::vector<std::string> names;
  std::vector<const char*> name_pointers;
  std::unique_ptr<HostObject> host;
  std::vector<uint8_t> image;
  int64_t passes = 0;
};

CounterProfiler& CounterProfiler::instance() {
  // Never destroyed: at exit the CUDA runtime may already be torn down, and CUPTI's de-initialisation
  // after it can crash the process. The OS reclaims everything.
  static CounterProfiler* const profiler = new CounterProfiler();
  return *profiler;
}

CounterProfiler::CounterProfiler() {
  try {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    check_profiler(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaFree(nullptr), "cudaFree(0)");  // make the primary context current
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<size_t>(device);
    check_profiler(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
    chip_name_ = chip.pChipName;
    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = current_context();
    check_profiler(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
    availability_.resize(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability_.data();
    check_profiler(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
  } catch (const ProfilerFailure& failure) {
    init_failure_ = std::make_unique<core::Counters>(unavailable_counters(failure.result, failure.during));
  }
}

CounterProfiler::~CounterProfiler() {
  configs_.clear();
  if (!init_failure_) {
    CUpti_Profiler_DeInitialize_Params params{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    cuptiProfilerDeInitialize(&params);
  }
}

const CounterProfiler::Config& CounterProfiler::config_for(const std::vector<std::string>& metrics) {
  auto& slot = configs_[metrics];
  if (!slot) {
    auto config = std::make_unique<Config>();
    config->names = metrics;
    for (const auto& name : config->names) config->name_pointers.push_back(name.c_str());
    config->host = std::make_unique<HostObject>(chip_name_, availability_.data());
    add_all(*config->host, config->names, chip_name_);
    config->image = config->host->config_image();
    config->passes = passes_of(config->image);
    slot = std::move(config);
  }
  return *slot;
}

int64_t CounterProfiler::planned_passes(const std::vector<std::string>& extra_metrics) {
  if (init_failure_) return 0;
  try {
    return config_for(with_defaults(extra_metrics)).passes;
  } catch (const ProfilerFailure&) {
    return 0;
  }
}

core::Counters CounterProfiler::collect(const std::function<void()>& before_pass, const std::function<void()>& call,
                                        cudaStream_t stream, const std::vector<std::string>& extra_metrics,
                                        int before_launches, bool kernel_replay) {
  if (init_failure_) return *init_failure_;
  const auto t0 = std::chrono::steady_clock::now();
  struct ReplayScope {
    bool& flag;
    ~ReplayScope() { flag = false; }
  } replay_scope{force_kernel_replay_};
  force_kernel_replay_ = kernel_replay;
  const std::vector<std::string> metrics = with_defaults(extra_metrics);
  core::Counters counters;
  if (before_launches <= 0) {
    counters = session(metrics, before_pass, call, stream, kMaxRanges, true);
    core::mark_nothing_counted(counters);
  } else {
    // The flush once more after the call: what it writes back is the call's L2 tail.
    counters = session(metrics, [] {}, [&] {
      before_pass();
      call();
      before_pass();
    }, stream, kMaxRanges, true);
    const auto drop = static_cast<size_t>(before_launches);
    if (counters.status == core::CounterStatus::ok && counters.per_kernel.size() <= 2 * drop) {
      counters = unavailable_counters(CUPTI_ERROR_UNKNOWN, "attributing ranges");
      counters.reason = fmt::format("the call left no range between the {} of each L2 flush", drop);
    } else if (counters.status == core::CounterStatus::ok) {
      double tail = 0;
      bool tail_known = true;
      for (size_t i = counters.per_kernel.size() - drop; i < counters.per_kernel.size(); ++i) {
        const auto it = counters.per_kernel[i].metrics.find(core::kMetricDramWrite);
        if (it == counters.per_kernel[i].metrics.end()) tail_known = false;
        else tail += it->second;
      }
      if (tail_known) counters.dram_write_tail_bytes = tail;
      counters.per_kernel.resize(counters.per_kernel.size() - drop);
      counters.per_kernel.erase(counters.per_kernel.begin(), counters.per_kernel.begin() + static_cast<std::ptrdiff_t>(drop));
      for (size_t i = 0; i < counters.per_kernel.size(); ++i) {  // auto ranges are named by their index
        std::string& name = counters.per_kernel[i].kernel;
        if (name == std::to_string(i + drop)) name = std::to_string(i);
      }
      counters.total = total_of(counters.per_kernel);
    }
  }
  // A session of its own over several passes counts DRAM writes the call did not make (tens of MB on
  // the H200, where a batched session's ranges count none): its DRAM bytes are recounted in one pass.
  if (counters.status == core::CounterStatus::ok && counters.passes > 1) counters.dram_source = core::DramSource::replayed;
  counters.profiling_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return counters;
}

core::Counters CounterProfiler::session(const std::vector<std::string>& metrics,
                                        const std::function<void()>& before_pass,
                                        const std::function<void()>& call, cudaStream_t stream,
                                        size_t max_ranges, bool may_switch_replay, int* cupti_error) {
  core::Counters counters;
  try {
    const Config& config = config_for(metrics);
    if (!kernel_replay_chosen_ && !force_kernel_replay_) {
      try {
        counters = collect_with(true, config, before_pass, call, stream, max_ranges);
      } catch (const ProfilerFailure& failure) {
        // Privileges and a busy profiler fail kernel replay just the same: report them at once.
        if (failure.result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || failure.result == CUPTI_ERROR_HARDWARE_BUSY ||
            !may_switch_replay) {
          throw;
        }
        // Kernel replay next, for this session only: user replay is refused for some calls (on the
        // H200, a PyTorch call's, at cuptiRangeProfilerStop) and still works for the others.
        counters = collect_with(false, config, before_pass, call, stream, max_ranges);
        counters.reason = fmt::format("user replay refused ({} failed: {}); {}", failure.during,
                                      cupti_result_text(failure.result), counters.reason);
      }
    } else {
      counters = collect_with(false, config, before_pass, call, stream, max_ranges);
    }
  } catch (const ProfilerFailure& failure) {
    counters = unavailable_counters(failure.result, failure.during);
    if (cupti_error) *cupti_error = static_cast<int>(failure.result);
    if (failure.result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) init_failure_ = std::make_unique<core::Counters>(counters);
  }
  return counters;
}

std::vector<core::Counters> CounterProfiler::collect_batch(const std::vector<BatchPoint>& points, cudaStream_t stream,
                                                           const std::vector<std::string>& extra_metrics,
                                                           size_t max_ranges) {
  if (init_failure_) return std::vector<core::Counters>(points.size(), *init_failure_);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> metrics = with_defaults(extra_metrics);
  const bool marker_metric_asked = std::find(metrics.begin(), metrics.end(), kMarkerMetric) != metrics.end();
  if (!marker_metric_asked) metrics.push_back(kMarkerMetric);
  const auto pass = [&] {
    for (size_t i = 0; i < points.size(); ++i) {
      points[i].before_pass();
      if (!points[i].before_is_begin_marker) launch_range_marker(RangeMarker::begin, stream);
      points[i].call();
      // The next point's flush closes this one (and writes back its L2 tail); otherwise an end marker
      // does. The last point's flush runs once more for its tail, and the end marker closes the pass.
      const bool next_begins = i + 1 < points.size() && points[i + 1].before_is_begin_marker;
      if (i + 1 == points.size() && points[i].before_is_begin_marker) points[i].before_pass();
      if (!next_begins) launch_range_marker(RangeMarker::end, stream);
    }
  };
  core::Counters all;
  std::string why;
  int cupti_error = CUPTI_SUCCESS;
  try {
    // A refusal of user replay here is not taken as the process's: the points fall back to sessions of
    // their own below, which switch to kernel replay as they always did.
    all = session(metrics, [] {}, pass, stream, max_ranges, false, &cupti_error);
  } catch (const InputError& e) {  // a chip that does not know the marker metric
    why = e.what();
  }
  const double session_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::vector<core::Counters> results(points.size(), all);
  if (why.empty() && all.status != core::CounterStatus::ok) {
    if (cupti_error == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || cupti_error == CUPTI_ERROR_HARDWARE_BUSY) {
      // Sessions of their own would fail the same way: the same reason for every point.
      for (auto& counters : results) counters.profiling_ms = session_ms / static_cast<double>(points.size());
      return results;
    }
    why = all.reason;
  }
  std::optional<std::vector<std::vector<core::KernelCounters>>> split;
  std::vector<std::optional<core::KernelCounters>> tails;
  if (why.empty()) split = split_by_markers(all.per_kernel, points.size(), &why, &tails);
  if (!split) {
    // Correct counters matter more than fast ones: each point in a session of its own.
    const double share_ms = session_ms / static_cast<double>(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      results[i] = collect(points[i].before_pass, points[i].call, stream, extra_metrics);
      results[i].profiling_ms += share_ms;
      results[i].reason = fmt::format("batched session not used ({}): collected in a session of its own{}{}",
                                      why, results[i].reason.empty() ? "" : "; ", results[i].reason);
    }
    return results;
  }
  std::vector<double> point_gpu_ms(points.size(), 0);
  for (size_t i = 0; i < points.size(); ++i) {
    core::Counters& counters = results[i];
    counters.per_kernel = (*split)[i];
    counters.dram_write_tail_bytes.reset();
    if (i < tails.size() && tails[i]) {
      const auto it = tails[i]->metrics.find(core::kMetricDramWrite);
      if (it != tails[i]->metrics.end()) counters.dram_write_tail_bytes = it->second;
    }
    if (counters.session) counters.session->points = static_cast<int64_t>(points.size());
    if (!marker_metric_asked) {
      for (auto& range : counters.per_kernel) range.metrics.erase(kMarkerMetric);
    }
    counters.total = total_of(counters.per_kernel);
    core::mark_nothing_counted(counters);
    const auto duration = counters.total.find(core::kMetricDuration);
    if (duration != counters.total.end()) point_gpu_ms[i] = duration->second * 1e-6;  // [ns] -> [ms]
  }
  const std::vector<double> shares = share_profiling_ms(session_ms, all.passes, point_gpu_ms);
  for (size_t i = 0; i < points.size(); ++i) results[i].profiling_ms = shares[i];
  return results;
}

core::Counters CounterProfiler::collect_with(bool user_replay, const Config& config,
                                             const std::function<void()>& before_pass,
                                             const std::function<void()>& call, cudaStream_t stream,
                                             size_t max_ranges) {
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  RangeProfiler profiler(current_context());

  CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = profiler.get();
  size.pMetricNames = const_cast<const char**>(config.name_pointers.data());
  size.numMetrics = config.name_pointers.size();
  size.maxNumOfRanges = max_ranges;
  size.maxNumRangeTreeNodes = max_ranges;
  check_profiler(cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
  std::vector<uint8_t> data(size.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  init.pRangeProfilerObject = profiler.get();
  init.counterDataSize = data.size();
  init.pCounterData = data.data();
  check_profiler(cuptiRangeProfilerCounterDataImageInitialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");

  CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  set.pRangeProfilerObject = profiler.get();
  set.configSize = config.image.size();
  set.pConfig = config.image.data();
  set.counterDataImageSize = data.size();
  set.pCounterDataImage = data.data();
  set.range = CUPTI_AutoRange;
  set.replayMode = user_replay ? CUPTI_UserReplay : CUPTI_KernelReplay;
  set.maxRangesPerPass = max_ranges;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  check_profiler(cuptiRangeProfilerSetConfig(&set), "cuptiRangeProfilerSetConfig");

  // One pass per iteration: before_pass runs outside the profiled region (a warm-up call; empty when
  // collect() put the L2 flush inside it), the call inside it. Kernel replay submits every pass
  // within the one profiled call.
  // Where the session's time goes (Counters::session): each pass's set-up, running before_pass and the
  // call to completion, closing the pass; then decoding and evaluating.
  core::CounterSession timing;
  timing.points = 1;
  int64_t passes_run = 0;
  const int64_t max_iterations = 2 * config.passes + 2;
  bool all_submitted = false;
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  while (!all_submitted) {
    if (passes_run >= max_iterations) {
      throw ProfilerFailure{CUPTI_ERROR_UNKNOWN, fmt::format("replay: passes not complete after {}", passes_run)};
    }
    const auto t0 = Clock::now();
    before_pass();
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const auto t1 = Clock::now();
    profiler.start();
    const auto t2 = Clock::now();
    call();
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const auto t3 = Clock::now();
    all_submitted = profiler.stop();
    const auto t4 = Clock::now();
    timing.run_ms += ms(t0, t1) + ms(t2, t3);
    timing.pass_setup_ms += ms(t1, t2);
    timing.pass_close_ms += ms(t3, t4);
    ++passes_run;
  }

  const auto evaluate_start = Clock::now();
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = profiler.get();
  check_profiler(cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = data.data();
  info.counterDataImageSize = data.size();
  check_profiler(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");

  core::Counters counters;
  counters.status = core::CounterStatus::ok;
  counters.passes = user_replay ? passes_run : config.passes;
  std::vector<double> values(config.name_pointers.size());
  for (size_t range = 0; range < info.numTotalRanges; ++range) {
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params range_info{
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
    range_info.pCounterDataImage = data.data();
    range_info.counterDataImageSize = data.size();
    range_info.rangeIndex = range;
    range_info.rangeDelimiter = "/";
    check_profiler(cuptiRangeProfilerCounterDataGetRangeInfo(&range_info), "cuptiRangeProfilerCounterDataGetRangeInfo");
    CUpti_Profiler_Host_EvaluateToGpuValues_Params evaluate{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    evaluate.pHostObject = config.host->get();
    evaluate.pCounterDataImage = data.data();
    evaluate.counterDataImageSize = data.size();
    evaluate.rangeIndex = range;
    evaluate.ppMetricNames = const_cast<const char**>(config.name_pointers.data());
    evaluate.numMetrics = config.name_pointers.size();
    evaluate.pMetricValues = values.data();
    check_profiler(cuptiProfilerHostEvaluateToGpuValues(&evaluate), "cuptiProfilerHostEvaluateToGpuValues");
    core::KernelCounters kernel;
    kernel.kernel = range_info.rangeName ? range_info.rangeName : fmt::format("range {}", range);
    for (size_t m = 0; m < values.size(); ++m) kernel.metrics[config.names[m]] = values[m];
    counters.per_kernel.push_back(std::move(kernel));
  }
  counters.total = total_of(counters.per_kernel);
  timing.evaluate_ms = ms(evaluate_start, Clock::now());
  counters.session = timing;
  if (decode.numOfRangeDropped > 0) {
    counters.reason = fmt::format("{} kernel launches past the first {} were not profiled", decode.numOfRangeDropped,
                                  max_ranges);
  }
  if (!user_replay) {
    counters.reason += std::string(counters.reason.empty() ? "" : "; ") + "kernel replay";
  }
  counters.dram_source = user_replay ? core::DramSource::ranges : core::DramSource::replayed;
  return counters;
}

void CounterProfiler::recount_dram(core::Counters& counters, const std::function<void()>& before,
                                   const std::function<void()>& call, cudaStream_t stream, int before_launches) {
  if (counters.status != core::CounterStatus::ok || counters.dram_source != core::DramSource::replayed) return;
  const std::vector<std::string> metrics = {core::kMetricDramRead, core::kMetricDramWrite};
  const auto drop = static_cast<size_t>(std::max(before_launches, 0));
  std::string why;
  try {
    const Config& config = config_for(metrics);
    core::Counters single;
    if (config.passes != 1) {
      why = fmt::format("the DRAM counters need {} passes", config.passes);
    } else if (drop > 0) {
      single = collect_with(true, config, [] {}, [&] {
        before();
        call();
        before();
      }, stream, kMaxRanges);
    } else {
      single = collect_with(true, config, before, call, stream, kMaxRanges);
    }
    auto& ranges = single.per_kernel;
    if (why.empty() && ranges.size() != counters.per_kernel.size() + 2 * drop) {
      why = fmt::format("it recorded {} ranges for the call's {}", ranges.size() - std::min(ranges.size(), 2 * drop),
                        counters.per_kernel.size());
    }
    if (why.empty()) {
      std::optional<double> tail;
      if (drop > 0) {
        tail = 0.0;
        for (size_t i = ranges.size() - drop; i < ranges.size(); ++i) *tail += ranges[i].metrics[core::kMetricDramWrite];
      }
      for (size_t i = 0; i < counters.per_kernel.size(); ++i)
        for (const std::string& name : metrics) counters.per_kernel[i].metrics[name] = ranges[i + drop].metrics[name];
      counters.total = total_of(counters.per_kernel);
      if (tail) counters.dram_write_tail_bytes = tail;
      counters.dram_source = core::DramSource::single_pass;
      return;
    }
  } catch (const ProfilerFailure& failure) {
    why = fmt::format("{} failed: {}", failure.during, cupti_result_text(failure.result));
  }
  counters.reason += fmt::format("{}DRAM bytes from the replayed passes (a single-pass recount failed: {})",
                                 counters.reason.empty() ? "" : "; ", why);
}

}  // namespace attnprof::measure
