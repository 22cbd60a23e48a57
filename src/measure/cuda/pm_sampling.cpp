#include "measure/cuda/pm_sampling.hpp"

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/cuda/cuda_util.hpp"

// CUPTI parameter structs are initialised the documented way, `T params{T_STRUCT_SIZE}`, which
// value-initialises every other member.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace attnprof::measure {

namespace {

// The hardware buffer CUPTI fills while sampling runs, decoded after the call. Kineto's PM sampler
// takes 64 MiB for up to 1024 samples of a few metrics; a call here takes a few thousand samples of
// seven. An overflow is reported (the sample's `overflow`), never silent.
constexpr size_t kHardwareBufferBytes = size_t{64} << 20;
// An overflowed buffer's samples that span at least this share of the calls' time lost none of theirs.
constexpr double kCoveredShare = 0.9;
// The sampled window holds more than the call: the host's Start, the launch and the synchronisation
// before Stop. The counter data image has room for this much of it beyond the calls [us].
constexpr double kWindowSlackUs = 2000;
// Decoding refills the counter data image when it is full; a window never needs more rounds.
constexpr int kMaxDecodeRounds = 64;
constexpr size_t kMinImageSamples = 256;
// A median gap between sample timestamps this far from the interval asked for replaces it.
constexpr double kIntervalTolerance = 0.1;

// What to do about a refusal, where there is something to do.
std::string fix_for(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "; GPU counters are restricted to administrators: run as root, or set the driver option "
             "NVreg_RestrictProfilingToAdminUsers=0";
    case CUPTI_ERROR_HARDWARE_BUSY:
      return "; another profiler holds the GPU counters (ncu, nsys, DCGM profiling): stop it";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
      return "; this GPU or its configuration does not expose PM sampling";
    default:
      return "";
  }
}

// A PM sampling host object (the counter configuration for one chip); deinitialised on destruction.
class HostObject {
 public:
  HostObject(const std::string& chip, const uint8_t* availability) {
    CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability;
    check_cupti(cuptiProfilerHostInitialize(&p), "cuptiProfilerHostInitialize");
    object_ = p.pHostObject;
  }
  ~HostObject() {
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = object_;
    cuptiProfilerHostDeinitialize(&p);
  }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;
  CUpti_Profiler_Host_Object* get() const { return object_; }

