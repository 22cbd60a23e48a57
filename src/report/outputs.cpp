// Renderers of the explain, calibrate and devices commands' models (report/outputs.hpp).
#include "report/outputs.hpp"

#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>


namespace attnprof::report {

using nlohmann::json;

namespace {

// 1234567 -> "1.235 M"; decimal prefixes, as datasheets use them.
std::string si(double v, std::string_view unit) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& [scale, prefix] : kPrefixes)
    if (v >= scale) return fmt::format("{:.3f} {}{}", v / scale, prefix, unit);
  return fmt::format("{:.3f} {}", v, unit);
}

std::string pct_or_dash(std::optional<double> v) { return v ? fmt::format("{:.0f}%", *v) : "-"; }

std::string gib(int64_t bytes) {
  return bytes > 0 ? fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30)) : "-";
}
std::string mib(int64_t bytes) {
  return bytes > 0 ? fmt::format("{:.0f} MiB", static_cast<double>(bytes) / (1 << 20)) : "-";
}
std::string tflops(const core::Ceilings& c, const char* dtype) {
  auto it = c.peak_flops_per_s.find(dtype);
  return it == c.peak_flops_per_s.end() || it->second <= 0 ? "-" : fmt::format("{:.1f}", it->second / 1e12);
}

}  // namespace

std::string render_explanation(const core::Explanation& e) {
  using namespace core;
  const DType t = e.shape.dtype;
  std::string out = fmt::format("{} on {} ({})\n", e.shape.label(), e.gpu.name, e.gpu.key);
  out += fmt::format("datasheet ceilings: {} HBM, {} {} (leads, not measurements)\n\n",
                     si(e.ceilings.peak_bw_bytes_per_s, "B/s"), si(peak_flops_for(e.ceilings, t), "FLOP/s"),
                     to_string(t));
  const auto row = [&](std::string_view label, auto cell) {
    out += fmt::format("{:<28}", label);
    for (const auto& k : e.kernels) out += fmt::format("{:>26}", cell(k));
    out += '\n';
  };
  using K = KernelExplanation;
  row("", [](const K& k) { return k.kernel; });
  // The score-sized tensors: the forward's S and P, a backward's S, P, dP and dS too.
  const bool backward = e.shape.backward();
  row(backward ? "S, P, dP, dS" : "S and P",
      [](const K& k) { return std::string(k.kind == KernelKind::materialized ? "in HBM" : "on chip"); });
  row("FLOPs (exact)", [](const K& k) { return si(k.cost.flops, "FLOP"); });
  row("FLOPs (FA convention)", [](const K& k) { return si(k.cost.flops_fa_convention, "FLOP"); });
  row("FLOPs (dense)", [](const K& k) { return si(k.cost.flops_dense, "FLOP"); });
  row("min bytes read", [](const K& k) { return si(k.cost.min_bytes_read, "B"); });
  row("min bytes written", [](const K& k) { return si(k.cost.min_bytes_write, "B"); });
  row(backward ? "S/P/dP/dS traffic (read+write)" : "S/P traffic (read+write)",
      [](const K& k) { return si(k.cost.sp_bytes, "B"); });
  row("workspace", [](const K& k) { return si(k.cost.workspace_bytes, "B"); });
  row("device memory footprint", [](const K& k) { return si(k.footprint_bytes, "B"); });
  row("intensity [FLOP/B]", [](const K& k) { return fmt::format("{:.1f}", k.cost.intensity); });
  row("ridge point [FLOP/B]", [](const K& k) { return fmt::format("{:.1f}", k.ridge_flops_per_byte); });
  row("bound", [](const K& k) { return std::string(to_string(k.bound)); });
  row("attainable", [](const K& k) { return si(k.attainable_flops_per_s, "FLOP/s"); });
  row("floor latency [us]", [](const K& k) { return fmt::format("{:.2f}", k.floor_latency_us); });
  out += "\nFLOPs (exact) counts the unmasked scores (any seq_q, seq_k, bottom-right causal mask) and drives\n"
         "intensity, attainable, floor and every TFLOP/s; FLOPs (FA convention) halves dense FLOPs when\n"
         "causal, as FlashAttention's benchmarks do; the reference's dense GEMMs execute FLOPs (dense) even\n"
         "when causal. Floor latency = max(FLOPs / peak, bytes / bandwidth).\n";
  if (backward)
    out += "The backward (docs/cost-model.md#the-backward-pass): five products per score (S recomputed, dV, dP,\n"
           "dQ, dK); the FA convention is 2.5x the forward's (3.5x for fwd_bwd).\n";
  return out;
}

std::string render_explanation_json(const core::Explanation& e) { return json(e).dump(2) + "\n"; }

