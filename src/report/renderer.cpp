// The list of renderers, the analysis they read, and the one way their output reaches a file
// (core::write_file) or the terminal.
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "core/diagnosis.hpp"
#include "core/files.hpp"
#include "report/formats.hpp"
#include "report/report.hpp"

namespace attnprof::report {

const std::vector<const Renderer*>& renderers() {
  static const std::vector<const Renderer*> kAll = {&detail::terminal_renderer(), &detail::markdown_renderer(),
                                                    &detail::csv_renderer(), &detail::html_renderer(),
                                                    &detail::openmetrics_renderer()};
  return kAll;
}

const Renderer& renderer(std::string_view format) {
  for (const Renderer* r : renderers())
    if (r->format() == format) return *r;
  throw std::out_of_range("no renderer for the format '" + std::string(format) + "'");
}

std::string render(const Renderer& r, const core::Results& results) {
  std::ostringstream text;
  r.render(results, text);
  return text.str();
}

std::vector<core::NamedPath> named_paths(const std::vector<Output>& outputs) {
  std::vector<core::NamedPath> paths;
  for (const auto& o : outputs) paths.push_back({o.option, o.path});
  return paths;
}

void write_outputs(const core::Results& results, const std::vector<Output>& outputs, MissingFolder missing) {
  for (const auto& o : outputs) {
    if (o.path.empty()) continue;
    const std::string text = render(renderer(o.format), results);
    if (const std::filesystem::path p(o.path); missing == MissingFolder::create && p.has_parent_path()) {
      std::error_code ec;  // a folder that cannot be made fails the write below, which says why
      std::filesystem::create_directories(p.parent_path(), ec);
    }
    core::write_file(o.path, text);
  }
}

void analyse(core::Results& results) { core::annotate(results); }

void render_all(const core::Results& results, const Outputs& outputs) {
  write_outputs(results, outputs.files, outputs.missing_folder);
  if (outputs.terminal) renderer("terminal").render(results, *outputs.terminal);
}

}  // namespace attnprof::report
