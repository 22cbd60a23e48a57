// The series charts of the HTML report, decided from the results: which points share an x axis, a
// panel and a line. Decode points (core::is_decode) get charts of their own, with the keys on the x
// axis and bandwidth on the y axis; the others are prefill. A line is one kernel at one variant: the
// shape fields the user varied that the panel and the x axis do not fix. A field the sweep spec tied
// to another (`tokens=` ties batch to seq_q, `dim=` heads to hdim) is named by its tie (tokens 16384,
// dim 2048), so the points of one tie make one line. The page's script draws what this decides
// (html_assets.cpp). Internal to src/report/.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/results.hpp"
#include "report/view.hpp"

namespace attnprof::report::detail {

// The most variants one chart draws: each needs a dash pattern of its own (html_assets.cpp's `dashes`
// holds this many). A chart with more moves variant fields into its panels, the first one first,
// until its variants fit.
inline constexpr size_t kMaxSeriesVariants = 8;

struct SeriesChart {
  std::string id;       // "prefill" or "decode"
  std::string x_field;  // the swept shape field: "seq_q", "seq_k", "batch", "heads" or "hdim"
  std::string x_title;
  std::vector<std::string> panels;    // in reading order: dtype, hdim, mask, then the fields moved here
  std::vector<std::string> variants;  // first seen first; a single "" when every kernel has one line
  std::string variant_title;          // the fields a variant names: "batch, heads"
};

// Where a point is drawn: indices into SeriesLayout::charts, and into that chart's panels and variants.
struct SeriesPlace {
  int chart = -1;  // -1: not drawn (not ok, or no positive x)
  int panel = -1;
  int variant = -1;
};

struct SeriesLayout {
  std::vector<SeriesChart> charts;  // prefill first, then decode; only those with points
  std::vector<SeriesPlace> places;  // one per row
};

SeriesLayout series_layout(const core::Results&, const std::vector<Row>&);

// attnprof's own kernels: neither a plugin's (Context::plugins) nor the Python bridge's (torch:, py:).
bool own_kernel(const core::Context&, std::string_view kernel);

}  // namespace attnprof::report::detail
