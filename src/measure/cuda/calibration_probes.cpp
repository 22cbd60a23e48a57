// Each probe of the known-answer set as a script: its buffers, one call (a single launch from
// probe_kernels.hpp), its analytic cost (the bytes and FLOPs the probe must do), then the CUDA
// backend's measurement: launch records, event timing (graph replay under 20 us), the SM clock,
// CUPTI counters, occupancy.
#include "measure/cuda/calibration_probes.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/calibration.hpp"
#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "core/stats.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/cupti_profiler.hpp"
#include "measure/cuda/launch_records.hpp"
#include "measure/cuda/occupancy.hpp"
#include "measure/cuda/probe_kernels.hpp"
#include "measure/cuda/timer.hpp"

namespace attnprof::measure {

namespace {

constexpr size_t kHbmCopyBytes = size_t{1} << 30;   // each way: 1 GiB, far beyond L2
constexpr int kL2CopyPasses = 64;
constexpr size_t kChaseElements = size_t{1} << 27;  // 512 MiB of uint32: far beyond L2 and the TLBs' reach
constexpr int kChaseThreads = 64;                    // two warps per SM: 100% theoretical occupancy, 3% used
constexpr int kChaseSteps = 2048;
constexpr int kComputeThreads = 256;
constexpr int kComputeBlocksPerSm = 8;               // 64 warps per SM
constexpr int kMmaIterations = 4096;
constexpr int kFmaIterations = 16384;
constexpr int kRegisterHeavyWaves = 4;               // one block per SM per wave
constexpr int kRegisterHeavyIterations = 512;
constexpr int kStreamThreads = 512;
constexpr int kStreamBlocksPerSm = 4;

// One probe ready to measure.
struct Probe {
  core::Cost cost;
  bool cold_l2 = true;
  kernels::LaunchInfo launch;                  // what the occupancy API is asked about
  std::function<void(cudaStream_t)> call;      // one launch; never synchronises
};

core::Cost cost_of(double flops, double bytes_read, double bytes_written) {
  core::Cost c;
  c.flops = c.flops_dense = c.flops_fa_convention = flops;
  c.min_bytes_read = bytes_read;
  c.min_bytes_write = bytes_written;
  c.intensity = bytes_read + bytes_written > 0 ? flops / (bytes_read + bytes_written) : 0;
  return c;
}

// The buffers every probe uses, allocated once for the run.
struct Buffers {
  Buffers(int sms, int64_t l2_bytes)
      : l2_copy_bytes(static_cast<size_t>(std::max<int64_t>(l2_bytes, 1 << 20)) / 8 / 16 * 16),
        hbm_src(kHbmCopyBytes),
        hbm_dst(kHbmCopyBytes),
        l2_src(l2_copy_bytes),
        l2_dst(l2_copy_bytes),
        chase(kChaseElements * sizeof(uint32_t)),
        out(static_cast<size_t>(sms) * kComputeBlocksPerSm * kComputeThreads * sizeof(float)) {
    check_cuda(cudaMemset(hbm_src.get(), 1, hbm_src.bytes()), "cudaMemset");
    check_cuda(cudaMemset(l2_src.get(), 1, l2_src.bytes()), "cudaMemset");
    probes::launch_chase_init(static_cast<uint32_t*>(chase.get()), kChaseElements, nullptr);
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  size_t l2_copy_bytes;
  DeviceBuffer hbm_src, hbm_dst, l2_src, l2_dst, chase, out;
};

kernels::LaunchInfo launch_info(const char* name, probes::Kernel k, int64_t blocks, int threads) {
  kernels::LaunchInfo l;
  l.kernel_name = name;
  l.func = probes::function_of(k);
  l.grid_blocks = blocks;
  l.block_threads = threads;
  return l;
}

// The probe of that name, or nullopt when this build has none (the table and this file disagree).
std::optional<Probe> probe_named(std::string_view name, int sms, Buffers& b) {
  Probe p;
  auto* out = static_cast<float*>(b.out.get());
  if (name == "hbm-copy") {
    const int blocks = sms * kStreamBlocksPerSm;
    p.cost = cost_of(0, kHbmCopyBytes, kHbmCopyBytes);
    p.launch = launch_info("copy_kernel", probes::Kernel::copy, blocks, kStreamThreads);
    p.call = [&b, blocks](cudaStream_t s) {
      probes::launch_copy(b.hbm_src.get(), b.hbm_dst.get(), kHbmCopyBytes, 1, blocks, kStreamThreads, s);
    };
  } else if (name == "l2-copy") {
    const int blocks = sms * kStreamBlocksPerSm;
    const double bytes = static_cast<double>(b.l2_copy_bytes) * kL2CopyPasses;
    p.cost = cost_of(0, bytes, bytes);  // through L2: what the probe must move, not HBM bytes
    p.cold_l2 = false;
    p.launch = launch_info("copy_kernel", probes::Kernel::copy, blocks, kStreamThreads);
    p.call = [&b, blocks](cudaStream_t s) {
      probes::launch_copy(b.l2_src.get(), b.l2_dst.get(), b.l2_copy_bytes, kL2CopyPasses, blocks, kStreamThreads, s);
    };
  } else if (name == "mma-loop") {
    const int blocks = sms * kComputeBlocksPerSm;
    const double warps = static_cast<double>(blocks) * kComputeThreads / 32;
    p.cost = cost_of(warps * kMmaIterations * probes::kMmaChains * probes::kFlopsPerMma, 0,
                     static_cast<double>(blocks) * kComputeThreads * sizeof(float));
    p.launch = launch_info("mma_kernel", probes::Kernel::mma_bf16, blocks, kComputeThreads);
    p.call = [out, blocks](cudaStream_t s) { probes::launch_mma(true, out, kMmaIterations, blocks, kComputeThreads, s); };
  } else if (name == "fma-loop") {
    const int blocks = sms * kComputeBlocksPerSm;
    const double threads = static_cast<double>(blocks) * kComputeThreads;
    p.cost = cost_of(2.0 * threads * kFmaIterations * probes::kFmaChains, 0, threads * sizeof(float));
    p.launch = launch_info("fma_kernel", probes::Kernel::fma, blocks, kComputeThreads);
    p.call = [out, blocks](cudaStream_t s) { probes::launch_fma(out, kFmaIterations, blocks, kComputeThreads, s); };
  } else if (name == "empty-kernel") {
    p.cost = cost_of(0, 0, 0);
    p.launch = launch_info("empty_kernel", probes::Kernel::empty, 1, 1);
    p.call = [](cudaStream_t s) { probes::launch_empty(s); };
  } else if (name == "pointer-chase") {
    const double threads = static_cast<double>(sms) * kChaseThreads;
    p.cost = cost_of(0, threads * kChaseSteps * sizeof(uint32_t), threads * sizeof(uint32_t));
    p.launch = launch_info("chase_kernel", probes::Kernel::chase, sms, kChaseThreads);
    auto* next = static_cast<const uint32_t*>(b.chase.get());
    auto* sink = static_cast<uint32_t*>(b.out.get());
    p.call = [next, sink, sms](cudaStream_t s) {
      probes::launch_chase(next, kChaseElements, kChaseSteps, sink, sms, kChaseThreads, s);
    };
  } else if (name == "register-heavy") {
    const int blocks = sms * kRegisterHeavyWaves;
    const double loads = static_cast<double>(blocks) * probes::kRegisterHeavyThreads * kRegisterHeavyIterations;
    p.cost = cost_of(2.0 * loads * probes::kRegisterHeavyLive, loads * sizeof(float),
                     static_cast<double>(blocks) * probes::kRegisterHeavyThreads * sizeof(float));
    p.launch = launch_info("register_heavy_kernel", probes::Kernel::register_heavy, blocks, probes::kRegisterHeavyThreads);
    // The chase buffer's words read as floats: the FMA rate does not depend on the values.
    auto* src = static_cast<const float*>(b.chase.get());
    p.call = [src, out, blocks](cudaStream_t s) {
      probes::launch_register_heavy(src, kChaseElements, kRegisterHeavyIterations, out, blocks, s);
    };
  } else {
    return std::nullopt;
  }
  return p;
}

// The CUDA backend's measurement of one call, for a probe.
void measure_probe(const Probe& probe, const core::DeviceInfo& info, const SmResources& sm, MeasureOptions options,
                   Stream& stream, L2Flusher& flusher, core::Record& rec) {
  options.cold_l2 = probe.cold_l2;
  cudaStream_t s = stream.get();
  rec.cost = probe.cost;
  const auto call = [&] { probe.call(s); };

  LaunchRecording recording = record_launches(call, s);
  rec.launches = std::move(recording.launches);
  for (core::Launch& launch : rec.launches) launch.occupancy = occupancy_of_record(launch, sm);

  const CallFn timed = [&](cudaStream_t stream_arg, kernels::StageHook*) { probe.call(stream_arg); };
  const Timing timing = time_call(timed, 0, s, options, info.sm_clock_max_mhz, flusher);
  rec.samples_us = timing.samples.total_us;
  rec.sampling_stop = timing.samples.stop_reason;
  rec.latency = core::summarize(rec.samples_us);
  rec.launch_overhead_us = timing.launch_overhead_us;
  rec.timing_mode = timing.timing_mode;
  rec.clock = timing.clock;
  if (rec.latency.p50_us > 0) rec.tflops = rec.cost.flops / (rec.latency.p50_us * 1e-6) / 1e12;

  if (options.counters) {
    // Cold: the flush inside the profiled region, as for a point; warm: the call once before each pass.
    const std::function<void()> before = probe.cold_l2 ? std::function<void()>([&] { flusher.flush(s); })
                                                       : std::function<void()>(call);
    rec.counters = CounterProfiler::instance().collect(before, call, s, options.extra_metrics,
                                                       probe.cold_l2 ? L2Flusher::kLaunches : 0, false);
    // The session's passes replay the probe: its DRAM bytes are counted again in one pass, as a point's.
    CounterProfiler::instance().recount_dram(rec.counters, before, call, s, probe.cold_l2 ? L2Flusher::kLaunches : 0);
    if (rec.counters.per_kernel.size() == 1) rec.counters.per_kernel[0].kernel = probe.launch.kernel_name;
  } else {
    rec.counters.status = core::CounterStatus::not_collected;
    rec.counters.reason = "counters are switched off (--no-counters)";
  }

  rec.occupancy = occupancy_of(probe.launch, sm);
  if (rec.counters.status == core::CounterStatus::ok && rec.counters.per_kernel.size() == 1) {
    const auto& metrics = rec.counters.per_kernel[0].metrics;
    if (const auto it = metrics.find(core::kMetricAchievedOccupancy); it != metrics.end())
      rec.occupancy.achieved_pct = it->second;
  }
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

}  // namespace

std::vector<core::Record> measure_calibration_probes(int device_index, const core::DeviceInfo& info,
                                                     const MeasureOptions& options) {
  check_cuda(cudaSetDevice(device_index), "cudaSetDevice");
  const SmResources sm = sm_resources(device_index);
  Stream stream;
  L2Flusher flusher(info.l2_bytes);
  Buffers buffers(sm.sm_count, info.l2_bytes);
  std::vector<core::Record> records;
  for (const core::CalibrationProbe& entry : core::calibration_probes()) {
    const auto t0 = std::chrono::steady_clock::now();
    core::Record rec;
    rec.kernel = std::string(entry.name);
    rec.shape.dtype = entry.dtype;
    rec.backend = core::BackendKind::cuda;
    rec.device_id = device_index;
    try {
      const std::optional<Probe> probe = probe_named(entry.name, sm.sm_count, buffers);
      if (!probe) {
        rec.status = core::Status::failed;
        rec.reason = fmt::format("no probe named '{}' in this build", entry.name);
      } else {
        measure_probe(*probe, info, sm, options, stream, flusher, rec);
      }
    } catch (const std::exception& e) {
      const std::string sticky = sticky_error_message();
      if (!sticky.empty()) throw EnvironmentError(fmt::format("{} (at probe {}: {})", sticky, entry.name, e.what()));
      rec.status = core::Status::failed;
      rec.reason = e.what();
    }
    rec.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace attnprof::measure
