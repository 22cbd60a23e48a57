// Diagnosis: says why one measured point is as fast or slow as it is, with the numbers behind it.
// It reads only a Record and its Context (so it runs on any machine, from a results file alone) and
// follows Nsight Compute's speed-of-light rules where counters exist, the roofline and the cost model
// where they do not. Every threshold is a named constant below, each justified in docs/diagnosis.md.
//
// A verdict object (Record::diagnosis):
//   {"verdict":   "memory-bound" | "compute-bound" | "latency-bound" | "occupancy-bound" |
//                 "launch-bound" | "unknown" (no ceilings to compare against),
//    "flags":     subset of kFlag* in a fixed order,
//    "evidence":  ["sentence with its numbers", ...],
//    "next_step": "what to try next",
//    "metrics":   {number or null per key; see docs/diagnosis.md},
//    "launches":  [per-launch speed of light for multi-launch calls; empty otherwise]}
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/results.hpp"

namespace attnprof::core {

// Verdicts.
inline constexpr std::string_view kVerdictMemory = "memory-bound";
inline constexpr std::string_view kVerdictCompute = "compute-bound";
inline constexpr std::string_view kVerdictLatency = "latency-bound";
inline constexpr std::string_view kVerdictOccupancy = "occupancy-bound";
inline constexpr std::string_view kVerdictLaunch = "launch-bound";
inline constexpr std::string_view kVerdictUnknown = "unknown";

// Flags.
inline constexpr std::string_view kFlagUnderFilled = "under-filled";
inline constexpr std::string_view kFlagTailEffect = "tail-effect";
inline constexpr std::string_view kFlagExcessTraffic = "excess-traffic";
inline constexpr std::string_view kFlagThrottled = "throttled";
inline constexpr std::string_view kFlagNoisy = "noisy";
inline constexpr std::string_view kFlagUnverified = "unverified";
inline constexpr std::string_view kFlagCountersUnavailable = "counters-unavailable";
inline constexpr std::string_view kFlagHostBound = "host-bound";

// Thresholds (docs/diagnosis.md gives the reason for each).
inline constexpr double kSolLatencyBelowPct = 60;      // both SOL % under this: latency-bound
inline constexpr double kSolDominanceMarginPct = 10;   // one SOL % this far above the other wins
inline constexpr double kSolSaturatedPct = 80;         // a SOL % over this: that unit is saturated
inline constexpr double kLaunchBoundUsPerLaunch = 10;    // GPU time under 10 us per kernel launch
inline constexpr double kHostBoundOverheadFactor = 1;    // host enqueue time over the GPU time
inline constexpr double kOccupancyBoundBelowPct = 50;    // latency-bound + low occupancy + limiter
inline constexpr double kTailWasteShare = 0.2;           // idle share of the launched wave slots
inline constexpr double kTailTileFillBelow = 0.5;        // last query tile under half full
inline constexpr int kFusedQueryTileRows = 128;          // query rows per block of the fused kernel
inline constexpr double kExcessTrafficRatio = 1.3;       // measured DRAM bytes / cost-model minimum
inline constexpr double kSpShareExcess = 0.5;            // S/P bytes / all bytes (materialised)
inline constexpr double kNoisyRelStddev = 0.05;          // latency stddev / mean
// A point whose sampling spent its whole time budget with the P50's 95% CI half-width above this share
// of the P50 (core::median_ci) is noisy too: its clock kept moving for the whole budget.
inline constexpr double kNoisyP50CiHalfWidth = 0.01;
// A noisy time-budgeted point whose lowest clock batch sits this far under its median clock has the
// dip named as the cause: on the H200 the power manager lowers the clock by about 8% some 0.8 s into a
// heavy point's load (docs/measurement.md).
inline constexpr double kClockDipFraction = 0.04;
inline constexpr double kClockNoteBelowFraction = 0.95;  // median SM clock under load / maximum
inline constexpr double kTensorPipeOverlapFromPct = 30;  // MMA-heavy enough that overlap is the lever
inline constexpr double kNearRoofPct = 70;               // achieved / attainable: near the roof
inline constexpr double kWgmmaOpsPerInstructionAbove = 8192;  // mma.sync m16n8k16 is 4096

// CUPTI metric names the diagnosis reads from Counters::total (as CUPTI names them on GH100).
inline constexpr const char* kMetricDramRead = "dram__bytes_read.sum";
inline constexpr const char* kMetricDramWrite = "dram__bytes_write.sum";
inline constexpr const char* kMetricDramTotal = "dram__bytes.sum";
inline constexpr const char* kMetricDuration = "gpu__time_duration.sum";
inline constexpr const char* kMetricComputeSol = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricMemorySol =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricTensorOpsBf16 = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
inline constexpr const char* kMetricTensorOpsFp16 = "sm__ops_path_tensor_src_fp16.sum";
inline constexpr const char* kMetricFfma = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr const char* kMetricFadd = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr const char* kMetricFmul = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr const char* kMetricAchievedOccupancy =
    "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kMetricL2HitRate = "lts__t_sector_hit_rate.pct";
inline constexpr const char* kMetricTensorInstHmma = "sm__inst_executed_pipe_tensor_op_hmma.sum";
inline constexpr const char* kMetricTensorPipeActive =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";

// True for a kernel that writes S and P to memory (the cost model gave it S/P traffic).
bool is_materialized(const Record&);

// The verdict object for one measured point (status ok or incorrect). Pure: depends only on inputs.
nlohmann::json diagnose(const Record&, const Context&);

// Fills Record::diagnosis for every ok/incorrect record; sets it to null for the others.
void annotate(Results&);

// Reference (materialised) vs fused at each shape where both ran ok: one object per shape with
// speedup, DRAM bytes saved, intensity shift, and how much of the latency gain the removed S/P
// traffic explains (sp_bytes / peak bandwidth against the P50 delta). Ordered as the records are.
nlohmann::json compare_kernels(const Results&);

}  // namespace attnprof::core
