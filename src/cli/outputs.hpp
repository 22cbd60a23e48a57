// The report files `attnprof sweep` and `attnprof report` write (--html, --md, --csv, --openmetrics):
// declared once here, each a format of report::renderers(), written by report::render_all.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "report/report.hpp"

namespace attnprof::cli {

struct OutputOption {
  const char* option;
  const char* format;  // a report::Renderer's format()
  const char* what;
};
inline constexpr std::array<OutputOption, 4> kOutputOptions = {{
    {"--html", "html", "a self-contained HTML report"},
    {"--md", "markdown", "a Markdown summary (a CI job summary)"},
    {"--csv", "csv", "one CSV row per point"},
    {"--openmetrics", "openmetrics", "the points as OpenMetrics text (Prometheus; docs/openmetrics.md)"},
}};

// The paths given, one per kOutputOptions entry (empty: not asked for).
struct OutputPaths {
  std::array<std::string, kOutputOptions.size()> paths;

  std::vector<report::Output> outputs() const {
    std::vector<report::Output> out;
    for (size_t i = 0; i < paths.size(); ++i)
      if (!paths[i].empty()) out.push_back({kOutputOptions[i].format, kOutputOptions[i].option, paths[i]});
    return out;
  }
};

inline void add_output_options(CLI::App& cmd, OutputPaths& paths) {
  for (size_t i = 0; i < kOutputOptions.size(); ++i)
    cmd.add_option(kOutputOptions[i].option, paths.paths[i],
                   std::string("Also write ") + kOutputOptions[i].what + " to this file");
}

}  // namespace attnprof::cli
