// The self-contained HTML report. Everything textual that comes from the results is HTML-escaped
// here (tables, drill-downs, context); the charts are drawn by the inlined script from a JSON block
// in which '<', '>' and '&' are written as \u escapes, so no string can close the <script> element.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/comparison.hpp"
#include "core/diagnosis.hpp"
#include "core/escape.hpp"
#include "core/instruction_mix.hpp"
#include "core/roofline.hpp"
#include "core/stalls.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/why.hpp"
#include "report/html_assets.hpp"
#include "report/html_series.hpp"
#include "report/html_timeline.hpp"
#include "report/formats.hpp"
#include "report/report.hpp"
#include "report/rules.hpp"
#include "report/view.hpp"
#include "report/why.hpp"

namespace attnprof::report {

using nlohmann::json;

namespace {

using detail::fixed;
// Every text from the results, in element content and in attribute values.
std::string e(std::string_view s) { return core::escape::xml(s); }
// Text the stylesheet clamps to two lines (class cls: a reason, a demangled kernel name), all of it in
// the tooltip.
std::string clamped(std::string_view cls, std::string_view text) {
  return fmt::format("<span class=\"{0}\" title=\"{1}\">{1}</span>", cls, e(text));
}

// JSON safe to place inside <script type="application/json">: '<', '>' and '&' only occur inside
// JSON strings, where \u003c and friends mean the same characters.
std::string script_json(const json& j) {
  const std::string raw = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

json num_or_null(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

// A table cell carrying its raw value for sorting.
std::string num_cell(std::optional<double> v, int decimals) {
  if (!v) return "<td class=\"n\" data-v=\"\">-</td>";
  return fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>",
                     std::isfinite(*v) ? fmt::format("{}", *v) : "", fixed(v, decimals));
}
// The same with significant digits, for values that span decades (TFLOP/s of a CPU and of an H200).
std::string sig_cell(std::optional<double> v, int digits, int min_decimals = 0) {
  if (!v) return "<td class=\"n\" data-v=\"\">-</td>";
  return fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>",
                     std::isfinite(*v) ? fmt::format("{}", *v) : "", detail::significant(v, digits, min_decimals));
}

// The P99 cell: the shown value (the maximum where the sample count cannot bound the P99) and its note.
std::string p99_cell(const detail::Row& r) {
  if (!r.p99_us) return sig_cell(r.p99_us, 4, 2);
  return fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>", std::isfinite(*r.p99_us) ? fmt::format("{}", *r.p99_us) : "",
                     e(core::percentile_text({*r.p99_us, r.p99_note}, detail::significant(r.p99_us, 4, 2))));
}

// A stage's P99 as shown: over fewer samples than a P99 needs, the stage's maximum, marked.
std::string stage_p99_cell(const core::Stage& s, int64_t point_samples) {
  const auto n = s.samples_us.empty() ? point_samples : static_cast<int64_t>(s.samples_us.size());
  if (n <= 0 || core::quantile_supported(n, 0.99)) return num_cell(s.p99_us, 2);
  if (s.samples_us.empty())
    return fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>", s.p99_us, e(fmt::format("{:.2f} (n={})", s.p99_us, n)));
  const double max_us = *std::max_element(s.samples_us.begin(), s.samples_us.end());
  return fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>", max_us, e(fmt::format("{:.2f} (n={}: max)", max_us, n)));
}

// A verdict or flag as a link to its rule in the report's "How to read a verdict" section.
std::string verdict_link(std::string_view verdict) {
  if (verdict.empty()) return "-";
  const std::string anchor = detail::verdict_anchor(verdict);
  if (anchor.empty()) return e(verdict);
  return fmt::format("<a class=\"verdict\" href=\"#{}\">{}</a>", anchor, e(verdict));
}

// A row's verdict as the points table shows it: the link, and a memory-bound verdict's level after it.
std::string verdict_cell(const detail::Row& row) {
  const std::string link = verdict_link(row.verdict);
  return row.memory_level.empty() ? link
                                  : fmt::format("{} <span class=\"level\">({})</span>", link, e(row.memory_level));
}

std::string flag_link(std::string_view flag) {
  const std::string anchor = detail::flag_anchor(flag);
  if (anchor.empty()) return "<span class=\"flag\">" + e(flag) + "</span>";
  return fmt::format("<a class=\"flag\" href=\"#{}\">{}</a>", anchor, e(flag));
}

std::string kv(std::string_view key, std::string_view value) {
  return fmt::format("<div><b>{}</b>{}</div>", e(key), e(value));
}

std::string json_value_text(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return number_text(v.get<double>());
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string status_class(std::string_view status) {
  return status == "ok" ? "status-ok" : "status-bad";
}

// The memory the bandwidth ceiling is of: the GPU's HBM, or the host's memory on the CPU backend.
std::string_view memory_name(core::BackendKind backend) {
  return backend == core::BackendKind::cpu ? "memory" : "HBM";
}

// A counters reason as shown. With counters collected (status ok) it says how they were collected;
// a "fix:" clause it carries from the path that failed first (the batched session's) is advice for
// counters that are unavailable, and is left out.
std::string counters_reason(const core::Counters& c) {
  if (c.status != core::CounterStatus::ok) return c.reason;
  std::string out = c.reason;
  for (size_t at = out.find("; fix: "); at != std::string::npos; at = out.find("; fix: ", at)) {
    // The clause ends where the parenthesis around it closes, else at the end.
    const size_t close = out.find(')', at);
    out.erase(at, close == std::string::npos ? std::string::npos : close - at);
  }
  return out;
}

// The context section; `ceilings` is detail::ceilings_summary of the results.
void context_block(const core::Context& ctx, const std::string& ceilings, std::string& h) {
  const auto& d = ctx.device;
  const auto& c = ctx.ceilings;
  h += "<section id=\"context\"><h2>Context</h2><dl class=\"context\">";
  auto row = [&](std::string_view k, const std::string& v) {
    h += fmt::format("<dt>{}</dt><dd>{}</dd>", e(k), e(v.empty() ? "-" : v));
  };
  // The CPU backend fills the same fields with the host's threads, last-level cache and clock.
  const bool cpu = ctx.backend == core::BackendKind::cpu;
  row(cpu ? "device" : "GPU", d.name);
  if (!cpu) row("compute capability", d.compute_capability);
  row(cpu ? "threads" : "SMs", d.sm_count ? std::to_string(d.sm_count) : "");
  row(cpu ? "last-level cache / memory" : "L2 / memory",
      fmt::format("{:.1f} MiB / {:.1f} GiB", d.l2_bytes / 1048576.0, d.memory_bytes / 1073741824.0));
  if (!cpu) row("driver / runtime", d.driver_version + " / " + d.runtime_version);
  if (cpu)
    row("clock", d.sm_clock_max_mhz > 0 ? fmt::format("max {:.0f} MHz", d.sm_clock_max_mhz) : "");
  else
    row("clocks", fmt::format("SM max {:.0f} MHz, memory {:.0f} MHz", d.sm_clock_max_mhz, d.mem_clock_mhz));
  row("backend", std::string(core::to_string(ctx.backend)));
  row("host", ctx.host);
  row("attnprof", ctx.tool_version + " (revision " + ctx.git_revision + ")");
  row("schema", fmt::format("{}.{}", ctx.schema_major, ctx.schema_minor));
  row("command", ctx.command_line);
  row("date (UTC)", ctx.date_utc);
  row("ceilings used", ceilings);
  std::vector<std::string> sheet;
  if (c.datasheet_bw_bytes_per_s > 0)
    sheet.push_back(fmt::format("{} {:.3g} TB/s", memory_name(ctx.backend), c.datasheet_bw_bytes_per_s / 1e12));
  for (const auto& [dtype, flops] : c.datasheet_flops_per_s)
    sheet.push_back(fmt::format("{} {:.4g} TFLOP/s", dtype, flops / 1e12));
  row("datasheet ceilings", fmt::format("{}", fmt::join(sheet, ", ")));
  if (!ctx.sweep.is_null())
    row("sweep", ctx.sweep.dump(-1, ' ', false, json::error_handler_t::replace));
  if (!ctx.options.is_null())
    row("options", ctx.options.dump(-1, ' ', false, json::error_handler_t::replace));
  h += "</dl>";
  if (!ctx.notices.empty()) {
    h += "<h3>Notices</h3><ul class=\"notices\">";
    for (const auto& n : ctx.notices) h += "<li>" + e(n) + "</li>";
    h += "</ul>";
  }
  h += "</section>\n";
}

// The points that did not run ok, grouped: those that were not measured (unsupported, oom, ...) by
// kernel, status and reason, so that one refusal repeated over a sweep reads as one line with its
// count; a measured one (incorrect) alone.
struct NotOkGroup {
  std::vector<size_t> rows;  // indices into the rows, in order
};
std::vector<NotOkGroup> not_ok_groups(const std::vector<detail::Row>& rows) {
  std::vector<NotOkGroup> groups;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.status == "ok") continue;
    if (r.measured) {
      groups.push_back({{i}});
      continue;
    }
    const auto [at, added] = index.try_emplace({r.kernel, r.status, r.reason}, groups.size());
    if (added) groups.emplace_back();
    groups[at->second].rows.push_back(i);
  }
  return groups;
}

