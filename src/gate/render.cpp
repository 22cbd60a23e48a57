#include "gate/render.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/text.hpp"

namespace attnprof::gate {

namespace {

std::string change_text(double ratio) { return fmt::format("{:+.2f}%", 100.0 * (ratio - 1.0)); }

std::string ci_text(const core::Interval& ci) { return fmt::format("[{:.3f}, {:.3f}]", ci.low, ci.high); }

std::string p_text(const PointComparison& p) {
  const double v = p.ratio >= 1 ? p.p_slower : p.p_faster;
  return v < 1e-4 ? fmt::format("{:.1e}", v) : fmt::format("{:.4f}", v);
}

std::string spread_text(const PointComparison& p) {
  return fmt::format("{:.1f}%/{:.1f}%", 100 * p.baseline_rel_stddev, 100 * p.candidate_rel_stddev);
}

std::string verdict_text(const PointComparison& p) {
  std::string v(to_string(p.verdict));
  return p.fails ? v + " FAIL" : v;
}

// One row of cells per point, shared by the terminal and Markdown tables.
std::vector<std::string> cells(const PointComparison& p) {
  if (!p.compared)
    return {p.shape, p.kernel, "-", "-", "-", "-", "-", "-", verdict_text(p)};
  return {p.shape,
          p.kernel,
          core::text::latency_us(p.baseline_median_us),
          core::text::latency_us(p.candidate_median_us),
          change_text(p.ratio),
          ci_text(p.ratio_ci),
          p_text(p),
          spread_text(p),
          verdict_text(p)};
}

std::vector<std::string> geomean_cells(const Comparison& c) {
  if (c.geomean_points == 0) return {};
  return {"geomean", fmt::format("({} points)", c.geomean_points), "", "",
          change_text(c.geomean_ratio), ci_text(c.geomean_ci), "", "", ""};
}

const std::vector<std::string> kHeader = {"shape", "kernel", "base p50 us", "cand p50 us", "change",
                                          "CI of ratio", "p", "spread b/c", "verdict"};

// Failures first, then inconclusive and errors, then other changes, then the unchanged.
constexpr int kSeverityUnchanged = 6;
int severity(const PointComparison& p) {
  if (p.fails) return 0;
  switch (p.verdict) {
    case Verdict::noisy: return 1;
    case Verdict::unconfirmed: return 1;
    case Verdict::error: return 2;
    case Verdict::missing: return 3;
    case Verdict::added: return 4;
    case Verdict::faster: return 5;
    default: return kSeverityUnchanged;
  }
}

// The Markdown goes into PR comments, which render inline HTML: every text from the results files
// (kernel and device names, reasons, labels) is escaped as `attnprof report --md` escapes it.
std::string md_cell(std::string_view s) { return core::escape::markdown(s); }
std::string tty(std::string_view s) { return core::escape::terminal(s); }
using core::escape::xml;

std::string md_row(const std::vector<std::string>& row) {
  std::vector<std::string> cells;
  for (const auto& cell : row) cells.push_back(md_cell(cell));
  return fmt::format("| {} |\n", fmt::join(cells, " | "));
}

std::string md_table(const std::vector<const PointComparison*>& points) {
  std::string s = md_row(kHeader) + "|---|---|--:|--:|--:|:-:|--:|--:|---|\n";
  for (const auto* p : points) s += md_row(cells(*p));
  return s;
}

std::string options_line(const Comparison& c) {
  const auto& o = c.options;
  std::string s =
      o.correction == Correction::benjamini_hochberg
          ? fmt::format("false discovery rate {} over {} compared points (Benjamini-Hochberg: slower when p <= {:.2g})",
                        o.alpha, c.family_size, c.p_slower_cutoff)
          : fmt::format("alpha {} per point (no multiple-comparison correction)", o.alpha);
  s += fmt::format(", threshold {:.1f}%", 100 * o.threshold);
  for (const auto& [k, t] : o.kernel_threshold) s += fmt::format(" ({} {:.1f}%)", k, 100 * t);
  s += fmt::format(", spread ceiling {:.0f}% (above it: judged on the interval), {:.0f}% bootstrap CI",
                   100 * o.max_rel_stddev, 100 * o.confidence);
  if (o.counters)
    s += fmt::format(", counters gate (DRAM bytes +{:.1f}%, tensor ops +{:.1f}%, occupancy -{:.1f}%)",
                     100 * o.counter_thresholds.dram_bytes_increase, 100 * o.counter_thresholds.tensor_ops_increase,
                     100 * o.counter_thresholds.occupancy_decrease);
  return s;
}

// Points unsupported in both runs are folded out of the PR tables into this one line: a kernel that
// never ran a shape is no news (the JSON and JUnit list each one). Empty when there are none.
std::string unsupported_line(const Comparison& c) {
  const auto it = c.counts.find(Verdict::unsupported);
  if (it == c.counts.end() || it->second == 0) return "";
  return fmt::format("{} point{} unsupported by {} kernel in both runs, not compared", it->second,
                     it->second == 1 ? "" : "s", it->second == 1 ? "its" : "their");
}

std::string mismatch_line(const Comparison& c) {
  return fmt::format("DEVICE MISMATCH ALLOWED (--allow-device-mismatch): {}", fmt::join(c.device_differences, ", "));
}

}  // namespace

std::string render_terminal(const Comparison& c) {
  std::vector<std::vector<std::string>> rows{kHeader};
  for (const auto& p : c.points) {
    if (p.verdict == Verdict::unsupported) continue;
    auto row = cells(p);
    for (auto& cell : row) cell = tty(cell);
    rows.push_back(std::move(row));
  }
  if (auto g = geomean_cells(c); !g.empty()) rows.push_back(g);
  std::vector<size_t> width(kHeader.size(), 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out = fmt::format("baseline:  {} ({})\ncandidate: {} ({})\n", tty(c.baseline_label),
                                tty(c.baseline_device), tty(c.candidate_label), tty(c.candidate_device));
  if (!c.device_differences.empty()) out += tty(mismatch_line(c)) + "\n";
  out += "rules: " + options_line(c) + "\n\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      const bool left = i < 2 || i == rows[r].size() - 1;
      line += left ? fmt::format("{:<{}}", rows[r][i], width[i]) : fmt::format("{:>{}}", rows[r][i], width[i]);
      if (i + 1 < rows[r].size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (r + 1 == rows.size() && c.geomean_points > 0) out += std::string(line.size(), '-') + "\n";
    out += line + "\n";
  }
  // Reasons for everything that is not plainly unchanged.
  bool header = false;
  for (const auto& p : c.points) {
    if ((p.verdict == Verdict::same && p.counters_note.empty()) || p.verdict == Verdict::unsupported) continue;
    if (!header) out += "\n";
    header = true;
    out += fmt::format("{:<18} {}: {}{}\n", verdict_text(p), tty(p.key), tty(p.reason),
                       p.counters_note.empty() ? "" : " [" + tty(p.counters_note) + "]");
  }
  if (const std::string folded = unsupported_line(c); !folded.empty()) out += "\n" + folded + "\n";
  out += "\n" + tty(c.summary) + "\n";
  return out;
}

std::string render_markdown(const Comparison& c) {
  const char* icon = c.exit_code == 0 ? ":white_check_mark:" : c.exit_code == 1 ? ":x:" : ":warning:";
  std::string out = fmt::format("### {} attnprof compare: {}\n\n", icon, md_cell(c.summary));
  out += fmt::format("- baseline: {} ({})\n- candidate: {} ({})\n- rules: {}\n", md_cell(c.baseline_label),
                     md_cell(c.baseline_device), md_cell(c.candidate_label), md_cell(c.candidate_device),
                     md_cell(options_line(c)));
  if (c.geomean_points > 0)
    out += fmt::format("- geometric mean of the median ratio over {} points: {} (CI {})\n", c.geomean_points,
                       change_text(c.geomean_ratio), ci_text(c.geomean_ci));
  if (!c.device_differences.empty()) out += "\n> **" + md_cell(mismatch_line(c)) + "**\n";
  for (const auto& w : c.busy_warnings) out += "\n> **Busy machine**: " + md_cell(w) + "\n";

  std::vector<const PointComparison*> changed, unchanged;
  for (const auto& p : c.points)
    if (p.verdict != Verdict::unsupported) (severity(p) < kSeverityUnchanged ? changed : unchanged).push_back(&p);
  std::stable_sort(changed.begin(), changed.end(),
                   [](const auto* a, const auto* b) { return severity(*a) < severity(*b); });
  if (!changed.empty()) {
    out += fmt::format("\n{}\n", md_table(changed));
    for (const auto* p : changed)
      out += fmt::format("- **{}** {}, {}: {}\n", verdict_text(*p), md_cell(p->kernel), md_cell(p->shape),
                         md_cell(p->reason));
  } else {
    out += "\nNo point changed.\n";
  }
  if (!unchanged.empty())
    out += fmt::format("\n<details><summary>{} unchanged point{}</summary>\n\n{}\n</details>\n", unchanged.size(),
                       unchanged.size() == 1 ? "" : "s", md_table(unchanged));
  if (const std::string folded = unsupported_line(c); !folded.empty()) out += "\n" + folded + ".\n";
  return out;
}

std::string render_junit(const Comparison& c) {
  int64_t failures = 0, skipped = 0;
  for (const auto& p : c.points) {
    if (p.fails) ++failures;
    else if (p.verdict != Verdict::same && p.verdict != Verdict::faster) ++skipped;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"attnprof compare\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                     c.points.size(), failures, skipped);
  out += fmt::format("  <testsuite name=\"attnprof.compare\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                     c.points.size(), failures, skipped);
  out += "    <properties>\n";
  out += fmt::format("      <property name=\"baseline\" value=\"{}\"/>\n",
                     xml(c.baseline_label + " (" + c.baseline_device + ")"));
  out += fmt::format("      <property name=\"candidate\" value=\"{}\"/>\n",
                     xml(c.candidate_label + " (" + c.candidate_device + ")"));
  out += fmt::format("      <property name=\"rules\" value=\"{}\"/>\n", xml(options_line(c)));
  if (!c.device_differences.empty())
    out += fmt::format("      <property name=\"device_mismatch\" value=\"{}\"/>\n", xml(mismatch_line(c)));
  out += fmt::format("      <property name=\"summary\" value=\"{}\"/>\n", xml(c.summary));
  out += "    </properties>\n";
  for (const auto& p : c.points) {
    out += fmt::format("    <testcase classname=\"attnprof.compare.{}\" name=\"{}\" time=\"0\">\n", xml(p.kernel),
                       xml(p.shape));
    std::string detail = fmt::format("verdict: {}\n{}", to_string(p.verdict), p.reason);
    if (p.compared)
      detail += fmt::format("\nbaseline median {} us (n={}), candidate median {} us (n={}), change {}, CI of ratio {}, "
                            "p(slower) {:.3g}, p(faster) {:.3g}, spread {}",
                            core::text::latency_us(p.baseline_median_us), p.baseline_n, core::text::latency_us(p.candidate_median_us), p.candidate_n,
                            change_text(p.ratio), ci_text(p.ratio_ci), p.p_slower, p.p_faster, spread_text(p));
    for (const auto& d : p.counters)
      detail += fmt::format("\ncounter {}: {:.6g} -> {:.6g} ({:+.2f}%, limit {:+.1f}%){}", d.name, d.baseline,
                            d.candidate, 100 * d.change, 100 * d.limit, d.regressed ? " REGRESSED" : "");
    if (p.fails) {
      out += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", to_string(p.verdict),
                         xml(p.reason), xml(detail));
    } else if (p.verdict != Verdict::same && p.verdict != Verdict::faster) {
      out += fmt::format("      <skipped message=\"{}\"/>\n", xml(std::string(to_string(p.verdict)) + ": " + p.reason));
    }
    out += fmt::format("      <system-out>{}</system-out>\n", xml(detail));
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string render_json(const Comparison& c) { return core::dump_json(nlohmann::json(c), 2) + "\n"; }

}  // namespace attnprof::gate
