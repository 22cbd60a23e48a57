// OpenMetrics text exposition (https://openmetrics.io, the format Prometheus scrapes and its node
// exporter's textfile collector reads): one gauge family per measured quantity, one sample per point,
// labelled by kernel, the shape's fields, device, backend and revision. Metric families are written
// whole, one after another, with TYPE, UNIT and HELP first, and the text ends with "# EOF", as the
// format requires. docs/openmetrics.md lists the families and an alert rule.
#include <cmath>
#include <functional>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/stats.hpp"
#include "report/formats.hpp"
#include "report/report.hpp"
#include "report/view.hpp"

namespace attnprof::report {

namespace {

using core::finite;

// Label values: backslash, double quote and line feed are the three escapes the format has.
std::string label_value(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

// Numbers in their shortest round-trip form; the format spells the specials NaN, +Inf and -Inf.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

struct Label {
  std::string name, value;
};

std::string label_set(const std::vector<Label>& labels) {
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i)
    out += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].name, label_value(labels[i].value));
  return out + "}";
}

// Every field of the shape's label (core::Shape::label) is a label here, so that two points never share
// a label set (a strict parser rejects a repeated one, and with it the whole text). The fields most
// points lack (a value head dim of its own, a paged cache, KV splits, a window, a backward pass, a
// packed batch) are labels only where set: a query without them (window="") selects the points without them, and the
// series of the other points keep the labels they always had.
std::vector<Label> point_labels(const core::Results& results, const detail::Row& row) {
  const auto& s = row.record->shape;
  const auto& ctx = results.context;
  std::vector<Label> labels = {{"kernel", row.kernel},
                               {"batch", std::to_string(s.batch)},
                               {"heads", std::to_string(s.heads)},
                               {"kv_heads", std::to_string(s.kv_heads)},
                               {"seq_q", std::to_string(s.seq_q)},
                               {"seq_k", std::to_string(s.seq_k)},
                               {"hdim", std::to_string(s.hdim)},
                               {"causal", s.causal ? "1" : "0"},
                               {"dtype", std::string(core::to_string(s.dtype))}};
  if (s.distinct_hdim_v()) labels.push_back({"hdim_v", std::to_string(s.hdim_v)});
  if (s.page_size > 0) labels.push_back({"page_size", std::to_string(s.page_size)});
  if (s.kv_splits > 0) labels.push_back({"kv_splits", std::to_string(s.kv_splits)});
  if (s.window > 0) labels.push_back({"window", std::to_string(s.window)});
  if (s.backward()) labels.push_back({"pass", std::string(core::to_string(s.pass))});
  if (s.varlen()) {
    // As the shape's label: a list (or a shape without its distribution's text) by its lengths.
    std::string lengths = s.lengths;
    if (lengths.empty() || lengths.starts_with("list:")) lengths = fmt::format("list:{}", fmt::join(s.seq_lens, "/"));
    labels.push_back({"lengths", lengths});
    labels.push_back({"lengths_seed", std::to_string(s.lengths_seed)});
    labels.push_back({"tokens", std::to_string(s.tokens_q())});
  }
  labels.push_back({"device", ctx.device.name});
  labels.push_back({"backend", std::string(core::to_string(ctx.backend))});
  labels.push_back({"revision", ctx.git_revision});
  return labels;
}

struct Family {
  std::string name, type, unit, help;
  // The value of one point, or nothing when the point has none (not measured, no counters).
  std::function<std::optional<double>(const detail::Row&)> value;
  // Labels of this family beyond the point's (none when empty).
  std::function<std::vector<Label>(const detail::Row&)> extra_labels = {};
};

class OpenMetricsRenderer final : public Renderer {
 public:
  std::string_view format() const override { return "openmetrics"; }
  void render(const core::Results& results, std::ostream& out) const override;
};

}  // namespace

const Renderer& detail::openmetrics_renderer() {
  static const OpenMetricsRenderer renderer;
  return renderer;
}

