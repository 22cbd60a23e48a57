// Renderers of a gate::History: Markdown, self-contained HTML (inline SVG, no script), terminal.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/escape.hpp"
#include "gate/history.hpp"
#include "gate/render.hpp"

namespace attnprof::gate {

namespace {

using core::escape::xml;

// Cell text of one run: "249.1 [248.9, 249.4]", the status of a point that did not run ok, or "-".
std::string value_text(const HistoryValue& v) {
  if (!v.present) return "-";
  if (v.status != core::Status::ok) return std::string(core::to_string(v.status));
  return fmt::format("{:.4g} [{:.4g}, {:.4g}]", v.p50_us, v.ci_low_us, v.ci_high_us);
}

// The change the gate found from the previous run, or empty.
std::string step_text(const HistoryValue& v) {
  switch (v.step) {
    case Verdict::slower: return fmt::format("slower {:+.1f}%", 100 * (v.ratio - 1));
    case Verdict::faster: return fmt::format("faster {:+.1f}%", 100 * (v.ratio - 1));
    case Verdict::counter_regression: return "counters worse";
    case Verdict::error: return "error";
    default: return "";
  }
}

int count_steps(const History& h, Verdict verdict) {
  int n = 0;
  for (const auto& p : h.points)
    for (const auto& v : p.values) n += v.step == verdict;
  return n;
}

std::string rule_text(const History& h) {
  return fmt::format("the gate between each run and the one before it: one-sided Mann-Whitney U at alpha {:g} "
                     "and a {:g}% threshold on the median, with its noise rules (docs/ci-gate.md)",
                     h.options.alpha, 100 * h.options.threshold);
}

// Markdown cells: the one escaping every Markdown renderer uses.
std::string md(std::string_view s) { return core::escape::markdown(s); }

std::string run_name(size_t i) { return fmt::format("run {}", i + 1); }

// P50 and its interval per run as a small SVG; a change point is a triangle, up (red) for slower,
// down (green) for faster.
std::string sparkline(const HistoryPoint& p) {
  constexpr double kStep = 34, kLeft = 10, kHeight = 46, kPad = 6;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& v : p.values) {
    if (!v.present || v.status != core::Status::ok || !(v.p50_us > 0)) continue;
    lo = std::min({lo, v.p50_us, v.ci_low_us > 0 ? v.ci_low_us : v.p50_us});
    hi = std::max({hi, v.p50_us, v.ci_high_us > 0 ? v.ci_high_us : v.p50_us});
  }
  const double width = kLeft * 2 + kStep * static_cast<double>(p.values.size() - 1);
  std::string s = fmt::format("<svg class=\"spark\" viewBox=\"0 0 {:.0f} {:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" "
                              "role=\"img\">",
                              width, kHeight, width, kHeight);
  if (!std::isfinite(lo)) return s + "</svg>";
  if (hi - lo < lo * 1e-3) {  // a flat history: a band of 0.1% so that the line sits in the middle
    lo *= 0.9995;
    hi *= 1.0005;
  }
  auto y = [&](double v) { return kHeight - kPad - (v - lo) / (hi - lo) * (kHeight - 2 * kPad); };
  std::string line;
  for (size_t i = 0; i < p.values.size(); ++i) {
    const auto& v = p.values[i];
    if (!v.present || v.status != core::Status::ok || !(v.p50_us > 0)) continue;
    const double x = kLeft + kStep * static_cast<double>(i);
    line += fmt::format("{}{:.1f},{:.1f}", line.empty() ? "" : " ", x, y(v.p50_us));
    if (v.ci_low_us > 0 && v.ci_high_us > 0)
      s += fmt::format("<line class=\"ci\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>", x,
                       y(v.ci_low_us), y(v.ci_high_us));
  }
  s += "<polyline class=\"p50\" points=\"" + line + "\"/>";
  for (size_t i = 0; i < p.values.size(); ++i) {
    const auto& v = p.values[i];
    if (!v.present || v.status != core::Status::ok || !(v.p50_us > 0)) continue;
    const double x = kLeft + kStep * static_cast<double>(i), yy = y(v.p50_us);
    if (v.step == Verdict::slower)
      s += fmt::format("<path class=\"change-slower\" d=\"M{:.1f} {:.1f}l5 8h-10z\"><title>{}</title></path>", x,
                       yy - 6, xml(step_text(v) + ": " + v.reason));
    else if (v.step == Verdict::faster)
      s += fmt::format("<path class=\"change-faster\" d=\"M{:.1f} {:.1f}l5 -8h-10z\"><title>{}</title></path>", x,
                       yy + 6, xml(step_text(v) + ": " + v.reason));
    else
      s += fmt::format("<circle class=\"run\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.2\"/>", x, yy);
  }
  return s + "</svg>";
}

constexpr const char* kHistoryCss = R"CSS(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2125; margin: 0 auto;
       max-width: 1400px; padding: 16px 20px 40px; }
