#include "report/why.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/stalls.hpp"
#include "core/text.hpp"

namespace attnprof::report {

namespace {

using core::escape::terminal;

std::string state_name(const std::string& state) {
  return state == core::kIssuedReason ? "selected (issuing)" : terminal(state);
}

std::string signed_us(double us) { return fmt::format("{}{} us", us < 0 ? "-" : "+", core::text::latency_us(std::abs(us))); }
// A time derived from sampled shares: one decimal, as far as the shares of ~10^5 samples carry.
std::string sampled_us(double us) { return fmt::format("{:.1f}", us); }
std::string signed_sampled_us(double us) { return fmt::format("{:+.1f} us", us); }

std::string value_text(double v, const std::string& unit) {
  if (unit == "%") return fmt::format("{:.1f}%", v);
  if (unit == "x") return fmt::format("{:.3g}x", v);
  if (unit == "bytes") return core::text::bytes(v);
  if (unit == "count") return core::text::count(v);
  if (unit == "MHz") return fmt::format("{:.0f} MHz", v);
  return core::text::human(v);
}

// A spot as a reader finds it: file:line, else the SASS offset (with its function when the side's
// samples span several).
std::string spot_text(const core::WhySpot& s, bool name_kernel) {
  if (s.line > 0) return fmt::format("{}:{}", terminal(s.file), s.line);
  return name_kernel ? fmt::format("{} SASS 0x{:x}", terminal(s.kernel), s.pc_offset) : fmt::format("SASS 0x{:x}", s.pc_offset);
}

// "in fused-sm90: device_math.cuh:28 412 us (torch:cudnn there 30.1 us), ..." for the side that spends
// more time in the state.
std::string spots_line(const core::StallTerm& t, const core::WhyPoint& p, const core::WhyReport& r) {
  const bool candidate_side = t.delta_us >= 0;
  const auto& spots = candidate_side ? t.candidate_spots : t.baseline_spots;
  if (spots.empty()) return {};
  const auto& sampled = candidate_side ? p.candidate_sampled : p.baseline_sampled;
  const std::string& side = candidate_side ? r.candidate : r.baseline;
  const std::string& other = candidate_side ? r.baseline : r.candidate;
  std::vector<std::string> parts;
  for (const core::WhySpot& s : spots) {
    std::string part = fmt::format("{} {} us ({:.0f}% of the state)", spot_text(s, sampled.size() > 1),
                                   sampled_us(s.us), s.share_of_state * 100);
    if (s.other_us) part += fmt::format(", {} there {} us", terminal(other), sampled_us(*s.other_us));
    parts.push_back(std::move(part));
  }
  return fmt::format("        in {}: {}\n", terminal(side), fmt::join(parts, "; "));
}

void terms_block(const core::WhyPoint& p, const core::WhyReport& r, size_t top, std::string& out) {
  out += fmt::format("  warp states, share of samples x P50 ({} and {} samples)\n", p.baseline_samples, p.candidate_samples);
  out += fmt::format("    {:<20} {:>22} {:>22} {:>21}\n", "", "baseline", "candidate", "gap");
  const size_t shown = std::min(top, p.terms.size());
  for (size_t i = 0; i < shown; ++i) {
    const core::StallTerm& t = p.terms[i];
    out += fmt::format("    {:<20} {:>5.1f}% {:>12} us {:>5.1f}% {:>12} us {:>12} {:>+7.1f}%\n", state_name(t.state),
                       t.baseline_share * 100, sampled_us(t.baseline_us), t.candidate_share * 100,
                       sampled_us(t.candidate_us), signed_sampled_us(t.delta_us), t.delta_pct);
    out += spots_line(t, p, r);
  }
  if (shown < p.terms.size()) {
    double rest = 0, rest_pct = 0;
    for (size_t i = shown; i < p.terms.size(); ++i) {
      rest += p.terms[i].delta_us;
      rest_pct += p.terms[i].delta_pct;
    }
    out += fmt::format("    {:<20} {:>45} {:>12} {:>+7.1f}%\n",
                       fmt::format("{} other state{}", p.terms.size() - shown, p.terms.size() - shown == 1 ? "" : "s"),
                       "", signed_sampled_us(rest), rest_pct);
  }
}

void evidence_block(const core::WhyPoint& p, const core::WhyReport& r, size_t top, std::string& out) {
  std::vector<const core::WhyEvidence*> differ, same;
  for (const core::WhyEvidence& e : p.evidence) (e.same() ? same : differ).push_back(&e);
  if (!differ.empty()) out += "  evidence, not additive (baseline -> candidate, largest difference first)\n";
  const size_t shown = std::min(top, differ.size());
  for (size_t i = 0; i < shown; ++i) {
    const core::WhyEvidence& e = *differ[i];
    out += fmt::format("    {:<34} {:>10} -> {:<10} {}\n", e.what, value_text(e.baseline, e.unit),
                       value_text(e.candidate, e.unit), e.source);
    if (!e.baseline_note.empty() || !e.candidate_note.empty()) {
      if (e.baseline_note == e.candidate_note)
        out += fmt::format("        both: {}\n", terminal(e.baseline_note));
      else
        out += fmt::format("        {}: {}; {}: {}\n", terminal(r.baseline), terminal(e.baseline_note.empty() ? "-" : e.baseline_note),
                           terminal(r.candidate), terminal(e.candidate_note.empty() ? "-" : e.candidate_note));
    }
  }
  if (shown < differ.size())
    out += fmt::format("    {} more that differ less (--top {} shows them)\n", differ.size() - shown, differ.size());
  if (!same.empty()) {
    std::vector<std::string> parts;
    for (const core::WhyEvidence* e : same) parts.push_back(fmt::format("{} {}", e->what, value_text(e->candidate, e->unit)));
    out += fmt::format("  the same on both sides: {}\n", fmt::join(parts, ", "));
  }
}

void kernels_block(const core::WhyPoint& p, const core::WhyReport& r, std::string& out) {
  if (p.baseline_kernels.empty() && p.candidate_kernels.empty()) return;
  const auto list = [](const std::vector<core::WhyKernelTime>& ks) {
    std::vector<std::string> parts;
    for (const auto& k : ks)
      parts.push_back(fmt::format("{} {:.0f}% {} us", terminal(k.kernel), k.share * 100, core::text::latency_us(k.us)));
    return fmt::format("{}", fmt::join(parts, ", "));
  };
  out += fmt::format("  kernels per call: {}: {}; {}: {}\n", terminal(r.baseline), list(p.baseline_kernels),
                     terminal(r.candidate), list(p.candidate_kernels));
}

void point_block(const core::WhyPoint& p, const core::WhyReport& r, size_t top,
                 const std::vector<std::string>& common_missing, std::string& out) {
  out += fmt::format("\n{}\n", terminal(p.shape));
  out += fmt::format("  P50 {} -> {} us: {} ({:+.1f}%); {} runs at {:.3f}x {}'s speed\n",
                     core::text::latency_us(p.baseline_p50_us), core::text::latency_us(p.candidate_p50_us),
                     signed_us(p.gap_us), p.gap_pct, terminal(r.candidate), p.speed_ratio, terminal(r.baseline));
  // Per SM cycle, where the clocks under load differ enough to change the ratio's third decimal.
  if (p.speed_ratio_per_cycle && std::abs(*p.speed_ratio_per_cycle - p.speed_ratio) >= 0.0005)
    out += fmt::format("  per SM cycle {:.3f}x: the SM clock under load was {:.0f} MHz ({}) and {:.0f} MHz ({})\n",
                       *p.speed_ratio_per_cycle, p.baseline_sm_mhz, terminal(r.baseline), p.candidate_sm_mhz,
                       terminal(r.candidate));
  if (p.gap_within_noise)
    out += fmt::format("  the medians' 95% intervals overlap ({}-{} and {}-{} us): the gap is within the noise\n",
                       core::text::latency_us(p.baseline_ci_low_us), core::text::latency_us(p.baseline_ci_high_us),
                       core::text::latency_us(p.candidate_ci_low_us), core::text::latency_us(p.candidate_ci_high_us));
  if (p.method == core::WhyMethod::warp_states) terms_block(p, r, top, out);
  kernels_block(p, r, out);
  evidence_block(p, r, top, out);
  for (const std::string& m : p.missing)
    if (std::find(common_missing.begin(), common_missing.end(), m) == common_missing.end())
      out += "  missing: " + terminal(m) + "\n";
}

// The missing-data lines every point has, said once above the points.
std::vector<std::string> missing_everywhere(const core::WhyReport& r) {
  if (r.points.empty()) return {};
  std::vector<std::string> common = r.points.front().missing;
  for (const core::WhyPoint& p : r.points)
    std::erase_if(common, [&](const std::string& m) { return std::find(p.missing.begin(), p.missing.end(), m) == p.missing.end(); });
  return common;
}

}  // namespace

std::string render_why(const core::WhyReport& r, size_t top) {
  std::string out = fmt::format("why: {} (baseline) -> {} (candidate)", terminal(r.baseline), terminal(r.candidate));
  if (!r.files.empty()) {
    std::vector<std::string> files;
    for (const auto& f : r.files) files.push_back(terminal(f));
    out += fmt::format(", from {}", fmt::join(files, ", "));
  }
  out += "\n";
  const bool any_terms = std::any_of(r.points.begin(), r.points.end(),
                                     [](const core::WhyPoint& p) { return p.method == core::WhyMethod::warp_states; });
  if (any_terms)
    out += "a warp state's time is its share of the call's warp samples x the P50: sampled shares, not cycle counts;\n"
           "over every state the terms sum to the gap\n";
  const std::vector<std::string> common_missing = missing_everywhere(r);
  for (const std::string& m : common_missing) out += "missing at every shape: " + terminal(m) + "\n";
  for (const core::WhyPoint& p : r.points) point_block(p, r, top, common_missing, out);
  if (!r.skipped.empty()) {
    out += "\nnot compared (a side did not run ok):\n";
    for (const core::WhySkipped& s : r.skipped)
      out += fmt::format("  {}: {} {}, {} {}\n", terminal(s.shape), terminal(r.baseline), s.baseline_status,
                         terminal(r.candidate), s.candidate_status);
  }
  return out;
}

std::string why_term_line(const core::StallTerm& t, const core::WhyPoint& p, std::string_view baseline,
                          std::string_view candidate) {
  std::string line = fmt::format("{} {} ({:+.1f}%)", state_name(t.state), signed_sampled_us(t.delta_us), t.delta_pct);
  const bool candidate_side = t.delta_us >= 0;
  const auto& spots = candidate_side ? t.candidate_spots : t.baseline_spots;
  if (!spots.empty())
    line += fmt::format(", in {} at {}", terminal(candidate_side ? candidate : baseline),
                        spot_text(spots.front(), (candidate_side ? p.candidate_sampled : p.baseline_sampled).size() > 1));
  return line;
}

std::string render_why_json(const core::WhyReport& r) { return core::dump_json(nlohmann::json(r), 2) + "\n"; }

}  // namespace attnprof::report
