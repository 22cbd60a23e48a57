// The known-answer set of `attnprof calibrate`: probe kernels whose bound is known by construction,
// each with the verdict core::diagnose must give it. The probes run through the same measurement as
// attention points (src/measure/calibrate.hpp); this part checks their verdicts and needs no GPU.
// To change what a probe is expected to be, change its row in calibration_probes() (calibration.cpp).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnosis_model.hpp"
#include "core/results.hpp"

namespace attnprof::core {

struct CalibrationProbe {
  std::string_view name;              // the record's kernel: "hbm-copy", ...
  std::string_view expected_verdict;  // one of core::kVerdict* (diagnosis.hpp)
  DType dtype;                        // whose roof the probe is placed against
  std::string_view what;              // one line: what it does and why that is its bound
  // The memory level a memory-bound probe must name (metrics.memory_level), where it is known by
  // construction; checked when the per-level counters were collected.
  std::optional<MemoryLevel> expected_level = std::nullopt;
};

// Every probe, in the order calibrate runs and prints them.
const std::vector<CalibrationProbe>& calibration_probes();
// The probe of that name; nullptr when there is none.
const CalibrationProbe* find_calibration_probe(std::string_view name);

struct CalibrationRow {
  std::string probe, expected, got;  // got: the verdict, or the record's status when it did not run ok
  std::optional<MemoryLevel> expected_level, got_level;  // got_level: only when the level was counted
  bool matches = false;
  double p50_us = 0;
  double bytes_per_s = 0, flops_per_s = 0;              // the analytic cost over the P50
  std::optional<double> compute_sol_pct, memory_sol_pct;  // as the diagnosis read them
  std::string sol_source;
};

// Diagnoses every record (core::annotate) and compares each probe's verdict with its expected one; a
// probe of the table without a record reads "missing". One row per probe of calibration_probes().
std::vector<CalibrationRow> check_calibration(Results&);
// True when every row matches.
bool all_match(const std::vector<CalibrationRow>&);

}  // namespace attnprof::core
