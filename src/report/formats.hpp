// The renderer of each format, each defined in its own file (terminal.cpp, markdown.cpp, csv.cpp,
// html.cpp, openmetrics.cpp); renderer.cpp lists them. Internal to src/report/.
#pragma once
#include "report/report.hpp"

namespace attnprof::report::detail {

const Renderer& terminal_renderer();
const Renderer& markdown_renderer();
const Renderer& csv_renderer();
const Renderer& html_renderer();
const Renderer& openmetrics_renderer();

}  // namespace attnprof::report::detail
