#include "core/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/results.hpp"  // SamplingStatus's JSON strings, kMaxSamplesPerPoint
#include "core/stats.hpp"

namespace attnprof::core {

using nlohmann::json;

namespace {

// Resolution of the written figures, in steps per unit: 10 ns of time, a tenth of a percent. Divided
// by an integer count of steps, a rounded value prints as its few digits (0.3, not 0.30000000000000004).
constexpr double kTimeStepsPerUs = 100;
constexpr double kValueStepsPerPct = 10;
constexpr double kStepsPerMs = 100;

bool busy(double v) { return v >= kTimelineIdlePct; }  // NaN is not busy

json rounded(double v, double steps_per_unit) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return std::round(v * steps_per_unit) / steps_per_unit;
}

double read_number(const json& v, std::string_view key) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  throw InputError(fmt::format("timeline field '{}' holds {}, not a number", key, escape::one_line(v.dump())));
}

std::vector<double> read_numbers(const json& j, std::string_view key) {
  const json& v = j.at(std::string(key));
  if (!v.is_array()) throw InputError(fmt::format("timeline field '{}' is not an array", key));
  if (v.size() > static_cast<size_t>(kMaxSamplesPerPoint))
    throw InputError(fmt::format("timeline field '{}' holds {} samples (at most {} are read)", key, v.size(),
                                 kMaxSamplesPerPoint));
  std::vector<double> out;
  out.reserve(v.size());
  for (const auto& x : v) out.push_back(read_number(x, key));
  return out;
}

template <class T>
void read_int(const json& j, const char* key, T& out) {
  if (const auto it = j.find(key); it != j.end() && !it->is_null()) out = json_int<T>(*it, key);
}

void read_double(const json& j, const char* key, double& out) {
  if (const auto it = j.find(key); it != j.end() && !it->is_null()) out = read_number(*it, key);
}

void read_string(const json& j, const char* key, std::string& out) {
  if (const auto it = j.find(key); it != j.end() && !it->is_null()) out = it->get<std::string>();
}

}  // namespace

const TimelineSeries* Timeline::find(std::string_view label) const {
  for (const auto& s : series)
    if (s.label == label) return &s;
  return nullptr;
}

void drop_idle_edges(Timeline& t) {
  const size_t n = t.t_us.size();
  size_t first = n, last = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool any = std::any_of(t.series.begin(), t.series.end(),
                                 [&](const TimelineSeries& s) { return i < s.values.size() && busy(s.values[i]); });
    if (!any) continue;
    first = std::min(first, i);
    last = i;
  }
  const auto keep = [&](auto& v) {
    if (first == n) {
      v.clear();
      return;
    }
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(std::min(last + 1, v.size())), v.end());
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(first, v.size())));
  };
  keep(t.t_us);
  for (auto& s : t.series) keep(s.values);
  if (!t.t_us.empty()) {
    const double t0 = t.t_us.front();
    for (double& x : t.t_us) x -= t0;
  }
}

void merge_samples(Timeline& t, size_t max_samples) {
  const size_t n = t.t_us.size();
  if (max_samples == 0 || n <= max_samples) return;
  const size_t run = (n + max_samples - 1) / max_samples;
  const auto merge = [&](std::vector<double>& v, bool first_of_run) {
    std::vector<double> out;
    out.reserve((v.size() + run - 1) / run);
    for (size_t i = 0; i < v.size(); i += run) {
      const size_t end = std::min(i + run, v.size());
      if (first_of_run) {
        out.push_back(v[i]);
        continue;
      }
      double sum = 0;
      for (size_t k = i; k < end; ++k) sum += v[k];
      out.push_back(sum / static_cast<double>(end - i));
    }
    v = std::move(out);
  };
  merge(t.t_us, true);
  for (auto& s : t.series) merge(s.values, false);
  t.merged *= static_cast<int64_t>(run);
}

