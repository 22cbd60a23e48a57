// RFC 4180 CSV: CRLF line ends; a field holding a comma, a double quote, CR or LF (or leading or
// trailing space) is enclosed in double quotes with inner quotes doubled. A text cell that a
// spreadsheet would run as a formula is prefixed with ' first (core::escape::csv_formula_guard). One row per point; a
// column per stage (p50) and per counter seen anywhere in the file, empty where a point lacks it.
#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/escape.hpp"
#include "core/stats.hpp"
#include "report/formats.hpp"
#include "report/report.hpp"
#include "report/view.hpp"

namespace attnprof::report {

using nlohmann::json;

namespace {

std::string csv_field(std::string_view cell) {
  const std::string guarded = core::escape::csv_formula_guard(cell);
  const std::string_view s = guarded;
  const bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

// Shortest text that reads back to the same double; "nan", "inf", "-inf" spelled out.
std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}
std::string num(std::optional<double> v) { return v ? num(*v) : std::string(); }
std::string num(int64_t v) { return fmt::format("{}", v); }

// The diagnosis columns: name and field, in column order.
using Metrics = core::DiagnosisMetrics;
struct MetricColumn {
  const char* name;
  std::string (*text)(const Metrics&);
};
template <auto Field>
std::string field_text(const Metrics& m) {
  const auto& v = m.*Field;
  if (!v) return "";
  using T = std::decay_t<decltype(*v)>;
  if constexpr (std::is_same_v<T, std::string>) return *v;
  else if constexpr (std::is_same_v<T, bool>) return *v ? "true" : "false";
  else return num(*v);
}
std::string level_text(const Metrics& m) {
  return m.memory_level ? std::string(core::to_string(*m.memory_level)) : std::string();
}
const MetricColumn kDiagnosisMetrics[] = {
    {"flops", field_text<&Metrics::flops>},
    {"flops_source", field_text<&Metrics::flops_source>},
    {"flops_vs_cost", field_text<&Metrics::flops_vs_cost>},
    {"dram_bytes", field_text<&Metrics::dram_bytes>},
    {"bytes_source", field_text<&Metrics::bytes_source>},
    {"intensity_flop_per_byte", field_text<&Metrics::intensity_flop_per_byte>},
    {"achieved_flops_per_s", field_text<&Metrics::achieved_flops_per_s>},
    {"achieved_bytes_per_s", field_text<&Metrics::achieved_bytes_per_s>},
    {"attainable_flops_per_s", field_text<&Metrics::attainable_flops_per_s>},
    {"pct_of_roof", field_text<&Metrics::pct_of_roof>},
    {"pct_of_clock_scaled_roof", field_text<&Metrics::pct_of_clock_scaled_roof>},
    {"roof_bound", field_text<&Metrics::roof_bound>},
    {"compute_sol_pct", field_text<&Metrics::compute_sol_pct>},
    {"memory_sol_pct", field_text<&Metrics::memory_sol_pct>},
    {"sol_source", field_text<&Metrics::sol_source>},
    {"memory_level", level_text},
    {"dram_sol_pct", field_text<&Metrics::dram_sol_pct>},
    {"l2_sol_pct", field_text<&Metrics::l2_sol_pct>},
    {"l1_sol_pct", field_text<&Metrics::l1_sol_pct>},
    {"compute_pipe", field_text<&Metrics::compute_pipe>},
    {"compute_pipe_pct", field_text<&Metrics::compute_pipe_pct>},
    {"issue_active_pct", field_text<&Metrics::issue_active_pct>},
    {"latency_stall_share", field_text<&Metrics::latency_stall_share>},
    {"dram_write_tail_bytes", field_text<&Metrics::dram_write_tail_bytes>},
    {"excess_traffic_ratio", field_text<&Metrics::excess_traffic_ratio>},
    {"sp_share", field_text<&Metrics::sp_share>},
    {"kernel_variant", field_text<&Metrics::kernel_variant>},
    {"query_tile_rows", field_text<&Metrics::query_tile_rows>},
    {"tail_source", field_text<&Metrics::tail_source>},
    {"tail_idle_share", field_text<&Metrics::tail_idle_share>},
    {"last_query_tile_rows", field_text<&Metrics::last_query_tile_rows>},
    // Decode points (empty for the others): docs/diagnosis.md "Decode points".
    {"decode", field_text<&Metrics::decode>},
    {"tokens_per_call", field_text<&Metrics::tokens_per_call>},
    {"kv_cache_bytes", field_text<&Metrics::kv_cache_bytes>},
    {"min_bytes_per_token", field_text<&Metrics::min_bytes_per_token>},
    {"dram_bytes_per_token", field_text<&Metrics::dram_bytes_per_token>},
    {"pct_of_hbm_ceiling", field_text<&Metrics::pct_of_hbm_ceiling>},
    {"hbm_stream_us", field_text<&Metrics::hbm_stream_us>},
    {"short_call_limit_us", field_text<&Metrics::short_call_limit_us>},
    {"fixed_time_share", field_text<&Metrics::fixed_time_share>},
    {"combine_stage", field_text<&Metrics::combine_stage>},
    {"combine_time_share", field_text<&Metrics::combine_time_share>},
};

class CsvRenderer final : public Renderer {
 public:
  std::string_view format() const override { return "csv"; }
  void render(const core::Results& results, std::ostream& out) const override;
};

}  // namespace

const Renderer& detail::csv_renderer() {
  static const CsvRenderer renderer;
  return renderer;
}

namespace {
// A backward point's gradients (core::Verification::grads), in the CSV's column order.
constexpr std::array<std::string_view, 3> kGradNames = {"dq", "dk", "dv"};
}  // namespace

void CsvRenderer::render(const core::Results& results, std::ostream& out) const {
  using namespace detail;
  const auto rows = make_rows(results);
  std::set<std::string> stage_names, counter_names;
  for (const auto& r : results.records) {
    for (const auto& s : r.stages) stage_names.insert(s.name);
    for (const auto& [name, value] : r.counters.total) counter_names.insert(name);
  }

  std::vector<std::string> header = {
      "key", "label", "batch", "heads", "kv_heads", "seq_q", "seq_k", "hdim", "causal", "dtype",
      "kernel", "backend", "device_id", "status", "reason", "timing_mode", "samples", "p50_us",
      "p99_us", "p90_us", "mean_us", "min_us", "max_us", "stddev_us", "rel_stddev",
      "p50_ci_low_us", "p50_ci_high_us", "launch_overhead_us", "tflops", "tflops_fa_convention",
      "p99_supported", "cost_flops", "cost_flops_fa_convention", "cost_flops_dense", "cost_min_bytes_read", "cost_min_bytes_write", "cost_sp_bytes",
      "cost_workspace_bytes", "cost_intensity"};
  // Packed (variable-length) batches add their padded cost, only when the results hold one (a dense
  // sweep's columns stay as they were).
  const bool packed_columns = std::any_of(results.records.begin(), results.records.end(),
                                          [](const core::Record& r) { return r.cost.padded_flops > 0; });
  if (packed_columns)
    for (const char* k : {"tokens", "cost_padded_flops", "cost_padded_min_bytes"}) header.emplace_back(k);
  // A quantized KV cache's storage and the accuracy its quantization costs, only when the results hold one.
  const bool quantized_columns = std::any_of(results.records.begin(), results.records.end(),
                                             [](const core::Record& r) { return r.shape.quantized_kv(); });
  if (quantized_columns)
    for (const char* k : {"kv_dtype", "kv_scale", "quant_o_max_abs_err", "quant_o_mean_abs_err", "quant_o_max_rel_err"})
      header.emplace_back(k);
  // fp8 prefill's per-element bound (Verification::o_max_bound_ratio), only when the results hold one.
  const bool bound_column = std::any_of(results.records.begin(), results.records.end(), [](const core::Record& r) {
    return r.verification.o_max_bound_ratio.has_value();
  });
  if (bound_column) header.emplace_back("o_max_bound_ratio");
  // A backward point's pass and each gradient's check, only when the results hold one.
  const bool backward_columns = std::any_of(results.records.begin(), results.records.end(),
                                            [](const core::Record& r) { return r.shape.backward(); });
  if (backward_columns) {
    header.emplace_back("pass");
    for (const auto& grad : kGradNames)
      for (const char* k : {"max_abs_err", "tolerance", "passed"}) header.push_back(fmt::format("{}_{}", grad, k));
  }
  for (const auto& c : kDiagnosisMetrics) header.emplace_back(c.name);
  for (const char* k : {"verdict", "flags", "next_step", "occupancy_kernel", "threads_per_block",
                        "registers_per_thread", "smem_bytes_per_block", "grid_blocks",
                        "blocks_per_sm", "sm_count", "theoretical_occupancy_pct",
                        "achieved_occupancy_pct", "occupancy_limiter", "waves", "verified",
                        "verification_passed", "o_max_abs_err", "o_mean_abs_err",
                        "lse_max_abs_err", "naive_o_max_abs_err", "tolerance", "unwritten",
                        "sm_mhz_min", "sm_mhz_median", "sm_mhz_max", "sm_mhz_unthrottled", "throttled_samples",
                        "counters_status", "counters_reason", "counters_passes", "wall_s"})
    header.emplace_back(k);
  for (const auto& s : stage_names) header.push_back("stage_p50_us:" + s);
  for (const auto& c : counter_names) header.push_back("counter:" + c);

  auto emit = [&](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << csv_field(fields[i]);
    out << "\r\n";
  };
  emit(header);

  for (const auto& row : rows) {
    const core::Record& r = *row.record;
    const bool timed = row.measured;
    auto t = [&](double v) { return timed ? num(v) : std::string(); };
    std::vector<std::string> f = {
        core::point_key(r), row.label, num(r.shape.batch), num(r.shape.heads),
        num(r.shape.kv_heads), num(r.shape.seq_q), num(r.shape.seq_k), num(r.shape.hdim),
        r.shape.causal ? "true" : "false", std::string(core::to_string(r.shape.dtype)), r.kernel,
        std::string(core::to_string(r.backend)), num(int64_t{r.device_id}), row.status, r.reason,
        std::string(core::to_string(r.timing_mode)),
        num(r.latency.n), t(r.latency.p50_us), t(r.latency.p99_us), t(r.latency.p90_us),
        t(r.latency.mean_us), t(r.latency.min_us), t(r.latency.max_us), t(r.latency.stddev_us),
        t(r.latency.rel_stddev), t(r.latency.p50_ci_low_us), t(r.latency.p50_ci_high_us),
        t(r.launch_overhead_us), t(r.tflops), t(r.tflops_fa_convention),
        timed ? std::string(core::quantile_supported(r.latency.n, 0.99) ? "true" : "false") : std::string(),
        num(r.cost.flops), num(r.cost.flops_fa_convention), num(r.cost.flops_dense),
        num(r.cost.min_bytes_read), num(r.cost.min_bytes_write), num(r.cost.sp_bytes),
        num(r.cost.workspace_bytes), num(r.cost.intensity)};
    if (packed_columns) {
      f.push_back(num(r.shape.tokens_q()));
      f.push_back(r.cost.padded_flops > 0 ? num(r.cost.padded_flops) : std::string());
      f.push_back(r.cost.padded_flops > 0 ? num(r.cost.padded_min_bytes) : std::string());
    }
    if (quantized_columns) {
      const core::QuantCost& q = r.verification.quant;
      f.push_back(r.shape.quantized_kv() ? std::string(core::to_string(r.shape.kv_dtype)) : std::string());
      f.push_back(r.shape.quantized_kv() ? std::string(core::to_string(r.shape.kv_scale)) : std::string());
      for (double x : {q.o_max_abs_err, q.o_mean_abs_err, q.o_max_rel_err}) f.push_back(q.checked ? num(x) : std::string());
    }
    if (bound_column) {
      const auto& ratio = r.verification.o_max_bound_ratio;
      f.push_back(ratio ? num(*ratio) : std::string());
    }
    if (backward_columns) {
      f.emplace_back(core::to_string(r.shape.pass));
      for (const auto& grad : kGradNames) {
        const auto it = r.verification.grads.find(std::string(grad));
        const bool checked = it != r.verification.grads.end();
        f.push_back(checked ? num(it->second.max_abs_err) : std::string());
        f.push_back(checked ? num(it->second.tolerance) : std::string());
        f.push_back(checked ? (it->second.passed ? "true" : "false") : std::string());
      }
    }
    for (const auto& c : kDiagnosisMetrics) f.push_back(row.diagnosis ? c.text(row.diagnosis->metrics) : std::string());
    const auto& o = r.occupancy;
    const auto& v = r.verification;
    const bool has_occupancy = o.grid_blocks > 0;
    auto occ = [&](int64_t x) { return has_occupancy ? num(x) : std::string(); };
    const std::vector<std::string> tail = {
          row.verdict, fmt::format("{}", fmt::join(row.flags, ";")),
          row.diagnosis ? row.diagnosis->next_step : std::string(),
          o.kernel, occ(o.threads_per_block), occ(o.registers_per_thread),
          occ(o.smem_bytes_per_block), occ(o.grid_blocks), occ(o.blocks_per_sm), occ(o.sm_count),
          has_occupancy ? num(o.theoretical_pct) : "", num(o.achieved_pct), o.limiter,
          has_occupancy ? num(o.waves) : "", v.checked ? "true" : "false",
          v.checked ? (v.passed ? "true" : "false") : "", v.checked ? num(v.o_max_abs_err) : "",
          v.checked ? num(v.o_mean_abs_err) : "", v.checked ? num(v.lse_max_abs_err) : "",
          v.checked ? num(v.naive_o_max_abs_err) : "", v.checked ? num(v.tolerance) : "",
          v.checked ? num(v.unwritten) : "", t(r.clock.sm_mhz_min), t(r.clock.sm_mhz_median), t(r.clock.sm_mhz_max),
          t(r.clock.sm_mhz_unthrottled), t(static_cast<double>(r.clock.throttled_samples)),
          std::string(core::to_string(r.counters.status)), r.counters.reason, num(r.counters.passes), num(r.wall_s)};
    f.insert(f.end(), tail.begin(), tail.end());
    for (const auto& name : stage_names) {
      std::string cell;
      for (const auto& s : r.stages)
        if (s.name == name) cell = num(s.p50_us);
      f.push_back(cell);
    }
    for (const auto& name : counter_names) {
      auto it = r.counters.total.find(name);
      f.push_back(it == r.counters.total.end() ? std::string() : num(it->second));
    }
    emit(f);
  }
}

}  // namespace attnprof::report
