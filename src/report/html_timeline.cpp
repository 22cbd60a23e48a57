#include "report/html_timeline.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "core/escape.hpp"
#include "core/results.hpp"  // to_string(SamplingStatus)

namespace attnprof::report::detail {

namespace {

std::string e(std::string_view s) { return core::escape::xml(s); }

// The chart's frame [px]: the plot area inside margins for the axis labels.
constexpr double kWidth = 640, kHeight = 170;
constexpr double kLeft = 34, kRight = 8, kTop = 8, kBottom = 22;
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;
constexpr double kFullScalePct = 100;

// One colour per metric in kTimelineMetrics order (a metric of another name takes the next free one);
// warps active, residency rather than a unit's work, is drawn dashed.
constexpr std::array<const char*, 8> kColours{"#d62728", "#1f77b4", "#2ca02c", "#9467bd",
                                              "#8c564b", "#ff7f0e", "#7f7f7f", "#17becf"};

const char* colour_of(const core::TimelineSeries& s, size_t index) {
  for (size_t i = 0; i < core::kTimelineMetrics.size(); ++i)
    if (s.label == core::kTimelineMetrics[i].label) return kColours[i];
  return kColours[std::min(index, kColours.size() - 1)];
}

double y_of(double pct) { return kTop + kPlotHeight * (1 - std::clamp(pct, 0.0, kFullScalePct) / kFullScalePct); }

std::string chart(const core::Timeline& full, const core::TimelineSummary& summary) {
  core::Timeline t = full;
  core::merge_samples(t, kChartPoints);
  const double duration = std::max(summary.duration_us, 1e-9);
  const auto x_of = [&](double us) { return kLeft + kPlotWidth * std::clamp(us / duration, 0.0, 1.0); };
  std::string svg = fmt::format(
      "<svg class=\"timeline\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
      "aria-label=\"metrics against time over the call\">",
      kWidth, kHeight);
  if (summary.phases.found) {  // prologue and tail shaded
    const auto shade = [&](double from_us, double to_us) {
      if (to_us <= from_us) return;
      svg += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#000\" fill-opacity=\"0.06\"/>",
                         x_of(from_us), kTop, x_of(to_us) - x_of(from_us), kPlotHeight);
    };
    shade(0, summary.phases.prologue_us);
    shade(duration - summary.phases.tail_us, duration);
  }
  for (const double pct : {0.0, 50.0, 100.0}) {
    svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ccc\"/>", kLeft, kWidth - kRight,
                       y_of(pct), y_of(pct));
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{:.0f}%</text>", kLeft - 3,
                       y_of(pct) + 3, pct);
  }
  for (const double at : {0.0, 0.5, 1.0}) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"{}\">{:.4g} us</text>",
                       x_of(at * duration), kHeight - 6, at == 0 ? "start" : at == 1 ? "end" : "middle", at * duration);
  }
  const double half_step = t.spacing_us() / 2;  // a sample drawn at its middle
  for (size_t i = 0; i < t.series.size(); ++i) {
    const core::TimelineSeries& s = t.series[i];
    std::string points;
    for (size_t k = 0; k < s.values.size() && k < t.t_us.size(); ++k) {
      if (!std::isfinite(s.values[k])) continue;
      points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", x_of(t.t_us[k] + half_step), y_of(s.values[k]));
    }
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.2\"{} points=\"{}\"><title>{}</title></polyline>",
                       colour_of(s, i), s.label == core::kTimelineWarpsLabel ? " stroke-dasharray=\"4 2\"" : "", points,
                       e(s.label));
  }
  return svg + "</svg>";
}

}  // namespace

std::string timeline_block(const core::Timeline& t) {
  std::string h = "<h3>Timeline</h3><p>status <b>" + e(core::to_string(t.status)) + "</b>";
  if (!t.reason.empty()) h += ": " + e(t.reason);
  const core::TimelineSummary summary = core::summarize_timeline(t);
  if (!t.t_us.empty())
    h += fmt::format(" &middot; {} samples ({} taken), one every {:.4g} us, over {} call{} of {:.4g} us; {:.0f} ms",
                     t.t_us.size(), t.samples_taken, t.spacing_us(), t.calls, t.calls == 1 ? "" : "s", t.call_us,
                     t.profiling_ms);
  h += "</p>";
  if (t.t_us.empty() || t.series.empty()) return h;
  h += chart(t, summary);
  h += "<p class=\"legend\">";
  for (size_t i = 0; i < t.series.size() && i < summary.series.size(); ++i) {
    const core::SeriesSummary& s = summary.series[i];
    h += fmt::format("<span style=\"color:{}\">&#9632;</span> {} {} mean {:.0f}, max {:.0f} &nbsp; ",
                     colour_of(t.series[i], i), e(s.label), e(t.series[i].unit), s.mean, s.max);
  }
  h += "</p>";
  const core::TimelinePhases& p = summary.phases;
  if (p.found)
    h += fmt::format("<p>prologue {:.4g} us, steady state {:.4g} us, tail {:.4g} us (shaded: before and after "
                     "the {} at {:.0f}% or more, {:g} of its 90th percentile)",
                     p.prologue_us, p.steady_us, p.tail_us, e(p.lead), p.threshold, core::kSteadyFraction);
  if (summary.tensor_busy_share)
    h += fmt::format("{}tensor pipe at {:.0f}% or more in {:.0f}% of the call", p.found ? "; " : "<p>",
                     core::kTensorBusyPct, 100 * *summary.tensor_busy_share);
  if (p.found || summary.tensor_busy_share) h += "</p>";
  return h;
}

}  // namespace attnprof::report::detail