std::string reason_text(const detail::Row& r) { return r.reason.empty() ? "(no reason given)" : r.reason; }

void points_table(const std::vector<detail::Row>& rows, const std::vector<NotOkGroup>& not_ok,
                  std::string_view memory, std::string& h) {
  // With decode points: their bandwidth, where a prefill point shows TFLOP/s and % of roof.
  const bool decode_columns = detail::any_decode(rows);
  h += "<section id=\"points\"><h2>Points</h2><p class=\"key\"><b>Labels:</b> " + e(detail::label_key()) +
       "</p><p class=\"note\">Click a column to sort; click a point to open its drill-down, a verdict or "
       "flag for its rule. The filters above apply here too, and a column with nothing in the rows shown "
       "is left out. Points refused for one reason by one kernel share a row.</p><div class=\"table-wrap\">"
       "<table class=\"sortable\" id=\"points-table\"><thead><tr>"
       "<th>point</th><th>kernel</th><th>status</th><th>verdict</th><th>flags / reason</th>"
       "<th class=\"n\">P50 us</th><th class=\"n\">P99 us</th><th class=\"n\">TFLOP/s</th>"
       "<th class=\"n\">% of roof</th><th class=\"n\">FLOP/B</th><th class=\"n\">DRAM GB</th>";
  if (decode_columns)
    h += fmt::format("<th class=\"n\">KV TB/s</th><th class=\"n\">% of {} ceiling</th><th class=\"n\">MB/token</th>",
                     e(memory));
  h += "</tr></thead><tbody>";
  // Where a group of unmeasured points starts, and the rows it folds away.
  std::map<size_t, size_t> folded_at;
  std::vector<bool> folded(rows.size(), false);
  for (size_t g = 0; g < not_ok.size(); ++g) {
    if (not_ok[g].rows.size() < 2) continue;
    folded_at[not_ok[g].rows.front()] = g;
    for (size_t i : not_ok[g].rows) folded[i] = true;
  }
  const std::string empty_numbers = [&] {
    std::string cells;
    for (int k = 0; k < (decode_columns ? 9 : 6); ++k) cells += "<td class=\"n\" data-v=\"\">-</td>";
    return cells;
  }();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string reason =
        r.status == "ok" ? "" : clamped("reason", reason_text(r));
    if (const auto g = folded_at.find(i); g != folded_at.end()) {
      h += fmt::format("<tr data-i=\"{}\" class=\"folded\"><td><a href=\"#not-ok-{}\">{} points</a></td><td>{}</td>"
                       "<td class=\"{}\">{}</td><td>-</td><td class=\"flags\">{}</td>{}</tr>",
                       i, g->second, not_ok[g->second].rows.size(), e(r.kernel), status_class(r.status), e(r.status),
                       reason, empty_numbers);
      continue;
    }
    if (folded[i]) continue;
    std::string flags = reason;
    for (const auto& f : r.flags) flags += flag_link(f);
    std::string decode_cells;
    if (decode_columns)
      decode_cells = sig_cell(r.kv_tb_per_s, 3, 2) + num_cell(r.pct_of_hbm_ceiling, 1) +
                     sig_cell(r.bytes_per_token ? std::optional(*r.bytes_per_token / 1e6) : std::nullopt, 3, 1);
    h += fmt::format(
        "<tr data-i=\"{}\"><td><a href=\"#pt-{}\">{}</a></td><td>{}</td><td class=\"{}\">{}</td>"
        "<td class=\"verdict\">{}</td><td class=\"flags\">{}</td>{}{}{}{}{}{}{}</tr>",
        i, i, e(r.label), e(r.kernel), status_class(r.status), e(r.status), verdict_cell(r),
        flags.empty() ? "-" : flags, sig_cell(r.p50_us, 4, 2), p99_cell(r), sig_cell(r.decode ? std::nullopt : r.tflops, 3, 1),
        num_cell(r.decode ? std::nullopt : r.pct_of_roof, 1), sig_cell(r.intensity_flop_per_byte, 3),
        sig_cell(r.dram_bytes ? std::optional(*r.dram_bytes / 1e9) : std::nullopt, 3), decode_cells);
  }
  h += "</tbody></table></div></section>\n";
}