TimelineSummary summarize_timeline(const Timeline& t) {
  TimelineSummary out;
  const size_t n = t.t_us.size();
  const double spacing = t.spacing_us();
  out.duration_us = static_cast<double>(n) * spacing;
  const TimelineSeries* lead = nullptr;
  double lead_mean = 0;
  for (const auto& s : t.series) {
    SeriesSummary sum{.label = s.label};
    size_t counted = 0;
    for (double v : s.values) {
      if (!std::isfinite(v)) continue;
      sum.mean += v;
      sum.max = std::max(sum.max, v);
      ++counted;
    }
    if (counted > 0) sum.mean /= static_cast<double>(counted);
    if (s.label != kTimelineWarpsLabel && s.values.size() == n && sum.mean > lead_mean) {
      lead = &s;
      lead_mean = sum.mean;
    }
    out.series.push_back(std::move(sum));
  }
  if (const TimelineSeries* tensor = t.find(kTimelineTensorLabel); tensor != nullptr && !tensor->values.empty()) {
    const auto busy_samples = std::count_if(tensor->values.begin(), tensor->values.end(),
                                            [](double v) { return v >= kTensorBusyPct; });
    out.tensor_busy_share = static_cast<double>(busy_samples) / static_cast<double>(tensor->values.size());
  }
  if (lead == nullptr || n == 0) return out;
  std::vector<double> finite;
  for (double v : lead->values)
    if (std::isfinite(v)) finite.push_back(v);
  const double threshold = kSteadyFraction * quantile(finite, 0.9);
  if (!busy(threshold)) return out;
  size_t first = n, last = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(lead->values[i] >= threshold)) continue;
    first = std::min(first, i);
    last = i;
  }
  TimelinePhases& p = out.phases;
  p.found = true;
  p.lead = lead->label;
  p.threshold = threshold;
  p.prologue_us = t.t_us[first] - t.t_us.front();
  const double steady_end = t.t_us[last] + spacing;
  p.steady_us = steady_end - t.t_us[first];
  p.tail_us = std::max(t.t_us.back() + spacing - steady_end, 0.0);
  return out;
}

void to_json(json& j, const Timeline& t) {
  json times = json::array();
  for (double x : t.t_us) times.push_back(rounded(x, kTimeStepsPerUs));
  json series = json::array();
  for (const auto& s : t.series) {
    json values = json::array();
    for (double v : s.values) values.push_back(rounded(v, kValueStepsPerPct));
    series.push_back({{"metric", s.metric}, {"label", s.label}, {"unit", s.unit}, {"values", std::move(values)}});
  }
  j = {{"status", t.status},         {"reason", t.reason},
       {"calls", t.calls},           {"call_us", rounded(t.call_us, kTimeStepsPerUs)},
       {"interval_ns", t.interval_ns}, {"merged", t.merged},
       {"samples_taken", t.samples_taken}, {"profiling_ms", rounded(t.profiling_ms, kStepsPerMs)},
       {"t_us", std::move(times)},   {"series", std::move(series)}};
}

void from_json(const json& j, Timeline& t) {
  if (!j.is_object()) throw InputError("timeline is not an object");
  t = Timeline{};
  if (const auto it = j.find("status"); it != j.end() && !it->is_null()) t.status = it->get<SamplingStatus>();
  read_string(j, "reason", t.reason);
  read_int(j, "calls", t.calls);
  read_double(j, "call_us", t.call_us);
  read_int(j, "interval_ns", t.interval_ns);
  read_int(j, "merged", t.merged);
  read_int(j, "samples_taken", t.samples_taken);
  read_double(j, "profiling_ms", t.profiling_ms);
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"calls", t.calls}, {"interval_ns", t.interval_ns},
                                   {"merged", t.merged}, {"samples_taken", t.samples_taken}})
    if (value < 0) throw InputError(fmt::format("timeline field '{}' is {}", key, value));
  if (j.contains("t_us")) t.t_us = read_numbers(j, "t_us");
  if (const auto it = j.find("series"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw InputError("timeline field 'series' is not an array");
    for (const auto& s : *it) {
      if (!s.is_object()) throw InputError("a timeline series is not an object");
      TimelineSeries series;
      read_string(s, "metric", series.metric);
      read_string(s, "label", series.label);
      read_string(s, "unit", series.unit);
      series.values = s.contains("values") ? read_numbers(s, "values") : std::vector<double>{};
      if (series.values.size() != t.t_us.size())
        throw InputError(fmt::format("timeline series '{}' holds {} values for {} sample times",
                                     escape::one_line(series.label), series.values.size(), t.t_us.size()));
      t.series.push_back(std::move(series));
    }
  }
}

}  // namespace attnprof::core
