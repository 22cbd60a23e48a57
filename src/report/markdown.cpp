// GitHub-flavoured Markdown for a CI job summary. GitHub renders inline HTML in Markdown, so every
// text from the results is entity-escaped, and '|' is escaped so it cannot split a table cell.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/comparison.hpp"
#include "core/escape.hpp"
#include "report/formats.hpp"
#include "report/report.hpp"
#include "report/view.hpp"

namespace attnprof::report {

namespace {

std::string md(std::string_view s) { return core::escape::markdown(s); }

std::string md_number(std::optional<double> v, int decimals, double scale = 1) {
  if (v) *v *= scale;
  return detail::fixed(v, decimals);
}

class MarkdownRenderer final : public Renderer {
 public:
  std::string_view format() const override { return "markdown"; }
  void render(const core::Results& results, std::ostream& out) const override;
};

}  // namespace

const Renderer& detail::markdown_renderer() {
  static const MarkdownRenderer renderer;
  return renderer;
}

void MarkdownRenderer::render(const core::Results& results, std::ostream& out) const {
  using namespace detail;
  const auto rows = make_rows(results);
  const auto& ctx = results.context;
  const auto& dev = ctx.device;

  out << "## attnprof report\n\n";
  const bool cpu = ctx.backend == core::BackendKind::cpu;
  // A CPU in its own words: cores (logical, as the kernels' threads count them) and its top clock.
  out << fmt::format("- **Device**: {}{}{}{} · backend {}\n", md(dev.name.empty() ? "unknown" : dev.name),
                     dev.compute_capability.empty() ? "" : " (cc " + md(dev.compute_capability) + ")",
                     dev.sm_count ? fmt::format(", {} {}", dev.sm_count, cpu ? "cores" : "SMs") : "",
                     cpu && dev.sm_clock_max_mhz > 0 ? fmt::format(", max clock {:.0f} MHz", dev.sm_clock_max_mhz) : "",
                     md(core::to_string(ctx.backend)));
  if (!dev.driver_version.empty() || !dev.runtime_version.empty())
    out << fmt::format("- **Driver / runtime**: {} / {} · SM clock max {:.0f} MHz, memory clock "
                       "{:.0f} MHz\n",
                       md(dev.driver_version), md(dev.runtime_version), dev.sm_clock_max_mhz,
                       dev.mem_clock_mhz);
  out << fmt::format("- **Run**: attnprof {} (revision {}) on {} at {}\n", md(ctx.tool_version),
                     md(ctx.git_revision), md(ctx.host), md(ctx.date_utc));
  if (!ctx.command_line.empty()) out << "- **Command**: " << md(ctx.command_line) << '\n';
  out << "- **Ceilings**: " << md(ceilings_summary(results)) << '\n';
  for (const auto& notice : ctx.notices) out << "- **Notice**: " << md(notice) << '\n';

  // With decode points: their bandwidth columns, and "-" in TFLOP/s and % roof for them (CSV and JSON
  // keep TFLOP/s).
  const bool decode_columns = any_decode(rows);
  // Units: a GPU's TFLOP/s, TB/s and MB as always; a CPU's in the unit that fits each column.
  const TableUnits units = table_units(rows, ctx.backend);
  const ColumnUnit &flops_unit = units.flops, &kv_unit = units.kv_rate, &token_unit = units.per_token;
  const auto in_unit = [](std::optional<double> v, double divisor) { return v ? std::optional(*v / divisor) : v; };
  if (decode_columns)
    out << fmt::format("\n| point | kernel | status | p50 us | p99 us | {}FLOP/s | % roof | KV {}B/s | {} | {}B/token | "
                       "verdict | flags |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|---|\n",
                       flops_unit.prefix, kv_unit.prefix, cpu ? "% DRAM" : "% HBM", token_unit.prefix);
  else
    out << fmt::format("\n| point | kernel | status | p50 us | p99 us | {}FLOP/s | % roof | verdict | flags |\n"
                       "|---|---|---|--:|--:|--:|--:|---|---|\n",
                       flops_unit.prefix);
  for (const auto& row : rows) {
    std::string decode_cells;
    if (decode_columns)
      decode_cells = fmt::format("{} | {} | {} | ", significant(in_unit(row.kv_tb_per_s, kv_unit.scale / 1e12), 3, 2),
                                 fixed(row.pct_of_hbm_ceiling, 1),
                                 significant(in_unit(row.bytes_per_token, token_unit.scale), 3, 1));
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {}{} | {} |\n", md(row.label), md(row.kernel), row.status,
                       fixed(row.p50_us, 2), p99_text(row, 2),
                       row.decode ? "-" : significant(in_unit(row.tflops, flops_unit.scale / 1e12), 3, 1),
                       row.decode ? "-" : fixed(row.pct_of_roof, 1), decode_cells,
                       row.verdict.empty() ? "-" : md(verdict_text(row)), md(fmt::format("{}", fmt::join(row.flags, ", "))));
  }

