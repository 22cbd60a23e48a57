#include "report/rules.hpp"

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "core/diagnosis_decode.hpp"

namespace attnprof::report::detail {

namespace {

Rule verdict(std::string_view name, std::string text) {
  return {std::string(name), "verdict-" + std::string(name), std::move(text)};
}
Rule flag(std::string_view name, std::string text) {
  return {std::string(name), "flag-" + std::string(name), std::move(text)};
}

const Rule* find(const std::vector<Rule>& rules, std::string_view name) {
  for (const auto& r : rules)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

const std::vector<Rule>& verdict_rules() {
  using namespace core;
  static const std::vector<Rule> rules = {
      verdict(kVerdictLaunch,
              fmt::format("GPU time under {:g}x an empty kernel's launch latency per kernel launch of the call "
                          "(without a measured latency: under {:g} us per launch): each launch's fixed cost is a "
                          "large part of it, so fewer, larger launches are the lever. A decode point is also "
                          "launch-bound when the HBM ceiling would stream its minimum bytes in under {:g} launch "
                          "latencies per launch and at least {:.0f}% of its P50 (but no more than that limit) lies "
                          "beyond that stream: the call is too short for its bytes (launch, ramp, the split-combine "
                          "launch).",
                          kLaunchBoundLatencyMultiple, kLaunchBoundUsPerLaunch, kDecodeShortCallLaunchLatencies,
                          kDecodeFixedTimeShareFrom * 100)),
      verdict(kVerdictLatency,
              fmt::format("compute and memory throughput (speed of light) both under {:g}% of peak, or the SM "
                          "busy with neither the tensor nor the FMA pipe leading memory: no one unit limits, so "
                          "more independent work in flight (or fewer non-MMA instructions) is the lever.",
                          kSolLatencyBelowPct)),
      verdict(kVerdictOccupancy,
              fmt::format("latency-bound, theoretical occupancy under {:g}% with a named limiter, issue slots "
                          "used under {:g}% of cycles and dependency stalls at least {:g}% of the warps' cycles: "
                          "too few resident warps to hide latency; the limiter says what to cut.",
                          kOccupancyBoundBelowPct, kIssueActiveBusyPct, kLatencyStallShareFrom * 100)),
      verdict(kVerdictCompute,
              fmt::format("the tensor or FMA pipe at least {:g}% busy and {:g} points above every memory level, "
                          "or at least {:g}% of the compute roof scaled to the SM clock the point ran at.",
                          kSolLatencyBelowPct, kSolDominanceMarginPct, kComputeRoofSharePct)),
      verdict(kVerdictMemory,
              fmt::format("the binding memory level (HBM, L2 only when its traffic shows re-reads rather than HBM's "
                          "fills, or L1/shared; named) at least {:g}% busy, and compute not {:g} points ahead of it.",
                          kSolLatencyBelowPct, kSolDominanceMarginPct)),
      verdict(kVerdictUnknown,
              "no P50, no ceilings to compare against (a run that recorded none), or no counters and neither "
              "ceiling reached: undetermined without counters."),
  };
  return rules;
}

const std::vector<Rule>& flag_rules() {
  using namespace core;
  static const std::vector<Rule> rules = {
      flag(kFlagUnderFilled, "fewer blocks than the device holds at once (under one wave): part of it idles."),
      flag(kFlagTailEffect,
           fmt::format("over {:g}% of the launched wave slots idle (for a persistent grid: of the CTA time, "
                       "from the tiles each CTA takes), or the last query tile of an attnprof fused kernel (its "
                       "rows read from the variant that ran) less than {:g}% full.",
                       kTailWasteShare * 100, kTailTileFillBelow * 100)),
      flag(kFlagExcessTraffic,
           fmt::format("DRAM bytes read, or written (with the L2 tail, when the counted writes are the call's), "
                       "over {:g}x that direction's minimum and over {:g} MB, or S/P traffic over {:g}% of a "
                       "materialising kernel's minimum bytes.",
                       kExcessTrafficRatio, kExcessTrafficMinBytes / 1e6, kSpShareExcess * 100)),
      flag(kFlagThrottled, fmt::format("a sample ran under {:g}% of the maximum clock: the latency is not "
                                       "representative.",
                                       kThrottledClockFraction * 100)),
      flag(kFlagNoisy,
           fmt::format("latency spread (stddev / mean) over {:g}%, or the P50's 95% interval wider than "
                       "{:g}% after the whole sampling budget.",
                       kNoisyRelStddev * 100, kNoisyP50CiHalfWidth * 100)),
      flag(kFlagHostBound,
           fmt::format("enqueueing one call on the host takes over {:g}x its GPU time: calls back to back would "
                       "leave the GPU waiting (a CUDA graph or more work per call is the lever).",
                       kHostBoundOverheadFactor)),
      flag(kFlagUnverified, "no check against the float64 reference: a speed with no correctness behind it."),
      flag(kFlagCountersUnavailable,
           "no hardware counters on a GPU point: FLOPs and bytes come from the cost model (CPU points, which never have "
           "counters, do not carry the flag)."),
      flag(kFlagBorderline,
           fmt::format("a number that decided the verdict sits within its band of the threshold (SOL and occupancy "
                       "{:g} points, stall share {:g}, launch limits {:g}%) and the other side gives another "
                       "verdict: the evidence names both.",
                       kBorderlineSolPoints, kBorderlineShare, kBorderlineLaunchFraction * 100)),
  };
  return rules;
}

std::string verdict_anchor(std::string_view verdict) {
  const Rule* r = find(verdict_rules(), verdict);
  return r ? r->anchor : std::string();
}

std::string flag_anchor(std::string_view flag) {
  const Rule* r = find(flag_rules(), flag);
  return r ? r->anchor : std::string();
}

std::string_view label_key() {
  return "b2 h4/2 s256x256 d64 causal bf16 reads: batch 2; 4 query heads sharing 2 key/value heads "
         "(h16/16 is plain multi-head attention); 256 queries x 256 keys; head dimension 64; the causal "
         "mask (absent: none); dtype bf16.";
}

}  // namespace attnprof::report::detail