h1 { font-size: 22px; margin: 8px 0 2px; }
h2 { font-size: 17px; margin: 24px 0 8px; border-bottom: 1px solid #d5dae0; padding-bottom: 4px; }
.note { color: #5c6670; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #d5dae0; padding: 3px 8px; text-align: left; vertical-align: middle; white-space: nowrap; }
td.n, th.n { text-align: right; }
tbody tr:nth-child(even) { background: #f5f7f9; }
td.slower { color: #b00020; font-weight: 600; }
td.faster { color: #176b3a; font-weight: 600; }
td small { display: block; font-weight: normal; }
svg.spark .p50 { fill: none; stroke: #1f77b4; stroke-width: 1.4; }
svg.spark .ci { stroke: #7aa6cf; stroke-width: 1; }
svg.spark .run { fill: #1f77b4; }
svg.spark .change-slower { fill: #d62728; }
svg.spark .change-faster { fill: #2ca02c; }
)CSS";

}  // namespace

std::string render_history_markdown(const History& h) {
  std::string out = fmt::format("## attnprof history: {} runs, {} points\n\n", h.runs.size(), h.points.size());
  out += "| run | file | revision | date (UTC) | device |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < h.runs.size(); ++i)
    out += fmt::format("| {} | {} | {} | {} | {} |\n", i + 1, md(h.runs[i].label), md(h.runs[i].revision),
                       md(h.runs[i].date), md(h.runs[i].device));
  out += fmt::format("\nChange points: {} slower, {} faster; {}.\n", count_steps(h, Verdict::slower),
                     count_steps(h, Verdict::faster), rule_text(h));
  for (const auto& n : h.notes) out += "\n- Allowed device change: " + md(n);
  if (!h.notes.empty()) out += '\n';
  for (const auto& w : h.busy_warnings) out += "\n> **Busy machine**: " + md(w) + "\n";
  out += "\nP50 in us with its 95% interval per run; a change point names the gate's verdict and the median's "
         "change from the run before. Worst regressions first.\n\n| point | kernel |";
  for (size_t i = 0; i < h.runs.size(); ++i) out += " " + run_name(i) + " |";
  out += " last / first |\n|---|---|";
  for (size_t i = 0; i < h.runs.size(); ++i) out += "--:|";
  out += "--:|\n";
  for (const auto& p : h.points) {
    out += fmt::format("| {} | {} |", md(p.shape), md(p.kernel));
    for (const auto& v : p.values) {
      const std::string step = step_text(v);
      out += " " + value_text(v) + (step.empty() ? "" : " **" + step + "**") + " |";
    }
    out += fmt::format(" {:.3f}x |\n", p.overall_ratio);
  }
  return out;
}

std::string render_history_html(const History& h) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                    "<title>attnprof history</title><style>";
  out += kHistoryCss;
  out += "</style></head>\n<body>\n";
  out += fmt::format("<h1>attnprof history</h1><p class=\"note\">{} runs, {} points. Change points: "
                     "<b>{} slower</b>, {} faster; {}.</p>\n",
                     h.runs.size(), h.points.size(), count_steps(h, Verdict::slower), count_steps(h, Verdict::faster),
                     xml(rule_text(h)));
  out += "<h2>Runs, in order</h2><div class=\"table-wrap\"><table id=\"runs\"><thead><tr><th>run</th><th>file</th>"
         "<th>revision</th><th>date (UTC)</th><th>device</th></tr></thead><tbody>";
  for (size_t i = 0; i < h.runs.size(); ++i)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", i + 1,
                       xml(h.runs[i].label), xml(h.runs[i].revision), xml(h.runs[i].date),
                       xml(h.runs[i].device));
  out += "</tbody></table></div>";
  if (!h.notes.empty()) {
    out += "<ul>";
    for (const auto& n : h.notes) out += "<li>Allowed device change: " + xml(n) + "</li>";
    out += "</ul>";
  }
  out += "<h2>Points, worst regressions first</h2><p class=\"note\">P50 in us with its 95% interval per run. In "
         "the line (each on its own scale, so that a 3% step shows), whiskers are the intervals, a red triangle is a step the gate calls slower, a green one a "
         "step it calls faster (hover for the gate's reason).</p><div class=\"table-wrap\"><table id=\"history\">"
         "<thead><tr><th>point</th><th>kernel</th><th>P50 by run</th>";
  for (size_t i = 0; i < h.runs.size(); ++i)
    out += fmt::format("<th class=\"n\" title=\"{}\">{}<br><small>{}</small></th>", xml(h.runs[i].label),
                       run_name(i), xml(h.runs[i].revision));
  out += "<th class=\"n\">last / first</th></tr></thead><tbody>";
  for (const auto& p : h.points) {
    out += fmt::format("<tr data-key=\"{}\"><td>{}</td><td>{}</td><td>{}</td>", xml(p.key), xml(p.shape),
                       xml(p.kernel), sparkline(p));
    for (const auto& v : p.values) {
      const std::string step = step_text(v);
      const char* cls = v.step == Verdict::slower ? " slower" : v.step == Verdict::faster ? " faster" : "";
      out += fmt::format("<td class=\"n{}\"{}>{}{}</td>", cls,
                         v.reason.empty() ? "" : " title=\"" + xml(v.reason) + "\"", xml(value_text(v)),
                         step.empty() ? "" : "<small>" + xml(step) + "</small>");
    }
    out += fmt::format("<td class=\"n\">{:.3f}x</td></tr>", p.overall_ratio);
  }
  out += "</tbody></table></div>\n</body></html>\n";
  return out;
}

std::string render_history_terminal(const History& h, size_t max_points) {
  // File names, revisions, dates, shapes and kernel names come from the files: a newline, CR or ESC
  // in one would break the table's lines or drive the terminal.
  const auto term = [](std::string_view s) { return core::escape::terminal(s); };
  std::string out = fmt::format("attnprof history: {} runs, {} points\n", h.runs.size(), h.points.size());
  for (size_t i = 0; i < h.runs.size(); ++i)
    out += fmt::format("  run {}: {} (revision {}, {})\n", i + 1, term(h.runs[i].label), term(h.runs[i].revision),
                       term(h.runs[i].date));
  out += fmt::format("change points: {} slower, {} faster ({})\n", count_steps(h, Verdict::slower),
                     count_steps(h, Verdict::faster), rule_text(h));
  size_t shown = 0;
  for (const auto& p : h.points) {
    if (p.slower_steps == 0 || shown == max_points) break;
    if (shown++ == 0) out += "worst regressions:\n";
    std::vector<std::string> steps;
    for (size_t i = 0; i < p.values.size(); ++i)
      if (p.values[i].step == Verdict::slower) steps.push_back(fmt::format("run {} {}", i + 1, step_text(p.values[i])));
    out += fmt::format("  {} | {}: {}; last / first {:.3f}x\n", term(p.shape), term(p.kernel), fmt::join(steps, ", "),
                       p.overall_ratio);
  }
  return out;
}

}  // namespace attnprof::gate
