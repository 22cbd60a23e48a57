#include "report/view.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/diagnosis_model.hpp"
#include "core/escape.hpp"
#include "core/stats.hpp"

namespace attnprof::report::detail {

std::vector<Row> make_rows(const core::Results& results) {
  std::vector<Row> rows;
  rows.reserve(results.records.size());
  for (const auto& r : results.records) {
    Row row;
    row.record = &r;
    row.label = r.shape.label();
    row.kernel = r.kernel;
    row.status = std::string(core::to_string(r.status));
    row.reason = r.reason;
    row.measured = r.status == core::Status::ok || r.status == core::Status::incorrect;
    if (row.measured) {
      row.diagnosis = r.diagnosis;
      row.p50_us = r.latency.p50_us;
      const core::ShownPercentile p99 = core::shown_percentile(r.latency, 0.99);
      row.p99_us = p99.value_us;
      row.p99_note = p99.note;
      row.tflops = r.tflops;
    }
    // A measured point without a diagnosis (results not analysed: report::analyse) shows its timings
    // and "-" for everything the diagnosis would give.
    if (row.measured && row.diagnosis) {
      const core::DiagnosisMetrics& m = row.diagnosis->metrics;
      row.pct_of_roof = m.pct_of_roof;
      row.intensity_flop_per_byte = m.intensity_flop_per_byte;
      row.achieved_flops_per_s = m.achieved_flops_per_s;
      row.dram_bytes = m.dram_bytes;
      row.decode = m.decode.value_or(false);
      if (row.decode) {
        if (m.achieved_bytes_per_s) row.kv_tb_per_s = *m.achieved_bytes_per_s / 1e12;
        row.pct_of_hbm_ceiling = m.pct_of_hbm_ceiling;
        row.bytes_per_token = m.dram_bytes_per_token ? m.dram_bytes_per_token : m.min_bytes_per_token;
      }
      row.verdict = std::string(core::to_string(row.diagnosis->verdict));
      for (core::Flag f : row.diagnosis->flags) row.flags.emplace_back(core::to_string(f));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

bool any_decode(const std::vector<Row>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.decode; });
}

std::string fixed(std::optional<double> v, int decimals) {
  if (!v) return "-";
  if (std::isnan(*v)) return "nan";
  return fmt::format("{:.{}f}", *v, decimals);
}

std::string significant(std::optional<double> v, int digits, int min_decimals) {
  if (!v) return "-";
  if (!std::isfinite(*v)) return std::isnan(*v) ? "nan" : (*v > 0 ? "inf" : "-inf");
  if (*v == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::abs(*v))));
  const int decimals = std::clamp(std::max(digits - 1 - magnitude, min_decimals), 0, 6);
  return fmt::format("{:.{}f}", *v, decimals);
}

std::string p99_text(const Row& row, int decimals) {
  return core::percentile_text({row.p99_us.value_or(0), row.p99_note}, fixed(row.p99_us, decimals));
}

std::string printable(std::string_view s) { return core::escape::terminal(s); }

std::string ceilings_summary(const core::Ceilings& c, std::string_view memory) {
  if (c.peak_bw_bytes_per_s <= 0 && c.peak_flops_per_s.empty()) return "none recorded";
  std::string out = fmt::format("{} {:.3g} TB/s", memory, c.peak_bw_bytes_per_s / 1e12);
  for (const auto& [dtype, flops] : c.peak_flops_per_s)
    out += fmt::format(", {} {:.4g} TFLOP/s", dtype, flops / 1e12);
  if (!c.source.empty()) out += " (" + c.source + ")";
  return out;
}

}  // namespace attnprof::report::detail
