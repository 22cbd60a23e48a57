#include "gate/history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/host_load.hpp"

namespace attnprof::gate {

namespace {

std::string describe(const core::Context& c) {
  std::string s = c.device.name.empty() ? "unknown device" : c.device.name;
  if (!c.device.driver_version.empty()) s += ", driver " + c.device.driver_version;
  return s + ", backend " + (c.backend == core::BackendKind::none ? std::string("?") : std::string(core::to_string(c.backend)));
}

HistoryValue value_of(const core::Record& r) {
  HistoryValue v;
  v.present = true;
  v.status = r.status;
  v.p50_us = r.latency.p50_us;
  v.ci_low_us = r.latency.p50_ci_low_us;
  v.ci_high_us = r.latency.p50_ci_high_us;
  // The P50's interval in a results file is the wider of a bootstrap and a batch-median interval
  // (docs/statistics.md); the latter, a mean +- t x spread, can reach past the samples (below zero
  // with few, scattered samples). A median lies within its samples, and a latency is never negative:
  // the interval shown is clamped to that.
  double lowest = 0, highest = std::numeric_limits<double>::infinity();
  bool any = false;
  for (double s : r.samples_us) {
    if (!std::isfinite(s)) continue;
    lowest = any ? std::min(lowest, s) : s;
    highest = any ? std::max(highest, s) : s;
    any = true;
  }
  lowest = std::max(lowest, 0.0);
  v.ci_low_us = std::clamp(v.ci_low_us, lowest, std::max(lowest, highest));
  v.ci_high_us = std::clamp(v.ci_high_us, lowest, std::max(lowest, highest));
  return v;
}

}  // namespace

History build_history(const std::vector<core::Results>& runs, const std::vector<std::string>& labels,
                      const Options& options) {
  if (runs.size() < 2) throw InputError(fmt::format("history needs two runs or more, got {}", runs.size()));
  History h;
  h.options = options;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& c = runs[i].context;
    h.runs.push_back({i < labels.size() ? labels[i] : fmt::format("run {}", i + 1), c.git_revision, c.date_utc,
                      describe(c)});
    if (auto w = core::recorded_busy_warning(c, h.runs.back().label)) h.busy_warnings.push_back(*w);
  }

  // Every point of any run, in the order first seen.
  std::map<std::string, size_t> index;
  for (size_t run = 0; run < runs.size(); ++run) {
    for (const auto& r : runs[run].records) {
      const std::string key = core::point_key(r);
      auto [it, inserted] = index.emplace(key, h.points.size());
      if (inserted) {
        HistoryPoint p;
        p.key = key;
        p.shape = r.shape.label();
        p.kernel = r.kernel;
        p.values.resize(runs.size());
        h.points.push_back(std::move(p));
      }
      HistoryValue& v = h.points[it->second].values[run];
      if (!v.present) v = value_of(r);  // a duplicate key: the first record stands, as in the gate
    }
  }

  // The gate between consecutive runs.
  for (size_t run = 1; run < runs.size(); ++run) {
    const Comparison cmp = compare(runs[run - 1], runs[run], options, h.runs[run - 1].label, h.runs[run].label);
    for (const auto& d : cmp.device_differences)
      h.notes.push_back(fmt::format("{} -> {}: {}", h.runs[run - 1].label, h.runs[run].label, d));
    for (const auto& pc : cmp.points) {
      const auto it = index.find(pc.key);
      if (it == index.end()) continue;
      HistoryValue& v = h.points[it->second].values[run];
      v.step = pc.verdict;
      v.reason = pc.reason;
      if (pc.compared) {
        v.ratio = pc.ratio;
        v.p_value = pc.ratio >= 1 ? pc.p_slower : pc.p_faster;
      }
    }
  }

  for (auto& p : h.points) {
    const HistoryValue* first = nullptr;
    const HistoryValue* last = nullptr;
    for (const auto& v : p.values) {
      if (v.step == Verdict::slower) {
        ++p.slower_steps;
        p.worst_step_ratio = std::max(p.worst_step_ratio, v.ratio);
      }
      if (v.step == Verdict::faster) ++p.faster_steps;
      if (v.present && v.status == core::Status::ok && v.p50_us > 0) {
        if (!first) first = &v;
        last = &v;
      }
    }
    if (first && last) p.overall_ratio = last->p50_us / first->p50_us;
  }
  std::stable_sort(h.points.begin(), h.points.end(), [](const HistoryPoint& a, const HistoryPoint& b) {
    if (a.worst_step_ratio != b.worst_step_ratio) return a.worst_step_ratio > b.worst_step_ratio;
    if (a.overall_ratio != b.overall_ratio) return a.overall_ratio > b.overall_ratio;
    return a.key < b.key;
  });
  return h;
}

}  // namespace attnprof::gate
