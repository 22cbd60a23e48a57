// The terminal table: fixed-width columns sized to their content, numbers right-aligned.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "report/report.hpp"
#include "report/view.hpp"

namespace attnprof::report {

using nlohmann::json;

namespace {

constexpr size_t kColumns = 9;
constexpr std::array<const char*, kColumns> kHeaders = {
    "point", "kernel", "status", "p50 us", "p99 us", "TFLOP/s", "% roof", "verdict", "flags"};
constexpr std::array<bool, kColumns> kRightAligned = {false, false, false, true, true,
                                                      true,  true,  false, false};

}  // namespace

void write_terminal(const core::Results& results, std::ostream& out) {
  using namespace detail;
  const auto rows = make_rows(results);
  const auto& ctx = results.context;
  out << fmt::format("attnprof report: {} ({}), {} points; ceilings {}\n",
                     printable(ctx.device.name.empty() ? "unknown device" : ctx.device.name),
                     printable(std::string(core::to_string(ctx.backend))), rows.size(),
                     printable(ceilings_summary(ctx.ceilings)));
  for (const auto& notice : ctx.notices) out << "  note: " << printable(notice) << '\n';

  std::vector<std::array<std::string, kColumns>> cells;
  for (const auto& row : rows) {
    cells.push_back({printable(row.label), printable(row.kernel), row.status, fixed(row.p50_us, 2),
                     p99_text(row, 2), significant(row.tflops, 3, 1), fixed(row.pct_of_roof, 1),
                     row.verdict.empty() ? "-" : printable(row.verdict),
                     row.flags.empty() ? "" : printable(join(row.flags, ","))});
  }
  std::array<size_t, kColumns> width{};
  for (size_t c = 0; c < kColumns; ++c) {
    width[c] = std::string_view(kHeaders[c]).size();
    for (const auto& line : cells) width[c] = std::max(width[c], line[c].size());
  }
  auto emit = [&](const auto& line) {
    std::string text;
    for (size_t c = 0; c < kColumns; ++c) {
      if (c) text += "  ";
      const std::string_view cell = line[c];
      text += kRightAligned[c] ? fmt::format("{:>{}}", cell, width[c])
                               : fmt::format("{:<{}}", cell, width[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  std::array<std::string, kColumns> header;
  std::array<std::string, kColumns> rule;
  for (size_t c = 0; c < kColumns; ++c) {
    header[c] = kHeaders[c];
    rule[c] = std::string(width[c], '-');
  }
  emit(header);
  emit(rule);
  for (const auto& line : cells) emit(line);

  const json comparison = core::compare_kernels(results);
  if (!comparison.empty()) {
    out << "\nreference vs fused:\n";
    for (const auto& c : comparison)
      out << "  " << printable(c["shape"].get<std::string>()) << ": "
          << printable(c["summary"].get<std::string>()) << '\n';
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