void comparison_block(const std::vector<core::KernelComparison>& comparison, std::string& h) {
  h += "<section id=\"comparison\"><h2>Reference vs fused</h2>";
  if (comparison.empty()) {
    h += "<p class=\"note\">No shape has both a reference (S/P in memory) and a fused point that "
         "ran ok.</p></section>\n";
    return;
  }
  h += "<div class=\"table-wrap\"><table class=\"sortable\" id=\"comparison-table\"><thead><tr><th>shape</th>"
       "<th class=\"n\">speedup</th><th class=\"n\">reference P50 us</th>"
       "<th class=\"n\">fused P50 us</th><th class=\"n\">DRAM saved GB</th>"
       "<th class=\"n\">intensity ref FLOP/B</th><th class=\"n\">intensity fused FLOP/B</th>"
       "<th class=\"n\">S/P time / gain</th></tr></thead>";
  for (const auto& c : comparison) {
    // One body per shape: its numbers, then its summary across the whole width (a summary column
    // beside eight numbers is squeezed to a few words per line).
    h += fmt::format("<tbody><tr class=\"numbers\"><td>{}</td>{}{}{}{}{}{}{}</tr>"
                     "<tr class=\"summary\"><td colspan=\"8\">{}</td></tr></tbody>",
                     e(c.shape), num_cell(c.speedup, 2), num_cell(c.reference_p50_us, 2),
                     num_cell(c.fused_p50_us, 2), num_cell(c.bytes_saved / 1e9, 3),
                     num_cell(c.reference_intensity, 1), num_cell(c.fused_intensity, 1),
                     num_cell(c.sp_explained_share ? std::optional(*c.sp_explained_share * 100) : std::nullopt, 0),
                     e(c.summary));
  }
  h += "</table></div><p class=\"note\">S/P time / gain: the time the reference's S and P "
       "traffic takes at the bandwidth ceiling, as a share of the P50 the fused kernel saves.</p>"
       "</section>\n";
}

// Each kernel against the fastest at a shape where two or more were sampled (--stalls): the gap and its
// largest warp-state terms (core::why_against_fastest; `attnprof why` gives the whole decomposition).
void why_block(const std::vector<core::WhyPair>& pairs, std::string& h) {
  if (pairs.empty()) return;
  constexpr size_t kTerms = 3;
  h += "<section id=\"why-gap\"><h2>Why the gap</h2><p class=\"note\">At each shape where two or more kernels "
       "were sampled with <code>--stalls</code>, each against the fastest there. A term is the time in one warp "
       "state (its share of the call's warp samples x the P50), kernel minus fastest; over every state the "
       "terms sum to the gap. Sampled shares, not cycle counts. <code>attnprof why FASTEST KERNEL results.json</code> "
       "gives every term, the places that hold them and the counters beside them. Speed is the fastest's P50 over "
       "the kernel's; per SM cycle, each P50 times its SM clock under load (a power-limited GPU clocks a kernel "
       "that draws more lower).</p>"
       "<div class=\"table-wrap\"><table class=\"sortable\" id=\"why-table\"><thead><tr><th>shape</th>"
       "<th>kernel</th><th>fastest</th><th class=\"n\">gap us</th><th class=\"n\">gap %</th>"
       "<th class=\"n\">speed</th><th class=\"n\">per SM cycle</th></tr></thead>";
  for (const core::WhyPair& pair : pairs) {
    // One body per pair: its numbers, then its largest terms across the whole width (as the comparison's
    // summaries: a terms column beside the numbers is squeezed to a few words per line).
    const core::WhyPoint& p = pair.point;
    std::vector<std::string> terms;
    for (size_t i = 0; i < p.terms.size() && i < kTerms; ++i)
      terms.push_back(e(why_term_line(p.terms[i], p, pair.baseline, pair.candidate)));
    h += fmt::format("<tbody><tr class=\"numbers\"><td>{}</td><td>{}</td><td>{}</td>{}{}{}{}</tr>"
                     "<tr class=\"summary\"><td colspan=\"7\">largest terms: {}</td></tr></tbody>",
                     e(p.shape), e(pair.candidate), e(pair.baseline), num_cell(p.gap_us, 2), num_cell(p.gap_pct, 1),
                     num_cell(p.speed_ratio, 3), num_cell(p.speed_ratio_per_cycle, 3), fmt::join(terms, "; "));
  }
  h += "</table></div></section>\n";
}

