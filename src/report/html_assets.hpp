// The HTML report's style sheet and script, inlined into every report so that it opens from disk
// with no network. The script reads only the JSON block the page embeds and builds every chart
// element with createElementNS/textContent (never innerHTML), so data cannot become markup.
#pragma once
#include <string_view>

namespace attnprof::report::detail {

std::string_view report_css();
std::string_view report_js();

}  // namespace attnprof::report::detail
