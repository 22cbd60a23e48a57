#include "report/view.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/diagnosis_model.hpp"
#include "core/escape.hpp"
#include "core/roofline.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"

namespace attnprof::report::detail {
namespace {

// core::level_name's "HBM (DRAM)" is a GPU's; the tables name the level on every backend.
std::string table_level_name(core::MemoryLevel level) {
  switch (level) {
    case core::MemoryLevel::dram: return "DRAM";
    case core::MemoryLevel::l2: return "L2";
    case core::MemoryLevel::l1: return "L1/shared";
    case core::MemoryLevel::on_chip: return "on chip";
  }
  return "";
}

}  // namespace

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
      if (row.diagnosis->verdict == core::Verdict::memory_bound && row.diagnosis->metrics.memory_level)
        row.memory_level = table_level_name(*row.diagnosis->metrics.memory_level);
      for (core::Flag f : row.diagnosis->flags) row.flags.emplace_back(core::to_string(f));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string verdict_text(const Row& row) {
  return row.memory_level.empty() ? row.verdict : fmt::format("{} ({})", row.verdict, row.memory_level);
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

std::string ceilings_summary(const core::Results& results) {
  const core::Ceilings& c = results.context.ceilings;
  if (c.peak_bw_bytes_per_s <= 0 && c.peak_flops_per_s.empty()) return "none recorded";
  std::string out;
  if (results.context.backend != core::BackendKind::cpu) {
    out = fmt::format("HBM {:.3g} TB/s", c.peak_bw_bytes_per_s / 1e12);
    for (const auto& [dtype, flops] : c.peak_flops_per_s)
      out += fmt::format(", {} {:.4g} TFLOP/s", dtype, flops / 1e12);
  } else {
    out = "DRAM " + core::text::scaled_rate(c.peak_bw_bytes_per_s, "B/s");
    for (const auto& [dtype, flops] : c.peak_flops_per_s)
      out += fmt::format(", {} {}", dtype, core::text::scaled_rate(flops, "FLOP/s"));
  }
  if (!c.source.empty()) out += " (" + c.source + ")";
  // Ceilings without a bandwidth or any compute figure place no point (the diagnosis turns to the
  // datasheet, or says so per point): only usable ones can miss a dtype's roof.
  if (!(c.peak_bw_bytes_per_s > 0) || c.peak_flops_per_s.empty()) return out;
  std::set<core::DType> named;
  for (const core::Record& r : results.records) {
    const bool measured = r.status == core::Status::ok || r.status == core::Status::incorrect;
    if (!measured || !named.insert(r.shape.dtype).second) continue;
    if (const std::string missing = core::missing_roof(c, r.shape.dtype); !missing.empty()) out += "; " + missing;
  }
  return out;
}

ColumnUnit column_unit(const std::vector<std::optional<double>>& values, core::BackendKind backend,
                       std::string_view gpu_prefix) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  const auto of = [](std::string_view prefix) {
    for (const auto& [scale, p] : kPrefixes)
      if (p == prefix) return ColumnUnit{scale, p};
    return ColumnUnit{1, ""};
  };
  if (backend != core::BackendKind::cpu) return of(gpu_prefix);
  double largest = 0;
  for (const auto& v : values)
    if (v && std::isfinite(*v)) largest = std::max(largest, std::abs(*v));
  if (largest == 0) return of(gpu_prefix);  // nothing to fit
  for (const auto& [scale, prefix] : kPrefixes)
    if (largest >= scale) return {scale, prefix};
  return {1, ""};
}

TableUnits table_units(const std::vector<Row>& rows, core::BackendKind backend) {
  std::vector<std::optional<double>> flops, kv_rate, per_token;
  for (const auto& row : rows) {
    if (!row.decode && row.tflops) flops.push_back(*row.tflops * 1e12);
    if (row.kv_tb_per_s) kv_rate.push_back(*row.kv_tb_per_s * 1e12);
    per_token.push_back(row.bytes_per_token);
  }
  return {column_unit(flops, backend), column_unit(kv_rate, backend), column_unit(per_token, backend, "M")};
}

}  // namespace attnprof::report::detail
