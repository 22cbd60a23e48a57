#include "measure/cuda/pc_sampling.hpp"

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "measure/cuda/cuda_util.hpp"

namespace attnprof::measure {

namespace {

// PCs one GetData call can return; a call with more leaves them for the next (remainingNumPcs).
constexpr size_t kPcsPerRead = 4096;
// The sampling period's range (2^5 .. 2^31 cycles: cupti_pcsampling.h), kept where a call of a few us
// still gets thousands of samples and a long one does not fill the hardware buffer.
constexpr int kMinPeriodLog2 = 5;
constexpr int kMaxPeriodLog2 = 24;

// Every cubin loaded since watch_module_loads(), by CUPTI's CRC (the key PC samples carry).
struct Modules {
  std::mutex mutex;
  std::map<uint64_t, std::vector<char>> cubins;
  bool watching = false;
  CUpti_SubscriberHandle subscriber = nullptr;
};
Modules& modules() {
  static Modules m;
  return m;
}

void CUPTIAPI on_resource(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE || id != CUPTI_CBID_RESOURCE_MODULE_LOADED) return;
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  const auto* module = static_cast<const CUpti_ModuleResourceData*>(resource->resourceDescriptor);
  if (module == nullptr || module->pCubin == nullptr || module->cubinSize == 0) return;
  CUpti_GetCubinCrcParams crc{};
  crc.size = CUpti_GetCubinCrcParamsSize;
  crc.cubinSize = module->cubinSize;
  crc.cubin = module->pCubin;
  if (cuptiGetCubinCrc(&crc) != CUPTI_SUCCESS) return;
  Modules& m = modules();
  const std::lock_guard lock(m.mutex);
  if (!m.cubins.contains(crc.cubinCrc))
    m.cubins.emplace(crc.cubinCrc, std::vector<char>(module->pCubin, module->pCubin + module->cubinSize));
}

// Source file and line of one SASS offset, when its cubin was seen and carries line info.
struct SourceLocation {
  std::string file;
  int64_t line = 0;
};
SourceLocation locate(uint64_t crc, const char* function, uint64_t pc_offset) {
  Modules& m = modules();
  const std::lock_guard lock(m.mutex);
  const auto it = m.cubins.find(crc);
  if (it == m.cubins.end() || function == nullptr) return {};
  CUpti_GetSassToSourceCorrelationParams p{};
  p.size = CUpti_GetSassToSourceCorrelationParamsSize;
  p.cubin = it->second.data();
  p.cubinSize = it->second.size();
  p.functionName = function;
  p.pcOffset = pc_offset;
  if (cuptiGetSassToSourceCorrelation(&p) != CUPTI_SUCCESS) return {};
  SourceLocation out;
  if (p.fileName != nullptr && p.lineNumber > 0) {
    const std::string dir = p.dirName != nullptr ? p.dirName : "";
    const std::string file = p.fileName;
    out.file = dir.empty() || file.starts_with('/') ? file : dir + "/" + file;
    out.line = p.lineNumber;
  }
  std::free(p.fileName);
  std::free(p.dirName);
  return out;
}

// The stall reasons this device samples: CUPTI's index -> short name ("" for the "_not_issued"
// counts, which repeat a subset of the same samples).
std::map<uint32_t, std::string> stall_reasons(CUcontext ctx, std::vector<uint32_t>& indices) {
  size_t count = 0;
  CUpti_PCSamplingGetNumStallReasonsParams num{};
  num.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  num.ctx = ctx;
  num.numStallReasons = &count;
  check_cupti(cuptiPCSamplingGetNumStallReasons(&num), "cuptiPCSamplingGetNumStallReasons");
  indices.assign(count, 0);
  std::vector<std::vector<char>> storage(count, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, '\0'));
  std::vector<char*> names(count);
  for (size_t i = 0; i < count; ++i) names[i] = storage[i].data();
  CUpti_PCSamplingGetStallReasonsParams get{};
  get.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  get.ctx = ctx;
  get.numStallReasons = count;
  get.stallReasonIndex = indices.data();
  get.stallReasons = names.data();
  check_cupti(cuptiPCSamplingGetStallReasons(&get), "cuptiPCSamplingGetStallReasons");
  std::map<uint32_t, std::string> out;
  for (size_t i = 0; i < count; ++i) out[indices[i]] = core::stall_reason_name(names[i]).value_or("");
  return out;
}

// A parsed-data buffer CUPTI fills: kPcsPerRead PCs of up to `reasons` stall reasons each.
class SampleBuffer {
 public:
  explicit SampleBuffer(size_t reasons) : pcs_(kPcsPerRead), reasons_(kPcsPerRead * std::max<size_t>(reasons, 1)) {
    data_.size = sizeof(CUpti_PCSamplingData);
    data_.collectNumPcs = kPcsPerRead;
    data_.pPcData = pcs_.data();
    for (size_t i = 0; i < pcs_.size(); ++i) {
      pcs_[i].size = sizeof(CUpti_PCSamplingPCData);
      pcs_[i].stallReason = &reasons_[i * std::max<size_t>(reasons, 1)];
    }
  }
  CUpti_PCSamplingData* get() { return &data_; }