  CUptiResult add(std::vector<const char*> names) {
    CUpti_Profiler_Host_ConfigAddMetrics_Params p{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    p.pHostObject = object_;
    p.ppMetricNames = names.data();
    p.numMetrics = names.size();
    return cuptiProfilerHostConfigAddMetrics(&p);
  }

  std::vector<uint8_t> config_image() {
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = object_;
    check_cupti(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
    std::vector<uint8_t> image(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params get{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    get.pHostObject = object_;
    get.configImageSize = image.size();
    get.pConfigImage = image.data();
    check_cupti(cuptiProfilerHostGetConfigImage(&get), "cuptiProfilerHostGetConfigImage");
    return image;
  }

 private:
  CUpti_Profiler_Host_Object* object_ = nullptr;
};

int64_t passes_of(std::vector<uint8_t>& image) {
  CUpti_Profiler_Host_GetNumOfPasses_Params p{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  p.configImageSize = image.size();
  p.pConfigImage = image.data();
  check_cupti(cuptiProfilerHostGetNumOfPasses(&p), "cuptiProfilerHostGetNumOfPasses");
  return static_cast<int64_t>(p.numOfPasses);
}

// The configuration of the timeline's metrics: the host object (which evaluates the samples) and its
// config image.
struct Config {
  std::vector<const char*> names;  // point into core::kTimelineMetrics
  std::vector<std::string> labels;
  std::unique_ptr<HostObject> host;
  std::vector<uint8_t> image;
  int64_t passes = 0;
};

// All of kTimelineMetrics at once; where the chip refuses them, or they need more than one pass, each
// metric in order is kept if the set stays valid and one pass with it.
std::unique_ptr<Config> configure(const std::string& chip, const uint8_t* availability) {
  const auto attempt = [&](const std::vector<const char*>& names) -> std::unique_ptr<Config> {
    auto c = std::make_unique<Config>();
    c->host = std::make_unique<HostObject>(chip, availability);
    if (c->host->add(names) != CUPTI_SUCCESS) return nullptr;
    c->image = c->host->config_image();
    c->passes = passes_of(c->image);
    c->names = names;
    return c;
  };
  std::vector<const char*> all;
  for (const auto& m : core::kTimelineMetrics) all.push_back(m.name);
  std::unique_ptr<Config> config = attempt(all);
  if (config == nullptr || config->passes != 1) {
    std::vector<const char*> kept;
    for (const char* name : all) {
      std::vector<const char*> with = kept;
      with.push_back(name);
      if (auto c = attempt(with); c != nullptr && c->passes == 1) kept = std::move(with);
    }
    if (kept.empty())
      throw CuptiFailure{CUPTI_ERROR_NOT_SUPPORTED,
                         fmt::format("chip {} has none of the timeline's metrics in one PM sampling pass", chip)};
    config = attempt(kept);
    if (config == nullptr) throw CuptiFailure{CUPTI_ERROR_UNKNOWN, "cuptiProfilerHostConfigAddMetrics: refused a set it took"};
  }
  for (const char* name : config->names)
    for (const auto& m : core::kTimelineMetrics)
      if (m.name == name) config->labels.emplace_back(m.label);
  return config;
}

// Per process: the profiler initialised, the chip's name and counter availability, the configuration.
// Never torn down (as the counter profiler): CUPTI's de-initialisation at exit, after the CUDA
// runtime's, can crash the process.
struct Session {
  int device = -1;
  std::string failure;  // why it could not be set up: every later point says so
  std::string chip;
  std::vector<uint8_t> availability;
  std::unique_ptr<Config> config;
  bool sampled = false;  // a point was sampled (and PM sampling disabled after it) in this process
};

void initialize_profiler() {
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  check_cupti(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
}

// Throws with what keeps PM sampling from this device (vGPU, confidential computing, ...), when CUPTI
// can tell; a device CUPTI cannot judge goes on to the calls that will say.
void check_device_support(int device) {
  CUpti_Profiler_DeviceSupported_Params p{CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
  p.cuDevice = static_cast<CUdevice>(device);  // a device's handle is its ordinal
  p.api = CUPTI_PROFILER_PM_SAMPLING;
  if (cuptiProfilerDeviceSupported(&p) != CUPTI_SUCCESS || p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return;
  std::vector<std::string> why;
  const auto add = [&](CUpti_Profiler_Support_Level level, const char* what) {
    if (level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED) why.push_back(fmt::format("{} unsupported", what));
    if (level == CUPTI_PROFILER_CONFIGURATION_DISABLED) why.push_back(fmt::format("{} disabled", what));
  };
  add(p.architecture, "architecture");
  add(p.sli, "SLI");
  add(p.vGpu, "vGPU profiling");
  add(p.confidentialCompute, "confidential computing");
  add(p.cmp, "CMP");
  add(p.wsl, "WSL");
  throw CuptiFailure{CUPTI_ERROR_NOT_SUPPORTED,
                     fmt::format("cuptiProfilerDeviceSupported: PM sampling not supported on this device ({})",
                                 why.empty() ? "no reason given" : fmt::format("{}", fmt::join(why, ", ")))};
}

Session& session(int device) {
  static Session s;
  if (s.device == device || !s.failure.empty()) return s;
  if (s.device >= 0) {
    s.failure = "PM sampling follows one device per process";
    return s;
  }
  s.device = device;
  try {
    initialize_profiler();
    check_device_support(device);
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<size_t>(device);
    check_cupti(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
    s.chip = chip.pChipName;
    CUpti_PmSampling_GetCounterAvailability_Params avail{CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.deviceIndex = static_cast<size_t>(device);
    check_cupti(cuptiPmSamplingGetCounterAvailability(&avail), "cuptiPmSamplingGetCounterAvailability");
    s.availability.resize(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = s.availability.data();
    check_cupti(cuptiPmSamplingGetCounterAvailability(&avail), "cuptiPmSamplingGetCounterAvailability");
    s.config = configure(s.chip, s.availability.data());
  } catch (const CuptiFailure& f) {
    s.failure = f.what + fix_for(f.result);
  }
  return s;
}

// PM sampling enabled on a device for one point, disabled on every way out.
class Enabled {
 public:
  explicit Enabled(int device) {
    CUpti_PmSampling_Enable_Params p{CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
    p.deviceIndex = static_cast<size_t>(device);
    check_cupti(cuptiPmSamplingEnable(&p), "cuptiPmSamplingEnable");
    object_ = p.pPmSamplingObject;
  }
  ~Enabled() {
    CUpti_PmSampling_Disable_Params p{CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
    p.pPmSamplingObject = object_;
    cuptiPmSamplingDisable(&p);
  }
  Enabled(const Enabled&) = delete;
  Enabled& operator=(const Enabled&) = delete;
  CUpti_PmSampling_Object* get() const { return object_; }

 private:
  CUpti_PmSampling_Object* object_ = nullptr;
};

// Enables PM sampling for a point. A later point of the process enables it again after the previous
// one disabled it; should CUPTI refuse that (disabling is reported to finalise CUPTI's profiler state),
// the profiler is initialised again and the enable retried once.
std::unique_ptr<Enabled> enable(Session& s) {
  try {
    return std::make_unique<Enabled>(s.device);
  } catch (const CuptiFailure&) {
    if (!s.sampled) throw;
  }
  CUpti_Profiler_DeInitialize_Params deinit{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
  cuptiProfilerDeInitialize(&deinit);
  initialize_profiler();
  return std::make_unique<Enabled>(s.device);
}

void initialize_image(CUpti_PmSampling_Object* object, std::vector<uint8_t>& image) {
  CUpti_PmSampling_CounterDataImage_Initialize_Params p{CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  p.pPmSamplingObject = object;
  p.counterDataSize = image.size();
  p.pCounterData = image.data();
  check_cupti(cuptiPmSamplingCounterDataImageInitialize(&p), "cuptiPmSamplingCounterDataImageInitialize");
}

// The samples of one decoded counter data image, appended: start times [ns] and one value per metric.
void evaluate(const Config& config, CUpti_PmSampling_Object* object, const std::vector<uint8_t>& image,
              std::vector<uint64_t>& starts, std::vector<std::vector<double>>& values) {
  CUpti_PmSampling_GetCounterDataInfo_Params info{CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = image.data();
  info.counterDataImageSize = image.size();
  check_cupti(cuptiPmSamplingGetCounterDataInfo(&info), "cuptiPmSamplingGetCounterDataInfo");
  std::vector<double> row(config.names.size());
  for (size_t i = 0; i < info.numCompletedSamples; ++i) {
    CUpti_PmSampling_CounterData_GetSampleInfo_Params sample{CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
    sample.pPmSamplingObject = object;
    sample.pCounterDataImage = image.data();
    sample.counterDataImageSize = image.size();
    sample.sampleIndex = i;
    check_cupti(cuptiPmSamplingCounterDataGetSampleInfo(&sample), "cuptiPmSamplingCounterDataGetSampleInfo");
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    eval.pHostObject = config.host->get();
    eval.pCounterDataImage = image.data();
    eval.counterDataImageSize = image.size();
    eval.rangeIndex = i;
    eval.ppMetricNames = const_cast<const char**>(config.names.data());
    eval.numMetrics = config.names.size();
    eval.pMetricValues = row.data();
    check_cupti(cuptiProfilerHostEvaluateToGpuValues(&eval), "cuptiProfilerHostEvaluateToGpuValues");
    starts.push_back(sample.startTimestamp);
    values.push_back(row);
  }
}

}  // namespace

TimelinePlan plan_timeline(double call_us) {
  const double call_ns = std::max(call_us, 0.0) * 1e3;
  TimelinePlan plan;
  plan.interval_ns = std::clamp(static_cast<int64_t>(std::llround(call_ns / static_cast<double>(kTargetSamplesPerCall))),
                                kMinIntervalNs, kMaxIntervalNs);
  const double per_call = call_ns / static_cast<double>(plan.interval_ns);
  if (per_call < static_cast<double>(kMinSamplesPerCall)) {
    const double needed = per_call > 0 ? std::ceil(static_cast<double>(kMinSamplesPerCall) / per_call)
                                       : static_cast<double>(kMaxCalls);
    plan.calls = std::clamp(static_cast<int64_t>(needed), int64_t{1}, kMaxCalls);
  }
  return plan;
}

TimelineConfigCheck check_timeline_metrics(const std::string& chip_name) {
  try {
    const std::unique_ptr<Config> config = configure(chip_name, nullptr);
    TimelineConfigCheck out;
    for (const char* name : config->names) out.metrics.emplace_back(name);
    out.passes = config->passes;
    return out;
  } catch (const CuptiFailure& f) {
    throw std::runtime_error(f.what);
  }
}

core::Timeline sample_timeline(const std::function<void()>& before, const std::function<void()>& call,
                               const std::function<void()>& between, cudaStream_t stream) {
  const auto t0 = std::chrono::steady_clock::now();
  core::Timeline out;
  try {
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    {
      Event begin, end;
      before();
      begin.record(stream);
      call();
      end.record(stream);
      out.call_us = elapsed_ms(begin, end) * 1e3;
    }
    const TimelinePlan plan = plan_timeline(out.call_us);
    out.interval_ns = plan.interval_ns;
    out.calls = plan.calls;

    Session& s = session(device);
    if (!s.failure.empty()) throw CuptiFailure{CUPTI_SUCCESS, s.failure};
    const Config& config = *s.config;
    const std::unique_ptr<Enabled> enabled = enable(s);
    s.sampled = true;

    CUpti_PmSampling_SetConfig_Params set{CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
    set.pPmSamplingObject = enabled->get();
    set.configSize = config.image.size();
    set.pConfig = config.image.data();
    set.hardwareBufferSize = kHardwareBufferBytes;
    set.samplingInterval = static_cast<uint64_t>(plan.interval_ns);
    set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    check_cupti(cuptiPmSamplingSetConfig(&set), "cuptiPmSamplingSetConfig");

    const double window_ns = (static_cast<double>(plan.calls) * out.call_us + kWindowSlackUs) * 1e3;
    CUpti_PmSampling_GetCounterDataSize_Params size{CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
    size.pPmSamplingObject = enabled->get();
    size.pMetricNames = const_cast<const char**>(config.names.data());
    size.numMetrics = config.names.size();
    size.maxSamples = static_cast<uint32_t>(
        std::max<double>(kMinImageSamples, std::ceil(window_ns / static_cast<double>(plan.interval_ns))));
    check_cupti(cuptiPmSamplingGetCounterDataSize(&size), "cuptiPmSamplingGetCounterDataSize");
    std::vector<uint8_t> image(size.counterDataSize);
    initialize_image(enabled->get(), image);

    CUpti_PmSampling_Start_Params start{CUpti_PmSampling_Start_Params_STRUCT_SIZE};
    start.pPmSamplingObject = enabled->get();
    CUpti_PmSampling_Stop_Params stop{CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
    stop.pPmSamplingObject = enabled->get();
    before();
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    check_cupti(cuptiPmSamplingStart(&start), "cuptiPmSamplingStart");
    for (int64_t c = 0; c < plan.calls; ++c) {
      if (c > 0 && between) between();
      call();
    }
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

    // Decoded once while sampling still runs (the call is over: what follows is idle), and again after
    // Stop for the records still in the hardware buffer. The image is emptied after each read.
    std::vector<uint64_t> starts;
    std::vector<std::vector<double>> rows;
    bool overflow = false;
    const auto decode_all = [&] {
      for (int round = 0; round < kMaxDecodeRounds; ++round) {
        CUpti_PmSampling_DecodeData_Params decode{CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
        decode.pPmSamplingObject = enabled->get();
        decode.pCounterDataImage = image.data();
        decode.counterDataImageSize = image.size();
        const CUptiResult r = cuptiPmSamplingDecodeData(&decode);
        const bool overflowed = r == CUPTI_ERROR_OUT_OF_MEMORY || decode.overflow != 0;  // records were lost
        if (!overflowed) check_cupti(r, "cuptiPmSamplingDecodeData");
        overflow = overflow || overflowed;
        evaluate(config, enabled->get(), image, starts, rows);
        initialize_image(enabled->get(), image);
        if (overflowed || decode.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) return;
      }
    };
    std::vector<std::string> notes;
    decode_all();
    check_cupti(cuptiPmSamplingStop(&stop), "cuptiPmSamplingStop");
    try {
      decode_all();
    } catch (const CuptiFailure& f) {
      if (starts.empty()) throw;
      notes.push_back(fmt::format("decoding after cuptiPmSamplingStop failed ({}): the samples decoded before it are "
                                  "kept", f.what));
    }
    out.samples_taken = static_cast<int64_t>(starts.size());

    for (size_t m = 0; m < config.names.size(); ++m)
      out.series.push_back(core::TimelineSeries{.metric = config.names[m], .label = config.labels[m]});
    for (size_t i = 0; i < starts.size(); ++i) {
      out.t_us.push_back(static_cast<double>(starts[i] - starts.front()) * 1e-3);
      for (size_t m = 0; m < rows[i].size(); ++m) out.series[m].values.push_back(rows[i][m]);
    }
    // The interval as the timestamps show it, where it differs from the one asked for.
    if (starts.size() > 2) {
      std::vector<uint64_t> deltas;
      for (size_t i = 1; i < starts.size(); ++i) deltas.push_back(starts[i] - starts[i - 1]);
      std::nth_element(deltas.begin(), deltas.begin() + static_cast<std::ptrdiff_t>(deltas.size() / 2), deltas.end());
      const auto measured = static_cast<int64_t>(deltas[deltas.size() / 2]);
      if (std::abs(static_cast<double>(measured - plan.interval_ns)) > kIntervalTolerance * static_cast<double>(plan.interval_ns)) {
        notes.push_back(fmt::format("samples came every {} ns, {} ns asked for", measured, plan.interval_ns));
        out.interval_ns = measured;
      }
    }
    core::drop_idle_edges(out);
    core::merge_samples(out);

    if (plan.calls > 1)
      notes.push_back(fmt::format("{} calls back to back (one call is {:.1f} us, {:.0f} intervals of {} ns); "
                                  "from the second on L2 is warm",
                                  plan.calls, out.call_us, out.call_us * 1e3 / static_cast<double>(plan.interval_ns),
                                  plan.interval_ns));
    // The hardware keeps sampling the idle GPU until Stop and may overflow then: only an overflow whose
    // samples fall short of the calls' time lost any of them.
    const double span_us = out.t_us.empty() ? 0 : out.t_us.back() - out.t_us.front() +
                                                       static_cast<double>(out.interval_ns) * 1e-3;
    if (overflow && span_us < kCoveredShare * out.call_us * static_cast<double>(plan.calls))
      notes.push_back(fmt::format("the hardware buffer overflowed: the samples end after {:.1f} us of the calls' "
                                  "{:.1f} us", span_us, out.call_us * static_cast<double>(plan.calls)));
    if (config.names.size() < core::kTimelineMetrics.size())
      notes.push_back(fmt::format("{} of the {} metrics fit one pass on {}", config.names.size(),
                                  core::kTimelineMetrics.size(), s.chip));
    if (out.t_us.empty()) {
      out.status = core::SamplingStatus::unavailable;
      notes.insert(notes.begin(), fmt::format("none of the {} samples saw the GPU busy", out.samples_taken));
    }
    for (const auto& note : notes) out.reason += (out.reason.empty() ? "" : "; ") + note;
  } catch (const CuptiFailure& f) {
    const double call_us = out.call_us;
    out = core::Timeline{};
    out.call_us = call_us;
    out.status = core::SamplingStatus::unavailable;
    out.reason = fmt::format("PM sampling refused ({}{}); timing, counters and warp states are unaffected", f.what,
                             fix_for(f.result));
  }
  out.profiling_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace attnprof::measure
