// A point's timeline in the HTML report's drill-down (`sweep --timeline`): its metrics against time as
// an inline SVG line chart, drawn here rather than by the page's script so that a drill-down is
// complete without it, with each metric's mean and maximum and the call's prologue, steady state and
// tail (core::summarize_timeline). The chart holds at most kChartPoints points per metric (neighbours
// averaged), which keeps a report of many points small. Internal to src/report/.
#pragma once
#include <cstddef>
#include <string>

#include "core/timeline.hpp"

namespace attnprof::report::detail {

inline constexpr size_t kChartPoints = 160;

// The "Timeline" block: a heading, the status and how it was sampled, the chart and its legend.
std::string timeline_block(const core::Timeline&);

}  // namespace attnprof::report::detail