void OpenMetricsRenderer::render(const core::Results& results, std::ostream& out) const {
  const auto rows = detail::make_rows(results);
  const auto& ctx = results.context;
  auto min_bytes = [](const detail::Row& r) {
    return r.record->cost.min_bytes_read + r.record->cost.min_bytes_write;
  };
  const std::vector<Family> families = {
      {"attnprof_tflops", "gauge", "", "Achieved TFLOP/s at the P50 (exact FLOPs of the unmasked scores)",
       [](const detail::Row& r) { return r.measured ? finite(r.tflops) : std::nullopt; }},
      {"attnprof_tflops_fa_convention", "gauge", "",
       "Achieved TFLOP/s at the P50 under FlashAttention's convention (dense FLOPs, halved when causal)",
       [](const detail::Row& r) { return r.measured ? finite(r.record->tflops_fa_convention) : std::nullopt; }},
      {"attnprof_latency_p50_seconds", "gauge", "seconds", "Median latency of one call",
       [](const detail::Row& r) { return r.p50_us ? std::optional(*r.p50_us * 1e-6) : std::nullopt; }},
      {"attnprof_latency_p99_seconds", "gauge", "seconds",
       "99th percentile latency of one call; estimate=\"max\": the sample maximum, the point having fewer "
       "than the 368 samples that bound a P99",
       [](const detail::Row& r) { return r.p99_us ? std::optional(*r.p99_us * 1e-6) : std::nullopt; },
       [](const detail::Row& r) { return std::vector<Label>{{"estimate", r.p99_note.empty() ? "p99" : "max"}}; }},
      {"attnprof_dram_bytes", "gauge", "bytes",
       "DRAM bytes read and written per call (counters when collected, else the cost model's minimum)",
       [](const detail::Row& r) { return finite(r.dram_bytes); }},
      {"attnprof_min_dram_bytes", "gauge", "bytes", "The cost model's minimum DRAM bytes per call (Q, K, V read, O written)",
       [&](const detail::Row& r) { return r.measured ? std::optional(min_bytes(r)) : std::nullopt; }},
      {"attnprof_dram_over_minimum_ratio", "gauge", "ratio", "DRAM bytes per call over the cost model's minimum",
       [&](const detail::Row& r) -> std::optional<double> {
         if (!r.dram_bytes || !(min_bytes(r) > 0)) return std::nullopt;
         return finite(*r.dram_bytes / min_bytes(r));
       }},
      {"attnprof_roof_percent", "gauge", "percent", "Achieved FLOP/s as a percentage of the roofline at the point's intensity",
       [](const detail::Row& r) { return finite(r.pct_of_roof); }},
  };

  for (const auto& f : families) {
    out << fmt::format("# TYPE {} {}\n", f.name, f.type);
    if (!f.unit.empty()) out << fmt::format("# UNIT {} {}\n", f.name, f.unit);
    out << fmt::format("# HELP {} {}\n", f.name, f.help);
    for (const auto& row : rows)
      if (const auto v = f.value(row)) {
        auto labels = point_labels(results, row);
        if (f.extra_labels)
          for (auto& l : f.extra_labels(row)) labels.push_back(std::move(l));
        out << f.name << label_set(labels) << ' ' << number(*v) << '\n';
      }
  }

  // The verdict as an info family: one sample of value 1 per diagnosed point, the verdict and flags
  // in its labels, so that a query can select on them.
  out << "# TYPE attnprof_point_verdict info\n"
         "# HELP attnprof_point_verdict Diagnosis of the point (docs/diagnosis.md)\n";
  for (const auto& row : rows) {
    if (!row.measured) continue;
    auto labels = point_labels(results, row);
    labels.push_back({"verdict", row.verdict.empty() ? "unknown" : row.verdict});
    labels.push_back({"flags", fmt::format("{}", fmt::join(row.flags, ","))});
    out << "attnprof_point_verdict_info" << label_set(labels) << " 1\n";
  }
  out << "# TYPE attnprof_point_status info\n"
         "# HELP attnprof_point_status Status of every point of the sweep (ok, incorrect, unsupported, failed, ...)\n";
  for (const auto& row : rows) {
    auto labels = point_labels(results, row);
    labels.push_back({"status", row.status});
    out << "attnprof_point_status_info" << label_set(labels) << " 1\n";
  }
  out << "# TYPE attnprof_run info\n"
         "# HELP attnprof_run The run these points come from\n"
      << "attnprof_run_info"
      << label_set({{"device", ctx.device.name},
                    {"backend", std::string(core::to_string(ctx.backend))},
                    {"revision", ctx.git_revision},
                    {"version", ctx.tool_version},
                    {"date", ctx.date_utc},
                    {"host", ctx.host}})
      << " 1\n";
  out << "# EOF\n";
}

}  // namespace attnprof::report
