// The CI regression gate: compares a candidate results file against a baseline, point by point, and
// decides for each a verdict and for the whole run an exit code. Pure computation on core::Results;
// the renderers (gate/render.hpp) turn the Comparison into a terminal table, Markdown, JUnit or JSON.
// docs/ci-gate.md states the decision rules with their numbers.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "core/stats.hpp"
#include "core/thresholds.hpp"
#include "core/thresholds.hpp"

namespace attnprof::gate {

enum class Verdict {
  same,                // no significant change beyond the threshold
  faster,              // significantly faster by more than the threshold (never fails)
  slower,              // significantly slower by more than the threshold: a regression
  noisy,               // an interval too wide to decide, throttled clocks or too few samples
  counter_regression,  // --counters: DRAM bytes, tensor ops or achieved occupancy got worse
  error,               // a non-ok status on either side (but not `unsupported` on both)
  unsupported,         // the kernel does not support the shape in either run: never fails
  missing,             // in the baseline only
  added,               // in the candidate only (printed "new")
  unconfirmed,         // slower in the candidate, not in a re-run of it (confirm()): does not fail
};
std::string_view to_string(Verdict);

// Relative limits for the counters gate (--counters); each is a fraction of the baseline value.
struct CounterThresholds {
  double dram_bytes_increase = core::kGateDramBytesIncrease;  // DRAM bytes read + written
  double tensor_ops_increase = core::kGateTensorOpsIncrease;  // tensor-pipe operations (more work, same result)
  double occupancy_decrease = core::kGateOccupancyDecrease;   // achieved occupancy [%] dropping by this share
};

// How the one-sided tests of the compared points are held to alpha together.
enum class Correction {
  benjamini_hochberg,  // the false discovery rate over the compared points (the default)
  none,                // each point at alpha on its own (one point in 1/alpha fails an A/A by chance)
};
std::string_view to_string(Correction);
Correction parse_correction(std::string_view);  // "bh" or "none"; throws InputError

struct Options {
  double alpha = core::kGateAlpha;     // false discovery rate over the compared points (or, with
                                       // Correction::none, each point's significance level)
  Correction correction = Correction::benjamini_hochberg;
  double threshold = core::kGateSlowdownThreshold;  // minimum slowdown worth failing for: median ratio > 1 + this
  std::map<std::string, double> kernel_threshold;  // per kernel name, overrides `threshold`
  // Spread ceiling (stddev / mean) of either side: above it the point is judged on the whole interval
  // of its ratio (core/thresholds.hpp says why it is not the diagnosis' 5%).
  double max_rel_stddev = core::kGateMaxRelStddev;
  bool counters = false;               // also gate on hardware counters
  CounterThresholds counter_thresholds;
  bool fail_on_missing = true;         // a baseline point absent from the candidate fails the gate
                                       // (--allow-missing turns it off)
  bool allow_device_mismatch = false;  // compare across GPU model, driver, max clock or backend
  double confidence = core::kGateConfidence;  // of the bootstrap interval of the median ratio
  int bootstrap_resamples = 2000;
  uint64_t seed = 0x5eed;              // bootstrap seed: equal inputs give equal output
};

// One counter of one point under --counters.
struct CounterDelta {
  std::string name;                    // "dram_bytes", "tensor_ops", "achieved_occupancy_pct"
  std::string source;                  // the metric(s) it was read from
  double baseline = 0, candidate = 0;
  double change = 0;                   // candidate / baseline - 1
  double limit = 0;                    // allowed change: +x for bytes and ops, -x for occupancy
  bool regressed = false;
};

struct PointComparison {
  std::string key;                     // core::point_key
  std::string shape, kernel;
  Verdict verdict = Verdict::same;
  bool fails = false;                  // does this point fail the gate (exit 1)?
  std::string reason;                  // one line: why this verdict
  core::Status baseline_status = core::Status::ok, candidate_status = core::Status::ok;
  // Latency; meaningful when `compared` (both sides ok with samples).
  bool compared = false;
  int64_t baseline_n = 0, candidate_n = 0;
  double baseline_median_us = 0, candidate_median_us = 0;
  double ratio = 1;                    // candidate median / baseline median
  core::Interval ratio_ci{1, 1};       // bootstrap percentile interval of `ratio`
  // The interval the verdict rests on where it rests on one (a spread over the ceiling, throttled
  // samples): ratio_ci, widened for the throttled samples (docs/ci-gate.md). High may be infinite
  // (every baseline sample throttled).
  core::Interval judged_ci{1, 1};
  double p_slower = 1, p_faster = 1;   // one-sided Mann-Whitney p-values
  double p_slower_cutoff = 0, p_faster_cutoff = 0;  // significant when p <= this (the family's cutoffs)
  bool exact_p = false;
  double baseline_rel_stddev = 0, candidate_rel_stddev = 0;
  int64_t baseline_throttled_samples = 0, candidate_throttled_samples = 0;
  // Median SM clock under load of each side (results schema 1.1; 0 when not recorded). A difference
  // of core::kGateClockNoteChange or more is named in `reason`: it does not change the verdict (a regression can
  // itself lower the clock, through power), but it tells the reader what else moved.
  double baseline_sm_mhz = 0, candidate_sm_mhz = 0;
  double threshold = 0;                // slowdown threshold applied to this point
  std::string latency_verdict;         // what latency alone says, even when noise overrides it
  std::vector<CounterDelta> counters;  // filled under --counters when both sides have them
  std::string counters_note;           // why counters were not compared, when they were asked for
};

struct Comparison {
  Options options;
  std::string baseline_label, candidate_label;   // file paths or names, for the header
  std::string baseline_device, candidate_device; // "NVIDIA H200, driver 570.1, 1980 MHz, cuda"
  std::vector<std::string> device_differences;   // non-empty only with --allow-device-mismatch
  // Each run (baseline, candidate, re-run) whose recorded load exceeded its cores
  // (core::recorded_busy_warning): its timings moved with the machine's other work.
  std::vector<std::string> busy_warnings;
  std::vector<PointComparison> points;           // baseline order, then new points
  std::map<Verdict, int64_t> counts;
  // The family of tests: the compared points, and the cutoffs their p-values were held to (alpha with
  // Correction::none; the Benjamini-Hochberg cutoffs otherwise).
  int64_t family_size = 0;
  double p_slower_cutoff = 0, p_faster_cutoff = 0;
  // Geometric mean over compared points of the median ratio, with a bootstrap interval built from
  // the same resamples as the per-point intervals.
  int64_t geomean_points = 0;
  double geomean_ratio = 1;
  core::Interval geomean_ci{1, 1};
  int exit_code = 0;                   // attnprof::ExitCode: 0 pass, 1 regression, 3 inconclusive
  std::string summary;                 // one line, e.g. "FAIL: 2 slower, 1 error of 40 points"
  std::string rerun_label;             // the re-run that confirmed or cleared `slower` points, if any
};

// Compares two results. Throws InputError (one line) when the two were measured on another GPU
// model, driver, max SM clock or backend and options.allow_device_mismatch is false, or when an
// option is out of range.
Comparison compare(const core::Results& baseline, const core::Results& candidate, const Options&,
                   const std::string& baseline_label = "baseline",
                   const std::string& candidate_label = "candidate");

// Second stage of the gate: `rerun` compares the same baseline with a second, independent run of the
// candidate (typically of just the points `first` found slower, re-measured in a new process). A
// `slower` point of `first` stays a failure only if the re-run finds it slower too; otherwise it
// becomes `unconfirmed` (reported, not failing). A slower point the re-run lacks stays a failure.
// Other verdicts are left as they are: counters are counted, not timed, and errors are not noise.
// Recomputes the counts, summary and exit code. Two independent runs must both clear alpha and the
// threshold, so a shift between processes that one run shows by chance no longer fails the build.
void confirm(Comparison& first, const Comparison& rerun, const std::string& rerun_label);

// Percentile bootstrap interval of median(candidate) / median(baseline): each side is resampled
// independently with replacement (drawn as in gate/bootstrap.hpp: O(n log n + resamples)). Seeded,
// so equal inputs give equal intervals.
core::Interval bootstrap_ratio_ci(std::span<const double> baseline, std::span<const double> candidate,
                                  double confidence, int resamples, uint64_t seed);

// Parses "name=value" (as given to --kernel-threshold); throws InputError naming the token.
std::pair<std::string, double> parse_name_value(const std::string& token);

void to_json(nlohmann::json&, const CounterDelta&);
void to_json(nlohmann::json&, const PointComparison&);
void to_json(nlohmann::json&, const Comparison&);

}  // namespace attnprof::gate