std::string render_calibration(const std::vector<core::CalibrationRow>& rows) {
  std::string out = fmt::format("{:<15} {:>10} {:>10} {:>9} {:>8} {:>7}  {:<16} {:<16} {}\n", "probe", "P50 us",
                                "GB/s", "TFLOP/s", "compute", "memory", "expected", "got", "");
  int matching = 0;
  for (const auto& r : rows) {
    if (r.matches) ++matching;
    out += fmt::format("{:<15} {:>10} {:>10} {:>9} {:>8} {:>7}  {:<16} {:<16} {}\n", r.probe,
                       r.p50_us > 0 ? fmt::format("{:.2f}", r.p50_us) : "-",
                       r.bytes_per_s > 0 ? fmt::format("{:.0f}", r.bytes_per_s / 1e9) : "-",
                       r.flops_per_s > 0 ? fmt::format("{:.1f}", r.flops_per_s / 1e12) : "-",
                       pct_or_dash(r.compute_sol_pct), pct_or_dash(r.memory_sol_pct), r.expected, r.got,
                       r.matches ? "ok"
                       : r.got == r.expected && r.expected_level && r.got_level
                           ? fmt::format("DIFFERS (memory level {}, expected {})", core::to_string(*r.got_level),
                                         core::to_string(*r.expected_level))
                           : "DIFFERS");
  }
  out += fmt::format("{} of {} probes diagnosed as expected\n", matching, rows.size());
  return out;
}
namespace {

std::string gpu_devices_table(const std::vector<run::DeviceEntry>& devices) {
  std::string out = fmt::format("{:<3} {:<5} {:<32} {:>4} {:>6} {:>10} {:>8} {:>9} {:>10} {:>8} {:>8} {:>8}  {}\n", "id",
                                "kind", "name", "cc", "SMs", "memory", "L2", "SM MHz", "BW GB/s", "bf16 TF", "fp16 TF",
                                "fp32 TF", "ceilings");
  for (const auto& d : devices) {
    const auto& i = d.info;
    const auto& c = d.ceilings;
    out += fmt::format("{:<3} {:<5} {:<32} {:>4} {:>6} {:>10} {:>8} {:>9} {:>10} {:>8} {:>8} {:>8}  {}\n", d.id,
                       d.backend, i.name.substr(0, 32), i.compute_capability.empty() ? "-" : i.compute_capability,
                       i.sm_count, gib(i.memory_bytes), mib(i.l2_bytes),
                       i.sm_clock_max_mhz > 0 ? fmt::format("{:.0f}", i.sm_clock_max_mhz) : "-",
                       c.peak_bw_bytes_per_s > 0 ? fmt::format("{:.0f}", c.peak_bw_bytes_per_s / 1e9) : "-",
                       tflops(c, "bf16"), tflops(c, "fp16"), tflops(c, "fp32"), c.source.empty() ? "-" : c.source);
  }
  return out;
}

// The CPU in its own words: cores (logical, as nproc counts them), the last-level cache, the core
// clock, DRAM bandwidth in GB/s and one compute ceiling in GFLOP/s (the CPU kernels compute in fp32
// whatever the dtype, so every dtype has the fp32 figure); no compute capability.
std::string cpu_devices_table(const std::vector<run::DeviceEntry>& devices) {
  std::string out = fmt::format("{:<3} {:<5} {:<40} {:>5} {:>10} {:>8} {:>8} {:>10} {:>13}  {}\n", "id", "kind",
                                "name", "cores", "memory", "LLC", "max MHz", "DRAM GB/s", "fp32 GFLOP/s", "ceilings");
  for (const auto& d : devices) {
    const auto& i = d.info;
    const auto& c = d.ceilings;
    const auto fp32 = c.peak_flops_per_s.find("fp32");
    out += fmt::format("{:<3} {:<5} {:<40} {:>5} {:>10} {:>8} {:>8} {:>10} {:>13}  {}\n", d.id, d.backend,
                       i.name.substr(0, 40), i.sm_count, gib(i.memory_bytes), mib(i.l2_bytes),
                       i.sm_clock_max_mhz > 0 ? fmt::format("{:.0f}", i.sm_clock_max_mhz) : "-",
                       c.peak_bw_bytes_per_s > 0 ? fmt::format("{:.1f}", c.peak_bw_bytes_per_s / 1e9) : "-",
                       fp32 != c.peak_flops_per_s.end() && fp32->second > 0 ? fmt::format("{:.1f}", fp32->second / 1e9)
                                                                            : "-",
                       c.source.empty() ? "-" : c.source);
  }
  return out;
}

}  // namespace

std::string render_devices(const run::DeviceList& list) {
  std::string out;
  for (const auto& n : list.notices) out += "notice: " + n + '\n';
  // One table per backend, each with its own columns (a list holds one backend in practice).
  std::vector<run::DeviceEntry> gpus, cpus;
  for (const auto& d : list.devices) (d.backend == "cpu" ? cpus : gpus).push_back(d);
  if (!gpus.empty() || cpus.empty()) out += gpu_devices_table(gpus);
  if (!cpus.empty()) {
    if (!gpus.empty()) out += '\n';
    out += cpu_devices_table(cpus);
  }
  return out;
}

std::string render_devices_json(const run::DeviceList& list) {
  json devices = json::array();
  for (const auto& d : list.devices)
    devices.push_back({{"id", d.id}, {"backend", d.backend}, {"device", d.info}, {"ceilings", d.ceilings}});
  return json{{"devices", devices}, {"notices", list.notices}}.dump(2) + "\n";
}

}  // namespace attnprof::report