  const std::vector<core::KernelComparison> comparison = core::compare_kernels(results);
  if (!comparison.empty()) {
    std::vector<std::optional<double>> saved;
    for (const auto& c : comparison) saved.push_back(c.bytes_saved);
    const ColumnUnit saved_unit = column_unit(saved, ctx.backend, "G");
    out << fmt::format("\n### Reference vs fused\n\n"
                       "| shape | speedup | reference p50 us | fused p50 us | DRAM saved {}B | intensity "
                       "reference -> fused FLOP/B | S/P time share of the gain |\n"
                       "|---|--:|--:|--:|--:|---|--:|\n",
                       saved_unit.prefix);
    for (const auto& c : comparison) {
      out << fmt::format("| {} | {}x | {} | {} | {} | {} -> {} | {} |\n", md(c.shape), md_number(c.speedup, 2),
                         md_number(c.reference_p50_us, 2), md_number(c.fused_p50_us, 2),
                         cpu ? md_number(c.bytes_saved / saved_unit.scale, 2) : md_number(c.bytes_saved, 2, 1e-9),
                         md_number(c.reference_intensity, 1),
                         md_number(c.fused_intensity, 1),
                         c.sp_explained_share ? md_number(c.sp_explained_share, 0, 100) + "%" : "-");
    }
  }

  // Packed (variable-length) batches: the work a batch padded to its longest sequence would add.
  bool any_packed = false;
  for (const auto& row : rows) {
    const core::Record& r = *row.record;
    if (r.cost.padded_flops <= 0) continue;
    if (!any_packed)
      out << "\n### Packed batches\n\n"
             "| point | kernel | tokens | GFLOP | padded GFLOP | padding adds | min MB | padded min MB |\n"
             "|---|---|--:|--:|--:|--:|--:|--:|\n";
    any_packed = true;
    const double added = r.cost.flops > 0 ? (r.cost.padded_flops / r.cost.flops - 1) * 100 : 0;
    out << fmt::format("| {} | {} | {} | {:.3f} | {:.3f} | {:.1f}% | {:.2f} | {:.2f} |\n", md(row.label), md(row.kernel),
                       r.shape.tokens_q(), r.cost.flops / 1e9, r.cost.padded_flops / 1e9, added,
                       (r.cost.min_bytes_read + r.cost.min_bytes_write) / 1e6, r.cost.padded_min_bytes / 1e6);
  }

  // A quantized KV cache: the speed quantization buys beside the accuracy it costs.
  const std::vector<core::QuantizedKvComparison> quantized = core::compare_quantized_kv(results);
  const auto kv_only = [](const core::QuantizedKvComparison& q) { return !q.fp8_prefill; };
  if (std::any_of(quantized.begin(), quantized.end(), kv_only)) {
    out << "\n### Quantized KV cache\n\n"
           "| point | kernel | KV | p50 us | speed vs dtype | DRAM read TB/s | quantization cost: max abs err | "
           "max rel err | kernel err (tolerance) |\n|---|---|---|--:|--:|--:|--:|--:|--:|\n";
    for (const auto& q : quantized) {
      if (!kv_only(q)) continue;
      out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", md(q.shape), md(q.kernel), md(q.kv),
                         fixed(q.p50_us, 2), q.speedup ? md_number(q.speedup, 2) + "x" : "-",
                         md_number(q.dram_read_tb_per_s, 2),
                         q.cost.checked ? fmt::format("{:.2e}", q.cost.o_max_abs_err) : "-",
                         q.cost.checked ? fmt::format("{:.2e}", q.cost.o_max_rel_err) : "-",
                         q.kernel_err ? fmt::format("{:.2e} ({:.2e})", *q.kernel_err, *q.tolerance) : "-");
    }
  }
  // fp8 prefill: each point beside its bf16 twin, the speed fp8 buys and what quantizing Q, K and V costs.
  if (!std::all_of(quantized.begin(), quantized.end(), kv_only)) {
    out << "\n### fp8 prefill\n\n"
           "| point | kernel | p50 us | bf16 p50 us | speed vs bf16 | quantization cost: max abs err | max rel err | "
           "kernel err (largest bound) | worst err / bound |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n";
    for (const auto& q : quantized) {
      if (!q.fp8_prefill) continue;
      out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", md(q.shape), md(q.kernel),
                         fixed(q.p50_us, 2), md_number(q.unquantized_p50_us, 2),
                         q.speedup ? md_number(q.speedup, 2) + "x" : "-",
                         q.cost.checked ? fmt::format("{:.2e}", q.cost.o_max_abs_err) : "-",
                         q.cost.checked ? fmt::format("{:.2e}", q.cost.o_max_rel_err) : "-",
                         q.kernel_err ? fmt::format("{:.2e} ({:.2e})", *q.kernel_err, *q.tolerance) : "-",
                         md_number(q.bound_ratio, 3));
    }
  }

  bool any_not_ok = false;
  for (const auto& row : rows) {
    if (row.status == "ok") continue;
    if (!any_not_ok) out << "\n### Points not ok\n\n";
    any_not_ok = true;
    out << fmt::format("- {} · {}: **{}**: {}\n", md(row.label), md(row.kernel), row.status,
                       md(row.reason.empty() ? "(no reason given)" : row.reason));
  }
}

}  // namespace attnprof::report
