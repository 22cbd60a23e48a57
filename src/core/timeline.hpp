// A kernel's timeline: hardware counters sampled at a fixed interval over one call of a point
// (CUPTI's PM sampling, `sweep --timeline`): how busy the tensor pipe, DRAM, L2, L1 and shared memory
// are, and how many warps are resident, against time. It shows what a single number per call hides:
// a warp-specialised kernel's prologue, steady state and tail, a split-KV combine at the end, the
// gaps between a multi-launch call's kernels. The CUDA backend takes the samples
// (src/measure/cuda/pm_sampling.cpp); this file holds what they become in a record, the pure steps
// applied to them (idle edges dropped, samples merged to a cap) and a summary, so that all of it runs
// and is tested without a GPU.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/stalls.hpp"  // SamplingStatus

namespace attnprof::core {

// Why a point of a backend without PM sampling (the CPU's) has no timeline.
inline constexpr std::string_view kNoTimelineReason =
    "timelines need an NVIDIA GPU's PM sampling: this backend has none";

// A metric the timeline samples and the name the report gives it.
struct TimelineMetric {
  const char* name;   // CUPTI's metric name
  const char* label;  // the report's name for it
};

// The GH100 metrics the timeline asks for, each a percentage of its unit's peak over the sample's
// elapsed cycles. CUPTI's "TriageCompute" counter groups are the ones built for PM sampling: these
// seven fit one pass together (a PM sampling configuration must: it cannot replay), where the plain
// names of the L2, L1 and SM throughputs need 4, 5 and 19 passes (cuptiProfilerHostGetNumOfPasses
// offline for GH100, CUDA 13; tests/measure/cuda/test_pm_sampling.cu checks it). A chip that lacks
// one gets the others (measure/cuda/pm_sampling.cpp).
inline constexpr const char* kTimelineTensorLabel = "tensor pipe";
inline constexpr const char* kTimelineWarpsLabel = "warps active";
inline constexpr const char* kTimelineDramLabel = "DRAM";
inline constexpr std::array<TimelineMetric, 7> kTimelineMetrics{{
    {"TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
     kTimelineTensorLabel},
    {"FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed", kTimelineDramLabel},
    {"LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2"},
    {"SM_A.TriageCompute.l1tex__throughput.avg.pct_of_peak_sustained_elapsed", "L1"},
    {"SM_A.TriageCompute.l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
     "shared memory"},
    {"TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM"},
    {"TPC.TriageCompute.tpc__warps_active_realtime.avg.pct_of_peak_sustained_elapsed", kTimelineWarpsLabel},
}};

// Samples a record keeps at most: more are merged, neighbours averaged (merge_samples).
inline constexpr size_t kMaxTimelineSamples = 2000;
// A sample in which every metric is below this [%] is idle: the GPU between Start and the call's
// first launch, or after its last.
inline constexpr double kTimelineIdlePct = 1.0;
// The tensor pipe counts as busy at or above this [%] in TimelineSummary::tensor_busy_share.
inline constexpr double kTensorBusyPct = 50.0;
// The steady state: samples at or above this fraction of the lead metric's 90th percentile
// (TimelinePhases).
inline constexpr double kSteadyFraction = 0.5;

// One metric against time.
struct TimelineSeries {
  std::string metric;          // CUPTI's name
  std::string label;           // the report's ("tensor pipe", "DRAM", ...)
  std::string unit = "%";      // of the unit's peak, over the sample's elapsed cycles
  std::vector<double> values;  // one per sample
};

struct Timeline {
  SamplingStatus status = SamplingStatus::ok;
  std::string reason;             // why not ok; for an ok one, what to know (calls back to back)
  int64_t calls = 0;              // calls sampled back to back (more than one for a call of few intervals)
  double call_us = 0;             // [us] one call, timed just before sampling
  int64_t interval_ns = 0;        // [ns] the hardware's sampling interval
  int64_t merged = 1;             // hardware samples averaged into each stored one (merge_samples)
  int64_t samples_taken = 0;      // decoded, before the idle edges were dropped and samples merged
  double profiling_ms = 0;        // [ms] wall time of the sampling, set-up and decoding included
  std::vector<double> t_us;       // [us] each stored sample's start, from the first busy sample
  std::vector<TimelineSeries> series;

  // [us] between stored samples.
  double spacing_us() const { return static_cast<double>(interval_ns * merged) * 1e-3; }
  const TimelineSeries* find(std::string_view label) const;
};

// Drops the samples before the first and after the last in which some metric reaches
// kTimelineIdlePct, and restarts t_us at 0. A timeline with no busy sample is left empty.
void drop_idle_edges(Timeline&);

// Averages runs of neighbouring samples so that at most `max_samples` remain (each run starts at its
// first sample's time); `merged` multiplies by the run length.
void merge_samples(Timeline&, size_t max_samples = kMaxTimelineSamples);

// A metric's level over the timeline.
struct SeriesSummary {
  std::string label;
  double mean = 0;  // over the samples (they are evenly spaced)
  double max = 0;
};

// Prologue, steady state and tail of a call, read from its lead metric (the busiest unit by mean;
// warps active is residency, not a unit's work, and never leads): the steady state runs from the first
// to the last sample at or above kSteadyFraction of the lead's 90th percentile.
struct TimelinePhases {
  bool found = false;      // false: no unit was busy
  std::string lead;        // the lead metric's label
  double threshold = 0;    // [%] the steady state's level
  double prologue_us = 0;  // before the steady state
  double steady_us = 0;
  double tail_us = 0;      // after it
};

struct TimelineSummary {
  double duration_us = 0;  // of the stored samples: count x spacing
  std::vector<SeriesSummary> series;
  TimelinePhases phases;
  // Share of the samples with the tensor pipe at or above kTensorBusyPct; absent without that metric.
  std::optional<double> tensor_busy_share;
};

TimelineSummary summarize_timeline(const Timeline&);

// JSON (docs/results-schema.md, `timeline`): times rounded to 0.01 us and values to 0.1, so that a
// record's timeline stays small. Read back, a malformed timeline (a series of another length than the
// times, more samples than a reader takes, negative counts) is an InputError naming what is wrong.
void to_json(nlohmann::json&, const Timeline&);
void from_json(const nlohmann::json&, Timeline&);

}  // namespace attnprof::core
