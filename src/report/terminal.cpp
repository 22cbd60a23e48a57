// The terminal table: fixed-width columns sized to their content, numbers right-aligned.
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/comparison.hpp"
#include "report/formats.hpp"
#include "report/report.hpp"
#include "report/view.hpp"

namespace attnprof::report {

namespace {

struct Column {
  std::string header;
  bool right_aligned;
};
constexpr const char* kVerdictHeaders[] = {"verdict", "flags"};

class TerminalRenderer final : public Renderer {
 public:
  std::string_view format() const override { return "terminal"; }
  void render(const core::Results& results, std::ostream& out) const override;
};

}  // namespace

const Renderer& detail::terminal_renderer() {
  static const TerminalRenderer renderer;
  return renderer;
}

void TerminalRenderer::render(const core::Results& results, std::ostream& out) const {
  using namespace detail;
  const auto rows = make_rows(results);
  const auto& ctx = results.context;
  out << fmt::format("attnprof report: {} ({}), {} points; ceilings {}\n",
                     printable(ctx.device.name.empty() ? "unknown device" : ctx.device.name),
                     printable(std::string(core::to_string(ctx.backend))), rows.size(),
                     printable(ceilings_summary(results)));
  for (const auto& notice : ctx.notices) out << "  note: " << printable(notice) << '\n';

  const bool decode_columns = any_decode(rows);
  // Units: a GPU's TFLOP/s, TB/s and MB as always; a CPU's in the unit that fits each column.
  const TableUnits units = table_units(rows, ctx.backend);
  const ColumnUnit &flops_unit = units.flops, &kv_unit = units.kv_rate, &token_unit = units.per_token;
  const bool cpu = ctx.backend == core::BackendKind::cpu;
  std::vector<Column> columns = {{"point", false},  {"kernel", false}, {"status", false},
                                 {"p50 us", true},  {"p99 us", true},
                                 {flops_unit.prefix + "FLOP/s", true}, {"% roof", true}};
  // With decode points in the results: their bandwidth, where a prefill point has its TFLOP/s.
  if (decode_columns) {
    columns.push_back({"KV " + kv_unit.prefix + "B/s", true});
    columns.push_back({cpu ? "% DRAM" : "% HBM", true});
    columns.push_back({token_unit.prefix + "B/token", true});
  }
  for (const char* h : kVerdictHeaders) columns.push_back({h, false});
  // Divided by the unit's scale (in the field's own unit: T for tflops): a GPU's figures are the fields' own.
  const auto in_unit = [](std::optional<double> v, double divisor) { return v ? std::optional(*v / divisor) : v; };

  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows) {
    // A decode row shows its bandwidth instead of TFLOP/s and the roof (on the memory roof, % of roof
    // is its % of the memory ceiling); TFLOP/s stays in the CSV and the JSON.
    std::vector<std::string> line = {printable(row.label), printable(row.kernel), row.status, fixed(row.p50_us, 2),
                                     p99_text(row, 2),
                                     row.decode ? "-" : significant(in_unit(row.tflops, flops_unit.scale / 1e12), 3, 1),
                                     row.decode ? "-" : fixed(row.pct_of_roof, 1)};
    if (decode_columns) {
      line.push_back(significant(in_unit(row.kv_tb_per_s, kv_unit.scale / 1e12), 3, 2));
      line.push_back(fixed(row.pct_of_hbm_ceiling, 1));
      line.push_back(significant(in_unit(row.bytes_per_token, token_unit.scale), 3, 1));
    }
    line.push_back(row.verdict.empty() ? "-" : printable(verdict_text(row)));
    line.push_back(row.flags.empty() ? "" : printable(fmt::format("{}", fmt::join(row.flags, ","))));
    cells.push_back(std::move(line));
  }
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    width[c] = columns[c].header.size();
    for (const auto& line : cells) width[c] = std::max(width[c], line[c].size());
  }
  auto emit = [&](const std::vector<std::string>& line) {
    std::string text;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) text += "  ";
      const std::string_view cell = line[c];
      text += columns[c].right_aligned ? fmt::format("{:>{}}", cell, width[c]) : fmt::format("{:<{}}", cell, width[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  std::vector<std::string> header, rule;
  for (size_t c = 0; c < columns.size(); ++c) {
    header.emplace_back(columns[c].header);
    rule.emplace_back(width[c], '-');
  }
  emit(header);
  emit(rule);
  for (const auto& line : cells) emit(line);

  const std::vector<core::KernelComparison> comparison = core::compare_kernels(results);
  if (!comparison.empty()) {
    out << "\nreference vs fused:\n";
    for (const auto& c : comparison) out << "  " << printable(c.shape) << ": " << printable(c.summary) << '\n';
  }
  bool any_not_ok = false;
  for (const auto& row : rows) {
    if (row.status == "ok") continue;
    if (!any_not_ok) out << "\nnot ok:\n";
    any_not_ok = true;
    out << fmt::format("  {} | {}: {}: {}\n", printable(row.label), printable(row.kernel),
                       row.status, printable(row.reason.empty() ? "(no reason given)" : row.reason));
  }
}

}  // namespace attnprof::report
