// `attnprof why BASELINE CANDIDATE`: the P50 gap between two kernels (or two builds of one kernel) at
// each shape both ran, decomposed into what the measurements support (docs/why.md#attnprof-why).
//
// - Stall terms (needs `sweep --stalls` on both sides): each warp state's share of the call's warp
//   samples turned into time, share x P50. Per state, candidate time - baseline time; over every state
//   these terms sum to the gap exactly. A term names where each side holds that state (the source line,
//   or the kernel and SASS offset without line info).
// - Evidence (counters, launch records, occupancy, clocks): numbers beside the terms, both sides' value,
//   ordered by how much they differ. Not additive: they say why a term is what it is.
// - What is missing on either side, and which flag of `sweep` collects it.
//
// Pure: records in, a WhyReport out; report/why.hpp renders it, cli/why.cpp reads the files.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"

namespace attnprof::core {

// The version of `attnprof why --json`'s format ("MAJOR.MINOR", as the results' schema_version).
inline constexpr std::string_view kWhySchemaVersion = "1.0";
// Hot spots named per side and stall term, each holding at least kWhySpotMinShare of the side's samples
// in that state: below it a state is spread over the code, and no one place explains it.
inline constexpr size_t kWhySpotsPerTerm = 3;
inline constexpr double kWhySpotMinShare = 0.05;
// Evidence whose two values differ by less than this (relative to the larger) reads as the same.
inline constexpr double kWhySameBelow = 0.005;

// One side's point: a record and the context of the file it came from (its ceilings and device).
struct WhyRecord {
  const Record* record = nullptr;
  const Context* context = nullptr;
};

// One side of the comparison: how the output names it and its points, at most one per shape.
struct WhySide {
  std::string label;  // "torch:cudnn", or "base.json:fused" for two builds of one kernel
  std::vector<WhyRecord> points;
};

// Where one side holds a warp state: a source line (code with line info) or a SASS instruction.
struct WhySpot {
  std::string kernel;        // short function name (core::short_kernel_name)
  std::string file;          // base name of the source file; empty without line info
  int64_t line = 0;          // 0 without line info
  uint64_t pc_offset = 0;    // SASS offset in the function, for a spot without line info
  double us = 0;             // this side's samples of the state at the spot / all its samples x P50
  double share_of_state = 0; // of this side's samples in the state
  // The other side's time in the same state at the same place (same file and line, or same function
  // and SASS offset); nullopt when the place is not among the other side's most-sampled ones.
  std::optional<double> other_us;
};

// One warp state's time on each side: its share of all warp samples of the call, times the P50.
struct StallTerm {
  std::string state;  // "selected" (issuing) or a stall reason as CUPTI names it
  double baseline_share = 0, candidate_share = 0;  // of all warp samples of the call
  double baseline_us = 0, candidate_us = 0;        // share x P50
  double delta_us = 0;                             // candidate - baseline
  double delta_pct = 0;                            // delta_us / baseline P50 x 100
  // Most time first, at most kWhySpotsPerTerm, each at least kWhySpotMinShare of the side's samples in the state.
  std::vector<WhySpot> baseline_spots, candidate_spots;
};

// A number beside the terms, on both sides. Not additive: it explains, it does not sum to the gap.
struct WhyEvidence {
  std::string what;    // "tensor pipe busy"
  std::string unit;    // "%", "x" (a ratio), "bytes", "count", "MHz", "" (a plain number)
  double baseline = 0, candidate = 0;
  std::string source;  // "counters", "warp samples", "launch records", "occupancy calculator", ...
  std::string baseline_note, candidate_note;  // what the value rests on ("132 blocks, 1 per SM x 132 SMs")
  double difference = 0;  // |candidate - baseline| / max(|baseline|, |candidate|): the list's order
  bool same() const { return difference < kWhySameBelow; }
};

// Each kernel of a call that launches more than one, with its share of the call's GPU time.
struct WhyKernelTime {
  std::string kernel;  // short function name, or the stage's name
  double share = 0;    // of the call's GPU time
  double us = 0;       // share x P50
};

// How far the decomposition goes at a point: stall terms (both sides sampled), counters' evidence
// only, or the time gap alone.
enum class WhyMethod { warp_states, counters, time_only };
std::string_view to_string(WhyMethod);

struct WhyPoint {
  std::string shape;  // Shape::label()
  double baseline_p50_us = 0, candidate_p50_us = 0;
  double baseline_ci_low_us = 0, baseline_ci_high_us = 0;    // 95% CI of each median
  double candidate_ci_low_us = 0, candidate_ci_high_us = 0;
  double gap_us = 0;       // candidate P50 - baseline P50
  double gap_pct = 0;      // gap / baseline P50 x 100
  double speed_ratio = 0;  // baseline P50 / candidate P50: the candidate's speed as a multiple of the baseline's
  // The same per SM cycle (each P50 times its side's SM clock under load, clock.sm_mhz_median), when both
  // clocks were read: on a power-limited GPU part of a gap can be one side's lower clock.
  std::optional<double> speed_ratio_per_cycle;
  double baseline_sm_mhz = 0, candidate_sm_mhz = 0;  // 0 where unknown
  bool gap_within_noise = false;  // the two medians' 95% intervals overlap
  WhyMethod method = WhyMethod::time_only;
  int64_t baseline_samples = 0, candidate_samples = 0;  // warp samples; 0 without warp states
  std::vector<std::string> baseline_sampled, candidate_sampled;  // short names of the kernels sampled
  std::vector<StallTerm> terms;        // every warp state either side sampled, largest |delta_us| first
  std::vector<WhyEvidence> evidence;   // largest difference first
  std::vector<WhyKernelTime> baseline_kernels, candidate_kernels;  // only when a call has several kernels
  std::vector<std::string> missing;    // what is not there on a side, and what would collect it
  double terms_sum_us() const;         // sum of the terms' delta_us: the gap, when method is warp_states
};

// A shape both sides hold where one (or both) did not run ok: not compared, and why.
struct WhySkipped {
  std::string shape;
  std::string baseline_status, candidate_status;
};

struct WhyReport {
  std::string baseline, candidate;  // the sides' labels
  std::vector<std::string> files;   // the results files read (set by the caller that read them)
  std::vector<WhyPoint> points;     // in the baseline's order
  std::vector<WhySkipped> skipped;
};

// The decomposition at one shape; both records must be ok with a positive P50 (InputError otherwise).
// `baseline_label` and `candidate_label` name the sides in the missing-data lines.
WhyPoint why_point(const WhyRecord& baseline, const WhyRecord& candidate, std::string_view baseline_label,
                   std::string_view candidate_label);

// Every shape both sides ran ok (or, with `shape_filter`, the one whose label it is, else those whose
// label contains it), in the baseline's order. InputError (exit 2) when no shape is common to both, none
// of the common ones ran ok on both sides, or the filter matches none of those; the message lists the
// shapes there are.
WhyReport why(const WhySide& baseline, const WhySide& candidate, std::string_view shape_filter = {});

// A kernel's points in one or more results files, under `label`. InputError when no file holds the
// kernel (naming the kernels they hold) or a shape of it is in two files.
WhySide why_side(std::string label, std::string_view kernel, const std::vector<const Results*>& files,
                 const std::vector<std::string>& file_names);

// One kernel of a sweep against the fastest kernel at its shape (the HTML report's "Why the gap").
struct WhyPair {
  std::string baseline, candidate;  // kernel names: the fastest at the shape, and another
  WhyPoint point;
};
// Every shape of `results` where two or more kernels ran ok with warp states: each of them against the
// fastest of them (lowest P50), in record order.
std::vector<WhyPair> why_against_fastest(const Results&);

void to_json(nlohmann::json&, const WhySpot&);
void to_json(nlohmann::json&, const StallTerm&);
void to_json(nlohmann::json&, const WhyEvidence&);
void to_json(nlohmann::json&, const WhyKernelTime&);
void to_json(nlohmann::json&, const WhyPoint&);
void to_json(nlohmann::json&, const WhySkipped&);
// {"schema_version": kWhySchemaVersion, "baseline", "candidate", "files", "points", "skipped"}.
void to_json(nlohmann::json&, const WhyReport&);

}  // namespace attnprof::core
