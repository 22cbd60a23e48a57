// Roofline core (docs/roofline.md). The datasheet table holds NVIDIA's published peaks: dense tensor
// FLOP/s (the datasheets' "with sparsity" figures halved), non-tensor fp32 FLOP/s and HBM bandwidth.
// They are leads for the roofline when nothing was measured, not measurements.
#include "core/roofline.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace attnprof::core {

namespace {

constexpr double kT = 1e12;  // tera, for readable table entries

struct Entry {
  GpuDatasheet sheet;
  std::vector<std::string> cuda_names;  // as cudaGetDeviceProperties / nvidia-smi report them
};

// Sources per row: docs/roofline.md. fp16 and bf16 tensor peaks are equal on every listed part.
const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      {{"a100-40gb", "NVIDIA A100 40GB", 1.555 * kT, 312 * kT, 312 * kT, 19.5 * kT},
       {"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"}},
      {{"a100-80gb", "NVIDIA A100 80GB SXM", 2.039 * kT, 312 * kT, 312 * kT, 19.5 * kT},
       {"NVIDIA A100-SXM4-80GB"}},
      {{"a100-80gb-pcie", "NVIDIA A100 80GB PCIe", 1.935 * kT, 312 * kT, 312 * kT, 19.5 * kT},
       {"NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB"}},
      {{"a10", "NVIDIA A10", 0.600 * kT, 125 * kT, 125 * kT, 31.2 * kT}, {"NVIDIA A10"}},
      {{"a30", "NVIDIA A30", 0.933 * kT, 165 * kT, 165 * kT, 10.3 * kT}, {"NVIDIA A30"}},
      {{"l4", "NVIDIA L4", 0.300 * kT, 121 * kT, 121 * kT, 30.3 * kT}, {"NVIDIA L4"}},
      {{"l40", "NVIDIA L40", 0.864 * kT, 181.05 * kT, 181.05 * kT, 90.5 * kT}, {"NVIDIA L40"}},
      {{"l40s", "NVIDIA L40S", 0.864 * kT, 362.05 * kT, 362.05 * kT, 91.6 * kT}, {"NVIDIA L40S"}},
      {{"h100-sxm", "NVIDIA H100 SXM", 3.35 * kT, 989.4 * kT, 989.4 * kT, 67 * kT},
       {"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"}},
      {{"h100-pcie", "NVIDIA H100 PCIe", 2.0 * kT, 756 * kT, 756 * kT, 51 * kT}, {"NVIDIA H100 PCIe"}},
      {{"h100-nvl", "NVIDIA H100 NVL", 3.9 * kT, 835.5 * kT, 835.5 * kT, 60 * kT}, {"NVIDIA H100 NVL"}},
      {{"h200", "NVIDIA H200", 4.8 * kT, 989.4 * kT, 989.4 * kT, 67 * kT}, {"NVIDIA H200"}},
      {{"h200-nvl", "NVIDIA H200 NVL", 4.8 * kT, 835.5 * kT, 835.5 * kT, 60 * kT}, {"NVIDIA H200 NVL"}},
      {{"h20", "NVIDIA H20", 4.0 * kT, 148 * kT, 148 * kT, 44 * kT}, {"NVIDIA H20"}},
      {{"gh200", "NVIDIA GH200 (96GB HBM3)", 4.0 * kT, 989.4 * kT, 989.4 * kT, 67 * kT},
       {"NVIDIA GH200 480GB"}},
      {{"gh200-144gb", "NVIDIA GH200 (144GB HBM3e)", 4.9 * kT, 989.4 * kT, 989.4 * kT, 67 * kT},
       {"NVIDIA GH200 144G HBM3e"}},
      {{"b200", "NVIDIA B200", 8.0 * kT, 2250 * kT, 2250 * kT, 80 * kT}, {"NVIDIA B200"}},
  };
  return entries;
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Trailing/leading blanks appear in some driver-reported names.
  const auto first = out.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(' ') - first + 1);
}

}  // namespace

const std::vector<GpuDatasheet>& datasheets() {
  static const std::vector<GpuDatasheet> sheets = [] {
    std::vector<GpuDatasheet> out;
    for (const auto& e : table()) out.push_back(e.sheet);
    return out;
  }();
  return sheets;
}

std::optional<GpuDatasheet> find_datasheet(std::string_view key_or_name) {
  const std::string wanted = lower(key_or_name);
  if (wanted.empty()) return std::nullopt;
  for (const auto& e : table()) {
    if (lower(e.sheet.key) == wanted || lower(e.sheet.name) == wanted) return e.sheet;
    for (const auto& n : e.cuda_names)
      if (lower(n) == wanted) return e.sheet;
  }
  return std::nullopt;
}

Ceilings datasheet_ceilings(const GpuDatasheet& d) {
  Ceilings c;
  c.peak_bw_bytes_per_s = d.hbm_bytes_per_s;
  c.peak_flops_per_s = {{"fp16", d.dense_fp16_flops_per_s},
                        {"bf16", d.dense_bf16_flops_per_s},
                        {"fp32", d.fp32_flops_per_s}};
  c.source = "datasheet";
  c.datasheet_bw_bytes_per_s = d.hbm_bytes_per_s;
  c.datasheet_flops_per_s = c.peak_flops_per_s;
  return c;
}