void not_ok_block(const std::vector<detail::Row>& rows, const std::vector<NotOkGroup>& groups, std::string& h) {
  if (groups.empty()) return;
  h += "<section id=\"not-ok\"><h2>Points not ok</h2><ul>";
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& first = rows[groups[g].rows.front()];
    if (groups[g].rows.size() == 1) {
      h += fmt::format("<li id=\"not-ok-{}\"><a href=\"#pt-{}\">{} | {}</a>: <span class=\"status-bad\">{}</span>: "
                       "{}</li>",
                       g, groups[g].rows.front(), e(first.label), e(first.kernel), e(first.status), e(reason_text(first)));
      continue;
    }
    std::string links;
    for (size_t i : groups[g].rows)
      links += fmt::format("{}<a href=\"#pt-{}\">{}</a>", links.empty() ? "" : ", ", i, e(rows[i].label));
    h += fmt::format("<li id=\"not-ok-{}\">{}: <span class=\"status-bad\">{}</span>, {} points: {}"
                     "<details class=\"points\"><summary>the {} points</summary>{}</details></li>",
                     g, e(first.kernel), e(first.status), groups[g].rows.size(), e(reason_text(first)),
                     groups[g].rows.size(), links);
  }
  h += "</ul></section>\n";
}

// The warp-state samples of a point (--stalls): per kernel its mix of warp states, its hottest source
// lines and SASS instructions. The JSON holds the whole listing.
std::string top_stall(const core::HotSpot& spot) {
  const std::string top = core::dominant_stall(spot.reasons);
  return top.empty() ? "-" : fmt::format("{} {:.0f}%", top, 100.0 * core::stall_share(spot.reasons, spot.samples, top));
}

void stalls_block(const core::Stalls& s, std::string& h) {
  h += "<h3>Warp states</h3><p>status <b>" + e(core::to_string(s.status)) + "</b>";
  if (!s.reason.empty()) h += ": " + e(s.reason);
  if (s.samples > 0)
    h += fmt::format(" &middot; {} samples over {} call{}, one every 2<sup>{}</sup> cycles per SM{}, {:.0f} ms",
                     s.samples, s.calls, s.calls == 1 ? "" : "s", s.period_log2,
                     s.dropped_samples > 0 ? fmt::format(", {} dropped", s.dropped_samples) : "", s.profiling_ms);
  h += "</p>";
  constexpr size_t kReasons = 8, kSpots = 5;
  for (const auto& k : s.per_kernel) {
    std::vector<std::pair<std::string, int64_t>> reasons(k.reasons.begin(), k.reasons.end());
    std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (reasons.size() > kReasons) reasons.resize(kReasons);
    h += fmt::format("<p><b>{}</b> &middot; {:.0f}% of the call's samples &middot; warp cycles per issued "
                     "instruction {}</p><div class=\"kv\">",
                     e(k.kernel), s.samples > 0 ? 100.0 * static_cast<double>(k.samples) / static_cast<double>(s.samples) : 0.0,
                     number_text(core::cycles_per_issue(k)));
    for (const auto& [reason, n] : reasons)
      h += kv(reason == core::kIssuedReason ? "selected (issuing) %" : reason + " %",
              fmt::format("{:.1f}", 100.0 * core::stall_share(k.reasons, k.samples, reason)));
    h += "</div>";
    const auto spot_table = [&](const std::vector<core::HotSpot>& spots, bool instructions) {
      if (spots.empty()) return;
      h += instructions ? "<table><thead><tr><th>SASS offset</th><th>source line</th>"
                        : "<table><thead><tr><th>source line</th>";
      h += "<th class=\"n\">share of samples %</th><th>top stall</th></tr></thead><tbody>";
      for (size_t i = 0; i < spots.size() && i < kSpots; ++i) {
        const core::HotSpot& spot = spots[i];
        const std::string line = spot.line > 0 ? fmt::format("{}:{}", spot.file, spot.line) : "-";
        h += "<tr>";
        if (instructions) h += fmt::format("<td>0x{:x}</td>", spot.pc_offset);
        h += "<td>" + e(line) + "</td>" +
             num_cell(100.0 * static_cast<double>(spot.samples) / static_cast<double>(std::max<int64_t>(k.samples, 1)), 1) +
             "<td>" + e(top_stall(spot)) + "</td></tr>";
      }
      h += "</tbody></table>";
    };
    spot_table(k.lines, false);
    spot_table(k.instructions, true);
  }
}

// The warp instructions of a point by class (counted with --stalls): each class's count, its share of
// all and its count per 1k exact FLOPs, and what no listed pipe counted.
void instruction_mix_block(const core::InstructionMix& mix, std::string& h) {
  const auto count_cell = [](double v) {
    return fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>", v, e(core::text::count(v)));
  };
  h += "<h3>Instructions by class</h3><p>" + e(core::text::count(mix.warp_instructions)) +
       " warp instructions executed over the call's launches";
  if (mix.per_kflop) h += fmt::format(", {} per 1k FLOP (exact FLOPs)", e(core::text::human(*mix.per_kflop)));
  if (mix.warp_cycles_per_issue)
    h += fmt::format(" &middot; warp cycles per issued instruction {} (counters)",
                     e(core::text::human(*mix.warp_cycles_per_issue)));
  h += "</p><table><thead><tr><th>class</th><th>pipes</th><th class=\"n\">warp instructions</th>"
       "<th class=\"n\">share %</th><th class=\"n\">per 1k FLOP</th></tr></thead><tbody>";
  for (const core::InstructionClassCount& c : mix.classes)
    h += fmt::format("<tr><td title=\"{}\">{}</td><td>{}</td>{}{}{}</tr>", e(c.info->executes), e(c.info->name),
                     e(c.info->pipes), count_cell(c.warp_instructions), num_cell(c.share * 100, 1), sig_cell(c.per_kflop, 3));
  if (mix.unclassified > 0)
    h += fmt::format("<tr><td title=\"instructions none of the pipes above counted\">other</td><td>-</td>{}{}{}</tr>",
                     count_cell(mix.unclassified), num_cell(mix.unclassified / mix.warp_instructions * 100, 1),
                     sig_cell(mix.unclassified_per_kflop, 3));
  h += "</tbody></table>";
}