 private:
  std::vector<CUpti_PCSamplingPCData> pcs_;
  std::vector<CUpti_PCSamplingStallReason> reasons_;
  CUpti_PCSamplingData data_{};
};

// PC sampling, enabled once per process and left enabled (enable_stall_sampling() says why). The
// buffers are never freed: CUPTI may write into the configured one when it tears down at exit.
struct Enabled {
  CUcontext ctx = nullptr;
  std::map<uint32_t, std::string> names;  // stall reason index -> short name ("" for counts left out)
  std::vector<uint32_t> indices;
  SampleBuffer* buffer = nullptr;         // what GetData fills
  SampleBuffer* at_disable = nullptr;     // the configured buffer
  std::string failure;                    // why enabling failed: every later point says so
};

Enabled& enabled(CUcontext ctx) {
  static Enabled e;
  if (e.ctx == ctx || !e.failure.empty()) return e;
  if (e.ctx != nullptr) {
    e.failure = "warp-state sampling follows one CUDA context per process";
    return e;
  }
  try {
    CUpti_PCSamplingEnableParams p{};
    p.size = CUpti_PCSamplingEnableParamsSize;
    p.ctx = ctx;
    check_cupti(cuptiPCSamplingEnable(&p), "cuptiPCSamplingEnable");
    e.ctx = ctx;
    e.names = stall_reasons(ctx, e.indices);
    e.buffer = new SampleBuffer(e.indices.size());
    e.at_disable = new SampleBuffer(e.indices.size());
    std::vector<CUpti_PCSamplingConfigurationInfo> config(4);
    config[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    config[0].attributeData.stallReasonData.stallReasonCount = e.indices.size();
    config[0].attributeData.stallReasonData.pStallReasonIndex = e.indices.data();
    config[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    config[1].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    config[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
    config[2].attributeData.enableStartStopControlData.enableStartStopControl = 1;
    config[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    config[3].attributeData.samplingDataBufferData.samplingDataBuffer = e.at_disable->get();
    CUpti_PCSamplingConfigurationInfoParams set{};
    set.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    set.ctx = ctx;
    set.numAttributes = config.size();
    set.pPCSamplingConfigurationInfo = config.data();
    check_cupti(cuptiPCSamplingSetConfigurationAttribute(&set), "cuptiPCSamplingSetConfigurationAttribute");
  } catch (const CuptiFailure& f) {
    e.failure = f.what;
  }
  return e;
}

void set_period(CUcontext ctx, int period_log2) {
  CUpti_PCSamplingConfigurationInfo period{};
  period.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  period.attributeData.samplingPeriodData.samplingPeriod = static_cast<uint32_t>(period_log2);
  CUpti_PCSamplingConfigurationInfoParams set{};
  set.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  set.ctx = ctx;
  set.numAttributes = 1;
  set.pPCSamplingConfigurationInfo = &period;
  check_cupti(cuptiPCSamplingSetConfigurationAttribute(&set), "cuptiPCSamplingSetConfigurationAttribute(period)");
}

// The sampling period for a call of `call_us`: about target/4 samples per call at `sm_count` SMs.
int period_log2_for(double call_us, double sm_mhz, int sm_count, int64_t target_samples) {
  const double cycles = std::max(call_us, 1.0) * std::max(sm_mhz, 1.0) * std::max(sm_count, 1);
  const double per_call = std::max(static_cast<double>(target_samples) / 4.0, 1.0);
  const int p = static_cast<int>(std::ceil(std::log2(std::max(cycles / per_call, 1.0))));
  return std::clamp(p, kMinPeriodLog2, kMaxPeriodLog2);
}

struct PcKey {
  std::string function;
  uint64_t pc_offset;
  uint64_t crc;
  auto operator<=>(const PcKey&) const = default;
};

// Keeps every cubin loaded from now on (for source lines). Idempotent; a failure leaves the samples
// with SASS offsets alone.
void watch_module_loads() {
  Modules& m = modules();
  const std::lock_guard lock(m.mutex);
  if (m.watching) return;
  if (cuptiSubscribe(&m.subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_resource), nullptr) != CUPTI_SUCCESS) return;
  if (cuptiEnableCallback(1, m.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED) != CUPTI_SUCCESS) {
    cuptiUnsubscribe(m.subscriber);
    return;
  }
  m.watching = true;
}

}  // namespace

std::string enable_stall_sampling() {
  watch_module_loads();
  if (cudaFree(nullptr) != cudaSuccess) return "no CUDA context";  // creates the primary context
  const CUcontext ctx = current_context();
  if (ctx == nullptr) return "no current CUDA context";
  return enabled(ctx).failure;
}

core::Stalls sample_stalls(const std::function<void()>& before, const std::function<void()>& call,
                           cudaStream_t stream, double call_us, int max_calls, int64_t target_samples) {
  const auto t0 = std::chrono::steady_clock::now();
  core::Stalls out;
  try {
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    CUcontext ctx = current_context();
    if (ctx == nullptr) throw CuptiFailure{CUPTI_ERROR_UNKNOWN, "no current CUDA context"};
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    const int sm_count = device_attribute(cudaDevAttrMultiProcessorCount, device);
    const int clock_khz = device_attribute(cudaDevAttrClockRate, device);
    if (call_us <= 0) {
      Event begin, end;
      before();
      begin.record(stream);
      call();
      end.record(stream);
      call_us = elapsed_ms(begin, end) * 1e3;
    }
    out.period_log2 = period_log2_for(call_us, clock_khz * 1e-3, sm_count, target_samples);

    Enabled& e = enabled(ctx);
    if (!e.failure.empty()) throw CuptiFailure{CUPTI_ERROR_UNKNOWN, e.failure};
    set_period(ctx, static_cast<int>(out.period_log2));
    const std::map<uint32_t, std::string>& names = e.names;
    SampleBuffer* buffer = e.buffer;

    std::map<PcKey, std::map<std::string, int64_t>> by_pc;
    const auto drain = [&](CUpti_PCSamplingData& data) {
      out.samples += static_cast<int64_t>(data.totalSamples);
      out.dropped_samples += static_cast<int64_t>(data.droppedSamples);
      for (size_t i = 0; i < data.totalNumPcs; ++i) {
        CUpti_PCSamplingPCData& pc = data.pPcData[i];
        auto& reasons = by_pc[{pc.functionName ? pc.functionName : "?", pc.pcOffset, pc.cubinCrc}];
        for (size_t r = 0; r < pc.stallReasonCount; ++r) {
          const auto name = names.find(pc.stallReason[r].pcSamplingStallReasonIndex);
          if (name != names.end() && !name->second.empty()) reasons[name->second] += pc.stallReason[r].samples;
        }
      }
      data.totalNumPcs = 0;
      data.totalSamples = 0;
      data.droppedSamples = 0;
    };
    const auto read = [&] {
      for (;;) {
        CUpti_PCSamplingGetDataParams get{};
        get.size = CUpti_PCSamplingGetDataParamsSize;
        get.ctx = ctx;
        get.pcSamplingData = buffer->get();
        const CUptiResult r = cuptiPCSamplingGetData(&get);
        if (buffer->get()->hardwareBufferFull) out.reason = "the hardware buffer filled: samples were dropped";
        check_cupti(r, "cuptiPCSamplingGetData");
        const size_t remaining = buffer->get()->remainingNumPcs;
        drain(*buffer->get());
        if (remaining == 0) break;
      }
    };
    CUpti_PCSamplingStartParams start{};
    start.size = CUpti_PCSamplingStartParamsSize;
    start.ctx = ctx;
    CUpti_PCSamplingStopParams stop{};
    stop.size = CUpti_PCSamplingStopParamsSize;
    stop.ctx = ctx;
    while (out.calls < max_calls && out.samples < target_samples) {
      before();
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      check_cupti(cuptiPCSamplingStart(&start), "cuptiPCSamplingStart");
      call();
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      check_cupti(cuptiPCSamplingStop(&stop), "cuptiPCSamplingStop");
      ++out.calls;
      read();
    }

    std::vector<core::PcSample> samples;
    samples.reserve(by_pc.size());
    for (auto& [key, reasons] : by_pc) {
      core::PcSample s;
      s.function = demangle(key.function.c_str());
      s.pc_offset = key.pc_offset;
      const SourceLocation where = locate(key.crc, key.function.c_str(), key.pc_offset);
      s.file = where.file;
      s.line = where.line;
      s.reasons = std::move(reasons);
      samples.push_back(std::move(s));
    }
    out.per_kernel = core::aggregate_stalls(samples);
    out.status = out.per_kernel.empty() ? core::SamplingStatus::unavailable : core::SamplingStatus::ok;
    if (out.samples == 0) {
      out.reason = "no warp samples: the call ran too briefly for the sampling period";
    } else if (out.per_kernel.empty()) {
      out.reason = "the samples name no instruction: the call's kernels were loaded before sampling was enabled "
                   "(enable it before the first launch: sweep --stalls does)";
    }
  } catch (const CuptiFailure& e) {
    out = core::Stalls{};
    out.status = core::SamplingStatus::unavailable;
    out.reason = fmt::format("warp-state sampling refused ({}); counters and timing are unaffected", e.what);
  }
  out.profiling_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace attnprof::measure
