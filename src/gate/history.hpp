// `attnprof history`: one point's P50 across several runs in the order given, what a team opens
// after a gate fails. Between each pair of consecutive runs the gate's own decision (gate::compare:
// Mann-Whitney U, threshold, noise rules) marks the change points, so a step in the history is a
// step the gate would have failed (or passed as faster) on. Pure computation on core::Results; the
// renderers below turn a History into Markdown, HTML or a terminal summary. docs/ci-gate.md.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "gate/compare.hpp"

namespace attnprof::gate {

struct HistoryRun {
  std::string label;            // the file, as given
  std::string revision, date;   // context.git_revision, context.date_utc
  std::string device;           // "NVIDIA H200, driver 13.0, ..., backend cuda"
};

// One point in one run.
struct HistoryValue {
  bool present = false;         // the run has the point
  core::Status status = core::Status::ok;
  double p50_us = 0, ci_low_us = 0, ci_high_us = 0;  // meaningful when status is ok
  // The gate's verdict from the previous run to this one (same for the first run); `ratio` is this
  // run's median over the previous one's when both had samples.
  Verdict step = Verdict::same;
  double ratio = 1, p_value = 1;
  std::string reason;
};

struct HistoryPoint {
  std::string key, shape, kernel;
  std::vector<HistoryValue> values;  // one per run, in run order
  // The largest step slowdown the gate called `slower` (1 when none), and last over first P50 of the
  // runs where the point was ok.
  double worst_step_ratio = 1;
  double overall_ratio = 1;
  int slower_steps = 0, faster_steps = 0;
};

struct History {
  std::vector<HistoryRun> runs;
  std::vector<HistoryPoint> points;  // worst regressions first (see build_history)
  std::vector<std::string> notes;    // device changes between runs that were allowed, ...
  std::vector<std::string> busy_warnings;  // each run whose recorded load exceeded its cores
  Options options;
};

// Compares each run with the one before it by gate::compare(options). Points are ordered by their
// worst slower step (largest first), then by the overall ratio (largest first), then by key.
// Throws InputError with fewer than two runs, or where gate::compare does (a device change without
// options.allow_device_mismatch).
History build_history(const std::vector<core::Results>& runs, const std::vector<std::string>& labels,
                      const Options& options);

std::string render_history_markdown(const History&);
// One self-contained HTML file: no script, one inline SVG per point (P50 and its interval per run,
// change points marked).
std::string render_history_html(const History&);
// A few lines: the runs, the counts of change points, the worst regressions.
std::string render_history_terminal(const History&, size_t max_points = 10);

}  // namespace attnprof::gate