void drill_down(const detail::Row& row, size_t index, std::string_view memory, std::string& h) {
  const core::Record& r = *row.record;
  h += fmt::format("<details id=\"pt-{}\"><summary>{} | {} &mdash; <span class=\"{}\">{}</span>"
                   "{}</summary>",
                   index, e(row.label), e(row.kernel), status_class(row.status), e(row.status),
                   row.verdict.empty() ? "" : " &mdash; " + e(detail::verdict_text(row)));
  if (!r.reason.empty()) h += "<p><b>Reason:</b> " + e(r.reason) + "</p>";

  if (row.diagnosis) {
    const core::Diagnosis& d = *row.diagnosis;
    h += "<h3>Diagnosis</h3><p><b>" + verdict_cell(row) + "</b>";
    for (const auto& f : row.flags) h += " " + flag_link(f);
    h += "</p><ul>";
    for (const auto& line : d.evidence) h += "<li>" + e(line) + "</li>";
    h += "</ul><p><b>Next step:</b> " + e(d.next_step) + "</p>";
    if (!d.launches.empty()) {
      h += "<table><thead><tr><th>launch</th><th>kernel</th><th class=\"n\">share of GPU time %</th>"
           "<th class=\"n\">DRAM TB/s</th><th class=\"n\">compute %</th><th class=\"n\">memory %</th>"
           "<th>verdict</th></tr></thead><tbody>";
      auto scaled = [](std::optional<double> v, double scale) -> std::optional<double> {
        if (!v) return std::nullopt;
        return *v * scale;
      };
      for (const auto& l : d.launches)
        h += fmt::format("<tr><td>{}</td><td>{}</td>{}{}{}{}<td>{}</td></tr>", e(l.name),
                         clamped("kname", l.kernel),
                         num_cell(l.time_share * 100, 1), num_cell(scaled(l.dram_bytes_per_s, 1e-12), 2),
                         num_cell(l.compute_sol_pct, 0), num_cell(l.memory_sol_pct, 0),
                         e(l.verdict ? std::string(core::to_string(*l.verdict)) : "-"));
      h += "</tbody></table>";
    }
    h += "<div class=\"kv\">";
    const json metrics = d.metrics;  // items() refers into it: it must outlive the loop
    for (const auto& [k, v] : metrics.items()) h += kv(k, json_value_text(v));
    h += "</div>";
  }

  const auto& l = r.latency;
  h += "<h3>Latency</h3><div class=\"kv\">";
  h += kv("samples", std::to_string(l.n));
  h += kv("P50 us", number_text(l.p50_us));
  h += kv("P50 95% CI us", number_text(l.p50_ci_low_us) + " .. " + number_text(l.p50_ci_high_us));
  for (const auto& [name, q] : {std::pair{"P90 us", 0.9}, std::pair{"P99 us", 0.99}}) {
    const core::ShownPercentile shown = core::shown_percentile(l, q);
    h += kv(name, shown.note.empty()
                      ? number_text(shown.value_us)
                      : fmt::format("{} ({}; the {} needs {} samples)", number_text(shown.value_us), shown.note,
                                    std::string_view(name).substr(0, 3), core::min_samples_for_quantile(q)));
  }
  h += kv("mean us", number_text(l.mean_us));
  h += kv("min / max us", number_text(l.min_us) + " / " + number_text(l.max_us));
  h += kv("stddev / mean", number_text(l.rel_stddev));
  h += kv("timing mode", core::to_string(r.timing_mode));
  if (!r.sampling_stop.empty()) h += kv("sampling stopped", r.sampling_stop);
  h += kv("launch overhead us", number_text(r.launch_overhead_us));
  if (row.decode && row.diagnosis) {
    // A decode point reads in bandwidth and bytes per generated token first.
    const core::DiagnosisMetrics& m = row.diagnosis->metrics;
    auto shown = [](std::optional<double> v) { return v ? number_text(*v) : std::string("-"); };
    h += kv("KV TB/s (DRAM bytes / P50)", shown(row.kv_tb_per_s));
    h += kv(fmt::format("% of the {} ceiling", memory), shown(row.pct_of_hbm_ceiling));
    h += kv("generated tokens per call", m.tokens_per_call ? std::to_string(*m.tokens_per_call) : "-");
    h += kv("KV cache GB", shown(m.kv_cache_bytes ? std::optional(*m.kv_cache_bytes / 1e9) : std::nullopt));
    h += kv("MB per generated token (DRAM / minimum)",
            shown(m.dram_bytes_per_token ? std::optional(*m.dram_bytes_per_token / 1e6) : std::nullopt) + " / " +
                shown(m.min_bytes_per_token ? std::optional(*m.min_bytes_per_token / 1e6) : std::nullopt));
    h += kv("read factor (DRAM bytes / minimum)", shown(m.excess_traffic_ratio));
    if (m.combine_time_share)
      h += kv("combine stage share of the call", m.combine_stage.value_or("") + " " + number_text(*m.combine_time_share));
  }
  h += kv("TFLOP/s (exact FLOPs)", number_text(r.tflops));
  // FlashAttention's convention beside it where it means something: square causal shapes.
  if (r.shape.causal && r.shape.seq_q == r.shape.seq_k)
    h += kv("TFLOP/s (FA convention)", number_text(r.tflops_fa_convention));
  // The CPU backend reads no clock under load: its zeros would read as a stopped clock.
  if (r.backend != core::BackendKind::cpu || r.clock.sm_mhz_median > 0) {
    h += kv("SM clock MHz under load (min / median / max; device max)",
            number_text(r.clock.sm_mhz_min) + " / " + number_text(r.clock.sm_mhz_median) + " / " +
                number_text(r.clock.sm_mhz_max) + "; " + number_text(r.clock.sm_mhz_unthrottled));
    h += kv("throttled samples", std::to_string(r.clock.throttled_samples));
  }
  h += kv("wall s", number_text(r.wall_s));
  h += "</div>";

  if (!r.stages.empty()) {
    h += "<h3>Stages</h3><table><thead><tr><th>stage</th><th class=\"n\">P50 us</th>"
         "<th class=\"n\">P99 us</th><th class=\"n\">share of P50</th><th class=\"n\">share of "
         "P99</th></tr></thead><tbody>";
    for (const auto& s : r.stages)
      h += fmt::format("<tr><td>{}</td>{}{}{}{}</tr>", e(s.name), num_cell(s.p50_us, 2),
                       stage_p99_cell(s, l.n), num_cell(s.share_of_p50 * 100, 1),
                       num_cell(s.share_of_p99 * 100, 1));
    h += "</tbody></table>";
  }

  const auto& c = r.counters;
  h += "<h3>Counters</h3><p>status <b>" + e(core::to_string(c.status)) + "</b>";
  if (!c.reason.empty()) h += ": " + e(counters_reason(c));
  if (c.passes) h += fmt::format(" &middot; {} passes, {:.1f} ms profiling", c.passes, c.profiling_ms);
  if (c.session)
    h += fmt::format(" (its session of {} point{}: pass set-up {:.0f} ms, running {:.0f} ms, closing {:.0f} ms, "
                     "evaluating {:.0f} ms)",
                     c.session->points, c.session->points == 1 ? "" : "s", c.session->pass_setup_ms, c.session->run_ms,
                     c.session->pass_close_ms, c.session->evaluate_ms);
  if (c.dram_write_tail_bytes)
    h += " &middot; DRAM written back after the call (lines it left dirty in L2): " +
         e(number_text(*c.dram_write_tail_bytes)) + " B";
  h += "</p>";
  auto metric_table = [&](const std::string& title, const std::map<std::string, double>& m) {
    if (m.empty()) return;
    h += "<table><thead><tr><th>" + clamped("kname", title) + "</th><th class=\"n\">value</th></tr></thead><tbody>";
    for (const auto& [name, value] : m)
      h += "<tr><td>" + e(name) + "</td><td class=\"n\">" + e(number_text(value)) + "</td></tr>";
    h += "</tbody></table>";
  };
  metric_table("total", c.total);
  for (const auto& k : c.per_kernel) metric_table("launch: " + k.kernel, k.metrics);
  if (const auto mix = core::instruction_mix(r)) instruction_mix_block(*mix, h);
  if (r.stalls) stalls_block(*r.stalls, h);
  if (r.timeline) h += detail::timeline_block(*r.timeline);

  const auto& o = r.occupancy;
  if (o.grid_blocks > 0 || !o.kernel.empty()) {
    h += "<h3>Occupancy</h3><div class=\"kv\">";
    h += kv("kernel", o.kernel);
    h += kv("threads / block", std::to_string(o.threads_per_block));
    h += kv("registers / thread", std::to_string(o.registers_per_thread));
    h += kv("shared memory / block B", std::to_string(o.smem_bytes_per_block));
    h += kv("grid blocks", std::to_string(o.grid_blocks));
    h += kv("blocks / SM", std::to_string(o.blocks_per_sm));
    h += kv("SMs", std::to_string(o.sm_count));
    h += kv("theoretical %", number_text(o.theoretical_pct));
    h += kv("achieved %", o.achieved_pct ? number_text(*o.achieved_pct) : "-");
    h += kv("limiter", o.limiter);
    h += kv("waves", number_text(o.waves));
    h += "</div>";
  }

  const auto& v = r.verification;
  h += "<h3>Verification</h3><div class=\"kv\">";
  h += kv("checked", v.checked ? "yes" : "no");
  if (v.checked) {
    h += kv("passed", v.passed ? "yes" : "NO");
    h += kv("seed", std::to_string(v.seed));
    h += kv("rows checked", fmt::format("{} of {}", v.rows_checked, v.rows_total));
    h += kv("unwritten elements", std::to_string(v.unwritten));
    h += kv("max |O err|", number_text(v.o_max_abs_err));
    h += kv("mean |O err|", number_text(v.o_mean_abs_err));
    h += kv("max |LSE err|", number_text(v.lse_max_abs_err));
    h += kv("naive max |O err|", number_text(v.naive_o_max_abs_err));
    h += kv(v.o_max_bound_ratio ? "tolerance (largest per-element bound, fp8)" : "tolerance", number_text(v.tolerance));
    if (v.o_max_bound_ratio) h += kv("worst |O err| / its bound", number_text(*v.o_max_bound_ratio));
    // A backward point's gradients (docs/verification.md#the-backward-pass).
    for (const auto& [name, g] : v.grads)
      h += kv(fmt::format("{} max err / naive / tolerance ({} of {} rows)", name, g.rows_checked, g.rows_total),
              number_text(g.max_abs_err) + " / " + number_text(g.naive_max_abs_err) + " / " + number_text(g.tolerance) +
                  (g.passed ? "" : " FAILED"));
    // A quantized KV cache: O above is against the dequantized inputs; this is what quantizing cost.
    if (v.quant.checked)
      h += kv("quantization cost: max / mean |O err|, max rel (vs unquantized)",
              number_text(v.quant.o_max_abs_err) + " / " + number_text(v.quant.o_mean_abs_err) + " / " +
                  number_text(v.quant.o_max_rel_err));
  }
  h += "</div>";

  const auto& cost = r.cost;
  h += "<h3>Cost model</h3><div class=\"kv\">";
  h += kv("FLOPs (exact)", number_text(cost.flops));
  h += kv(r.shape.backward() ? "FLOPs (FA convention: the forward's dense / 2 when causal, x 2.5 bwd, x 3.5 fwd_bwd)"
                              : "FLOPs (FA convention: dense / 2 when causal)",
          number_text(cost.flops_fa_convention));
  h += kv("FLOPs dense", number_text(cost.flops_dense));
  h += kv("min bytes read", number_text(cost.min_bytes_read));
  h += kv("min bytes write", number_text(cost.min_bytes_write));
  h += kv("S/P bytes", number_text(cost.sp_bytes));
  h += kv("workspace bytes", number_text(cost.workspace_bytes));
  h += kv("intensity FLOP/B", number_text(cost.intensity));
  if (cost.padded_flops > 0) {
    // A packed batch: what the same sequences padded to the longest would have cost.
    h += kv("packed batch", fmt::format("{} sequences, {} tokens", r.shape.batch, r.shape.tokens_q()));
    h += kv("FLOPs padded to the longest", number_text(cost.padded_flops));
    h += kv("min bytes padded to the longest", number_text(cost.padded_min_bytes));
    if (cost.flops > 0)
      h += kv("padding would add", fmt::format("{:.1f}% FLOPs", (cost.padded_flops / cost.flops - 1) * 100));
  }
  h += "</div></details>\n";
}

