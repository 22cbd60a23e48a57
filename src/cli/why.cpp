// attnprof why BASELINE CANDIDATE [RESULTS...] [--shape S] [--top N] [--json]: the P50 gap between two
// kernels at each shape both ran, decomposed (core::why). A side is a kernel of the RESULTS files, or
// FILE:KERNEL (that kernel in that results file), or FILE (the other side's kernel, or the one kernel
// both files hold): two builds of one kernel are `why base.json:fused new.json:fused`.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/validators.hpp"
#include "core/errors.hpp"
#include "core/results.hpp"
#include "core/why.hpp"
#include "report/why.hpp"

namespace attnprof::cli {

namespace {

struct WhyArgs {
  std::string baseline, candidate;
  std::vector<std::string> results;
  std::string shape;
  size_t top = 6;
  bool json = false;
};

// One side as the command line names it: a kernel (of the RESULTS files, or of its own file).
struct SideSpec {
  std::string text;                 // as given
  std::optional<std::string> file;  // FILE or FILE:KERNEL
  std::string kernel;               // empty for a bare FILE
};

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// The results files, each read once, by path as given.
class Files {
 public:
  const core::Results& get(const std::string& path) {
    auto it = read_.find(path);
    if (it == read_.end()) {
      it = read_.emplace(path, std::make_unique<core::Results>(core::read_results(path))).first;
      order_.push_back(path);
    }
    return *it->second;
  }
  const std::vector<std::string>& order() const { return order_; }

 private:
  std::map<std::string, std::unique_ptr<core::Results>> read_;
  std::vector<std::string> order_;
};

bool holds_kernel(const core::Results& r, const std::string& kernel) {
  return std::any_of(r.records.begin(), r.records.end(), [&](const core::Record& rec) { return rec.kernel == kernel; });
}

std::vector<std::string> kernels_of(const core::Results& r) {
  std::vector<std::string> kernels;
  for (const auto& rec : r.records)
    if (std::find(kernels.begin(), kernels.end(), rec.kernel) == kernels.end()) kernels.push_back(rec.kernel);
  return kernels;
}

// A kernel of the RESULTS files when one holds it; else FILE, or FILE:KERNEL split at the first ':'
// whose left part is a file (kernel names hold ':' too: torch:cudnn, py:mod:attn).
SideSpec parse_side(const std::string& text, const std::vector<std::string>& results, Files& files) {
  for (const auto& path : results)
    if (holds_kernel(files.get(path), text)) return {.text = text, .file = std::nullopt, .kernel = text};
  if (is_file(text)) return {.text = text, .file = text, .kernel = {}};
  for (size_t colon = text.find(':'); colon != std::string::npos; colon = text.find(':', colon + 1))
    if (colon > 0 && is_file(text.substr(0, colon)))
      return {.text = text, .file = text.substr(0, colon), .kernel = text.substr(colon + 1)};
  if (results.empty())
    throw InputError(fmt::format("'{}' is not a results file (FILE or FILE:KERNEL), and no RESULTS were given to find "
                                 "the kernel in",
                                 text));
  std::vector<std::string> kernels;
  for (const auto& path : results)
    for (const auto& k : kernels_of(files.get(path)))
      if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
  throw InputError(fmt::format("'{}' is neither a kernel of {} (kernels: {}) nor a results file", text,
                               fmt::join(results, ", "), fmt::join(kernels, ", ")));
}

// The kernel of two bare FILE sides: the one kernel both files hold.
std::string common_kernel(const SideSpec& b, const SideSpec& c, Files& files) {
  std::vector<std::string> common;
  const core::Results& cr = files.get(*c.file);
  for (const auto& k : kernels_of(files.get(*b.file)))
    if (holds_kernel(cr, k)) common.push_back(k);
  if (common.size() == 1) return common.front();
  if (common.empty()) throw InputError(fmt::format("{} and {} hold no kernel in common", *b.file, *c.file));
  throw InputError(fmt::format("{} and {} both hold {}: name one as FILE:KERNEL", *b.file, *c.file, fmt::join(common, ", ")));
}

core::WhySide side_of(const SideSpec& s, const std::vector<std::string>& results, Files& files) {
  std::vector<std::string> paths = s.file ? std::vector<std::string>{*s.file} : results;
  std::vector<const core::Results*> loaded;
  for (const auto& p : paths) loaded.push_back(&files.get(p));
  const std::string label = s.file ? fmt::format("{}:{}", *s.file, s.kernel) : s.kernel;
  return core::why_side(label, s.kernel, loaded, paths);
}

void run_why(const WhyArgs& a) {
  Files files;
  for (const auto& path : a.results) files.get(path);
  SideSpec b = parse_side(a.baseline, a.results, files), c = parse_side(a.candidate, a.results, files);
  if (b.kernel.empty() && c.kernel.empty()) b.kernel = c.kernel = common_kernel(b, c, files);
  if (b.kernel.empty()) b.kernel = c.kernel;
  if (c.kernel.empty()) c.kernel = b.kernel;
  const auto source = [&](const SideSpec& s) { return s.file ? std::vector<std::string>{*s.file} : a.results; };
  if (b.kernel == c.kernel && source(b) == source(c))
    throw InputError(fmt::format("baseline '{}' and candidate '{}' are the same records: name two kernels, or one "
                                 "kernel in two files (base.json:{} new.json:{})",
                                 a.baseline, a.candidate, b.kernel, b.kernel));
  const core::WhySide baseline = side_of(b, a.results, files);
  const core::WhySide candidate = side_of(c, a.results, files);
  core::WhyReport report = core::why(baseline, candidate, a.shape);
  report.files = files.order();
  const std::string text = a.json ? report::render_why_json(report) : report::render_why(report, a.top);
  std::fputs(text.c_str(), stdout);
}

}  // namespace

void add_why(CLI::App& app, Run& run) {
  auto args = std::make_shared<WhyArgs>();
  auto* cmd = app.add_subcommand(
      "why", "the P50 gap between two kernels (or two builds of one) at each shape both ran, decomposed: warp "
             "states turned into time, then counters, occupancy and launches beside them (docs/why.md)");
  cmd->add_option("baseline", args->baseline,
                  "a kernel of RESULTS, FILE:KERNEL, or FILE (the candidate's kernel, or the one both files hold)")
      ->required();
  cmd->add_option("candidate", args->candidate, "as the baseline; the gap is candidate P50 - baseline P50")->required();
  cmd->add_option("results", args->results, "results JSON files holding the kernels named without a file");
  cmd->add_option("--shape", args->shape, "a shape label (b1 h16/16 s4096x4096 d128 bf16), or a part of labels")
      ->check(kNonEmpty);
  cmd->add_option("--top", args->top, "stall terms and evidence lines shown per shape (the JSON holds all)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1000}));
  cmd->add_flag("--json", args->json, "print JSON (schema_version " + std::string(core::kWhySchemaVersion) + ")");
  cmd->callback([args, &run] {
    run_why(*args);
    run.exit_code = 0;
  });
}

}  // namespace attnprof::cli