double peak_flops_for(const Ceilings& c, DType t) {
  auto figure = [&](std::string_view key) {
    const auto it = c.peak_flops_per_s.find(std::string(key));
    return it != c.peak_flops_per_s.end() && it->second > 0 ? it->second : 0.0;
  };
  // fp8 tensor cores run at twice the 16-bit rate: an fp8 point has its own roof or none, never bf16's.
  if (t == DType::fp8_e4m3) return figure(to_string(t));
  for (std::string_view key : {to_string(t), std::string_view("bf16"), std::string_view("fp16")})
    if (const double f = figure(key); f > 0) return f;
  return 0;
}

Ceilings ceilings_at_clock(const Ceilings& c, double sm_mhz) {
  Ceilings out = c;
  if (!(sm_mhz > 0)) return out;
  for (const auto& [dtype, per_mhz] : c.flops_per_s_per_mhz) {
    if (!(per_mhz > 0)) continue;
    double roof = per_mhz * sm_mhz;
    if (const auto it = c.datasheet_flops_per_s.find(dtype); it != c.datasheet_flops_per_s.end() && it->second > 0)
      roof = std::min(roof, it->second);
    out.peak_flops_per_s[dtype] = roof;
  }
  return out;
}

double peak_flops_at_clock(const Ceilings& c, DType t, double sm_mhz) {
  return peak_flops_for(ceilings_at_clock(c, sm_mhz), t);
}

double datasheet_attainable_flops(const Ceilings& c, DType t, double intensity) {
  Ceilings sheet;
  sheet.peak_flops_per_s = c.datasheet_flops_per_s;
  const double peak = peak_flops_for(sheet, t);
  if (!(peak > 0) || !(c.datasheet_bw_bytes_per_s > 0)) return 0;
  return std::min(peak, c.datasheet_bw_bytes_per_s * intensity);
}

Ceilings merge_with_datasheet(const MeasuredCeilings& m, const std::string& device_name) {
  Ceilings c;
  if (const auto sheet = find_datasheet(device_name)) {
    c = datasheet_ceilings(*sheet);
    c.source = "measured+datasheet";
  } else {
    c.source = "measured";
  }
  constexpr double kImplausibleOverDatasheet = 1.25;
  auto plausible = [&](double measured, double datasheet_value, const std::string& what) {
    if (!(measured > 0)) return false;
    if (datasheet_value > 0 && measured > kImplausibleOverDatasheet * datasheet_value) {
      c.source += ", " + what + " probe rejected as implausible";
      return false;
    }
    return true;
  };
  auto datasheet_flops = [&](const std::string& dtype) {
    const auto it = c.datasheet_flops_per_s.find(dtype);
    return it == c.datasheet_flops_per_s.end() ? 0.0 : it->second;
  };
  if (plausible(m.hbm_bytes_per_s, c.datasheet_bw_bytes_per_s, "bandwidth")) c.peak_bw_bytes_per_s = m.hbm_bytes_per_s;
  c.l2_bw_bytes_per_s = m.l2_bytes_per_s > 0 ? m.l2_bytes_per_s : 0;
  c.launch_latency_us = m.launch_latency_us > 0 ? m.launch_latency_us : 0;

  // One dtype's roof from its candidate probes: the best figure per MHz among those that read their
  // clock, with that probe's FLOP/s and clock; else (no clock read) the best FLOP/s.
  auto set_roof = [&](const std::string& dtype, const std::vector<std::pair<std::string, ProbeRate>>& probes) {
    const ProbeRate* best_clocked = nullptr;
    double best_flops = 0;
    for (const auto& [what, p] : probes) {
      if (!plausible(p.flops_per_s, datasheet_flops(dtype), what)) continue;
      best_flops = std::max(best_flops, p.flops_per_s);
      if (p.sm_mhz > 0 && (!best_clocked || p.flops_per_s / p.sm_mhz > best_clocked->flops_per_s / best_clocked->sm_mhz))
        best_clocked = &p;
    }
    if (best_clocked) {
      c.peak_flops_per_s[dtype] = best_clocked->flops_per_s;
      c.flops_per_s_per_mhz[dtype] = best_clocked->flops_per_s / best_clocked->sm_mhz;
      c.probe_sm_mhz[dtype] = best_clocked->sm_mhz;
    } else if (best_flops > 0) {
      c.peak_flops_per_s[dtype] = best_flops;
    }
  };
  const std::vector<std::pair<std::string, ProbeRate>> tensor = {
      {"mma.sync fp16", m.mma_fp16}, {"mma.sync bf16", m.mma_bf16}, {"GEMM fp16", m.gemm_fp16}, {"GEMM bf16", m.gemm_bf16}};
  // Checked against each dtype's own datasheet figure; a rejection is named once.
  set_roof("bf16", tensor);
  const std::string source_after_bf16 = c.source;
  set_roof("fp16", tensor);
  c.source = source_after_bf16;
  set_roof("fp32", {{"fp32 FMA", m.fma_fp32}});
  return c;
}

double ridge_point(const Ceilings& c, DType t) { return peak_flops_for(c, t) / c.peak_bw_bytes_per_s; }

double attainable_flops(const Ceilings& c, DType t, double intensity) {
  return std::min(peak_flops_for(c, t), c.peak_bw_bytes_per_s * intensity);
}

Bound bound_of(const Ceilings& c, DType t, double intensity) {
  return intensity < ridge_point(c, t) ? Bound::memory : Bound::compute;
}

std::string_view to_string(Bound b) { return b == Bound::memory ? "memory" : "compute"; }

double roofline_floor_s(const Ceilings& c, DType t, double flops, double bytes) {
  return std::max(flops / peak_flops_for(c, t), bytes / c.peak_bw_bytes_per_s);
}

}  // namespace attnprof::core