void rules_block(std::string& h) {
  h += "<section id=\"rules\"><h2>How to read a verdict</h2><p class=\"note\">The diagnosis decides the "
       "verdicts in this order and adds the flags independently; docs/diagnosis.md has each rule's evidence "
       "and the reason for each threshold, under the same anchors.</p><dl class=\"rules\">";
  for (const auto& r : detail::verdict_rules())
    h += fmt::format("<dt id=\"{}\">{}</dt><dd>{}</dd>", r.anchor, e(r.name), e(r.text));
  h += "</dl><h3>Flags</h3><dl class=\"rules\">";
  for (const auto& r : detail::flag_rules())
    h += fmt::format("<dt id=\"{}\">{}</dt><dd>{}</dd>", r.anchor, e(r.name), e(r.text));
  h += "</dl></section>\n";
}

json chart_data(const core::Results& results, const std::vector<detail::Row>& rows,
               const detail::SeriesLayout& layout) {
  const auto& c = results.context.ceilings;
  json charts = json::array();
  for (const auto& chart : layout.charts)
    charts.push_back({{"id", chart.id},
                      {"x", chart.x_field},
                      {"x_title", chart.x_title},
                      {"panels", chart.panels},
                      {"variants", chart.variants},
                      {"variant_title", chart.variant_title}});
  // The ceilings' figures, and for each dtype of the points the roof core::peak_flops_for gives it (the
  // chart draws one per dtype of the points; none for a dtype the ceilings give no roof, such as fp8
  // against ceilings measured without the fp8 probes).
  json flops = json::object();
  for (const auto& [dtype, v] : c.peak_flops_per_s) flops[dtype] = num_or_null(v);
  for (const core::Record& rec : results.records)
    if (const double roof = core::peak_flops_for(c, rec.shape.dtype); roof > 0)
      flops[std::string(core::to_string(rec.shape.dtype))] = num_or_null(roof);
  json points = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const core::Record& rec = *r.record;
    json flags = json::array();
    for (const auto& f : r.flags) flags.push_back(f);
    points.push_back({{"i", i},
                      {"label", r.label},
                      {"kernel", r.kernel},
                      {"status", r.status},
                      {"materialized", core::is_materialized(rec)},
                      {"dtype", std::string(core::to_string(rec.shape.dtype))},
                      {"batch", rec.shape.batch},
                      {"heads", rec.shape.heads},
                      {"kv_heads", rec.shape.kv_heads},
                      {"seq_q", rec.shape.seq_q},
                      {"seq_k", rec.shape.seq_k},
                      {"hdim", rec.shape.hdim},
                      {"causal", rec.shape.causal},
                      {"p50_us", num_or_null(r.p50_us)},
                      {"p99_us", num_or_null(r.p99_us)},
                      {"p99_note", r.p99_note},
                      {"tflops", num_or_null(r.tflops)},
                      {"intensity", num_or_null(r.intensity_flop_per_byte)},
                      {"achieved_flops_per_s", num_or_null(r.achieved_flops_per_s)},
                      {"pct_of_roof", num_or_null(r.pct_of_roof)},
                      {"decode", r.decode},
                      {"kv_tb_per_s", num_or_null(r.kv_tb_per_s)},
                      {"pct_of_hbm_ceiling", num_or_null(r.pct_of_hbm_ceiling)},
                      {"bytes_per_token", num_or_null(r.bytes_per_token)},
                      {"verdict", r.verdict},
                      {"memory_level", r.memory_level},
                      {"flags", flags},
                      {"own", detail::own_kernel(results.context, r.kernel)}});
    const detail::SeriesPlace& place = layout.places[i];
    if (place.chart >= 0)
      points.back()["series"] = {{"chart", place.chart}, {"panel", place.panel}, {"variant", place.variant}};
  }
  return {{"ceilings",
           {{"bw", num_or_null(c.peak_bw_bytes_per_s)}, {"flops", flops}, {"source", c.source}}},
          {"memory", memory_name(results.context.backend)},
          {"charts", charts},
          {"points", points}};
}

