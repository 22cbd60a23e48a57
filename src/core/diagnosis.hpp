// Diagnosis: says why one measured point is as fast or slow as it is, with the numbers behind it.
// It reads only a Record and its Context (so it runs on any machine, from a results file alone) and
// follows Nsight Compute's speed-of-light rules where counters exist, the roofline and the cost model
// where they do not. Every threshold is a named constant below, each justified in docs/diagnosis.md.
// The result is a core::Diagnosis (diagnosis_model.hpp): verdict and flags as enums, evidence
// sentences, a next step, the metrics, and one entry per launch of a multi-launch call.
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/diagnosis_model.hpp"
#include "core/metric_names.hpp"  // the CUPTI names it reads from Counters::total
#include "core/results.hpp"

namespace attnprof::core {

// Verdict and flag names as the JSON and the reports spell them (to_string of the enums).
inline constexpr std::string_view kVerdictMemory = "memory-bound";
inline constexpr std::string_view kVerdictCompute = "compute-bound";
inline constexpr std::string_view kVerdictLatency = "latency-bound";
inline constexpr std::string_view kVerdictOccupancy = "occupancy-bound";
inline constexpr std::string_view kVerdictLaunch = "launch-bound";
inline constexpr std::string_view kVerdictUnknown = "unknown";
inline constexpr std::string_view kFlagUnderFilled = "under-filled";
inline constexpr std::string_view kFlagTailEffect = "tail-effect";
inline constexpr std::string_view kFlagExcessTraffic = "excess-traffic";
inline constexpr std::string_view kFlagThrottled = "throttled";
inline constexpr std::string_view kFlagNoisy = "noisy";
inline constexpr std::string_view kFlagUnverified = "unverified";
inline constexpr std::string_view kFlagCountersUnavailable = "counters-unavailable";
inline constexpr std::string_view kFlagHostBound = "host-bound";

// Thresholds (docs/diagnosis.md gives the reason for each).
inline constexpr double kSolLatencyBelowPct = 60;      // a unit under this is not busy
inline constexpr double kSolDominanceMarginPct = 10;   // one throughput this far above another leads
inline constexpr double kSolSaturatedPct = 80;         // a SOL % over this: that unit is saturated
// Compute-bound whatever the SOL counters read: achieved FLOP/s at least this share of the roof scaled
// to the SM clock the point ran at.
inline constexpr double kComputeRoofSharePct = 75;
// Old-file memory level: DRAM (from its bytes / bandwidth) within this many points of the combined
// memory throughput accounts for it.
inline constexpr double kDramAccountsWithinPct = 10;
inline constexpr double kLaunchBoundLatencyMultiple = 2;  // GPU time per launch under 2x an empty kernel's
inline constexpr double kLaunchBoundUsPerLaunch = 10;     // the same without a measured launch latency
inline constexpr double kHostBoundOverheadFactor = 1;     // host enqueue time over the GPU time
inline constexpr double kOccupancyBoundBelowPct = 50;     // theoretical occupancy under this, and ...
inline constexpr double kIssueActiveBusyPct = 60;         // ... issue slots used under this, and ...
inline constexpr double kLatencyStallShareFrom = 0.5;     // ... dependency stalls at least this share
inline constexpr double kTailWasteShare = 0.2;            // idle share of the launched wave slots / CTA time
inline constexpr double kTailTileFillBelow = 0.5;         // last query tile under half full
inline constexpr double kExcessTrafficRatio = 1.3;        // measured DRAM bytes / cost-model minimum
inline constexpr double kSpShareExcess = 0.5;             // S/P bytes / all bytes (materialised)
inline constexpr double kNoisyRelStddev = 0.05;           // latency stddev / mean
// A point whose sampling spent its whole time budget with the P50's 95% CI half-width above this share
// of the P50 (core::median_ci) is noisy too: its clock kept moving for the whole budget.
inline constexpr double kNoisyP50CiHalfWidth = 0.01;
// A noisy time-budgeted point whose lowest clock batch sits this far under its median clock has the
// dip named as the cause: on the H200 the power manager lowers the clock by about 8% some 0.8 s into a
// heavy point's load (docs/measurement.md).
inline constexpr double kClockDipFraction = 0.04;
inline constexpr double kClockNoteBelowFraction = 0.95;  // median SM clock under load / maximum
inline constexpr double kTensorPipeOverlapFromPct = 30;  // MMA-heavy enough that overlap is the lever
inline constexpr double kWgmmaOpsPerInstructionAbove = 8192;  // mma.sync m16n8k16 is 4096

// True for a kernel that writes S and P to memory (the cost model gave it S/P traffic).
bool is_materialized(const Record&);

// The diagnosis of one measured point (status ok or incorrect). Pure: depends only on inputs.
Diagnosis diagnose(const Record&, const Context&);

// Fills Record::diagnosis for every ok/incorrect record; sets it to null for the others.
void annotate(Results&);

// Reference (materialised) vs fused at each shape where both ran ok: one object per shape with
// speedup, DRAM bytes saved, intensity shift, and how much of the latency gain the removed S/P
// traffic explains (sp_bytes / peak bandwidth against the P50 delta). Ordered as the records are.
nlohmann::json compare_kernels(const Results&);

}  // namespace attnprof::core