// The series charts: for each chart of the layout its throughput and its latency, drawn by the script.
void series_block(const detail::SeriesLayout& layout, std::string_view memory, std::string& h) {
  h += "<section id=\"sweep\"><h2>Throughput and latency</h2><p class=\"note\">One panel per dtype, head "
       "dimension and mask (and the fields that would need more line styles than there are); in each, one line "
       "per kernel and variant (the shape fields the sweep varied, a tie such as tokens= or dim= as one), and "
       "attnprof's own kernels on top. Decode points have charts of their own. Units follow the values.</p>";
  if (layout.charts.empty()) h += "<p class=\"note\">No point ran ok.</p>";
  for (size_t i = 0; i < layout.charts.size(); ++i) {
    const auto& c = layout.charts[i];
    const bool decode = c.id == "decode";
    h += fmt::format("<h3 id=\"sweep-{}\">{}</h3><p class=\"note\">{}</p>", c.id,
                     e(fmt::format("{}: {} vs {}", decode ? "Decode" : "Prefill",
                                   decode ? "KV-cache bandwidth" : "throughput", c.x_title)),
                     decode ? e(fmt::format("DRAM bytes over the P50 (from the counters; without them the "
                                            "cost-model minimum, a lower bound), under the {} ceiling.",
                                            memory))
                            : "The exact FLOPs of the unmasked scores over the P50 (for square causal shapes "
                              "within 1/N of FlashAttention's convention).");
    h += fmt::format("<div class=\"chart\" id=\"{0}-throughput-chart\" data-chart=\"{1}\" "
                     "data-measure=\"throughput\"></div><h3>{2}</h3><div class=\"chart\" id=\"{0}-latency-chart\" "
                     "data-chart=\"{1}\" data-measure=\"latency\"></div>",
                     c.id, i, decode ? "Decode: latency, P50 (thick) and P99 (thin)"
                                     : "Prefill: latency, P50 (thick) and P99 (thin)");
  }
  h += "</section>\n";
}

// The page's sections, linked.
void contents(const detail::SeriesLayout& layout, bool any_not_ok, bool any_why, std::string& h) {
  std::vector<std::pair<std::string, std::string>> items = {{"context", "Context"}, {"roofline", "Roofline"}};
  for (const auto& c : layout.charts)
    items.emplace_back("sweep-" + c.id, c.id == "decode" ? "Decode series" : "Prefill series");
  if (layout.charts.empty()) items.emplace_back("sweep", "Series");
  items.insert(items.end(), {{"points", "Points"}, {"comparison", "Reference vs fused"}});
  if (any_why) items.emplace_back("why-gap", "Why the gap");
  if (any_not_ok) items.emplace_back("not-ok", "Points not ok");
  items.insert(items.end(), {{"rules", "How to read a verdict"}, {"details", "Drill-down"}});
  h += "<nav id=\"toc\" aria-label=\"contents\"><b>Contents</b>";
  for (const auto& [id, title] : items) h += fmt::format("<a href=\"#{}\">{}</a>", id, title);
  h += "</nav>\n";
}

class HtmlRenderer final : public Renderer {
 public:
  std::string_view format() const override { return "html"; }
  void render(const core::Results& results, std::ostream& out) const override;
};

}  // namespace

const Renderer& detail::html_renderer() {
  static const HtmlRenderer renderer;
  return renderer;
}

void HtmlRenderer::render(const core::Results& results, std::ostream& out) const {
  const auto rows = detail::make_rows(results);
  const auto layout = detail::series_layout(results, rows);
  const auto not_ok = not_ok_groups(rows);
  const auto& ctx = results.context;
  const std::string_view memory = memory_name(ctx.backend);
  size_t ok_points = 0;
  for (const auto& r : rows) ok_points += r.status == "ok";

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  h += "<title>attnprof report: " + e(ctx.device.name.empty() ? "unknown device" : ctx.device.name) +
       "</title><style>";
  h += detail::report_css();
  h += "</style></head>\n<body>\n";
  h += "<header><h1>attnprof report</h1><p class=\"sub\">" + e(ctx.device.name) + " &middot; " +
       e(core::to_string(ctx.backend)) + " backend &middot; " + e(ctx.date_utc) + " &middot; " +
       std::to_string(rows.size()) + " points, " + std::to_string(ok_points) + " ok</p></header>\n";
  const auto why_pairs = core::why_against_fastest(results);
  contents(layout, !not_ok.empty(), !why_pairs.empty(), h);
  const std::string ceilings = detail::ceilings_summary(results);
  context_block(ctx, ceilings, h);

  h += "<div class=\"filters\" id=\"filters\" aria-label=\"filters of the charts and the points table\"></div>";
  h += "<section id=\"roofline\"><h2>Roofline</h2><p class=\"note\">Log-log. One marker per (shape, "
       "kernel) that ran ok, at its measured arithmetic intensity and achieved FLOP/s (counters "
       "where present, else the cost model): its shape names the kernel, its fill the verdict; attnprof's "
       "own kernels on top. Ceilings: " +
       e(ceilings) +
       ". Hover a marker for details; click it to open its drill-down.</p>"
       "<div class=\"chart\" id=\"roofline-chart\"></div>"
       "<noscript><p>The charts need JavaScript; the tables below do not.</p></noscript></section>\n";
  series_block(layout, memory, h);
  points_table(rows, not_ok, memory, h);
  comparison_block(core::compare_kernels(results), h);
  why_block(why_pairs, h);
  not_ok_block(rows, not_ok, h);
  rules_block(h);
  h += "<section id=\"details\"><h2>Drill-down</h2>";
  for (size_t i = 0; i < rows.size(); ++i) drill_down(rows[i], i, memory, h);
  h += "</section>\n<div id=\"tip\" hidden></div>\n";
  h += "<script type=\"application/json\" id=\"attnprof-data\">" +
       script_json(chart_data(results, rows, layout)) + "</script>\n<script>";
  h += detail::report_js();
  h += "</script>\n</body></html>\n";
  out << h;
}

}  // namespace attnprof::report
