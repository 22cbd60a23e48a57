// Roofline core (docs/roofline.md). The datasheet table holds NVIDIA's published peaks: dense tensor
// FLOP/s (the datasheets' "with sparsity" figures halved), non-tensor fp32 FLOP/s and HBM bandwidth.
// They are leads for the roofline when nothing was measured, not measurements.
#include "core/roofline.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attnprof::core {

namespace {

constexpr double kT = 1e12;  // tera, for readable table entries

struct Entry {
  GpuDatasheet sheet;
  std::vector<std::string> cuda_names;  // as cudaGetDeviceProperties / nvidia-smi report them
};

// Sources per row: docs/roofline.md. fp16 and bf16 tensor peaks are equal on every listed part; the
// last figure is the dense fp8 (E4M3) tensor peak, on the parts that have fp8 tensor cores (sm_89,
// sm_90, sm_100): Ampere's rows have none.
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
      {{"l4", "NVIDIA L4", 0.300 * kT, 121 * kT, 121 * kT, 30.3 * kT, 242.5 * kT}, {"NVIDIA L4"}},
      {{"l40", "NVIDIA L40", 0.864 * kT, 181.05 * kT, 181.05 * kT, 90.5 * kT, 362 * kT}, {"NVIDIA L40"}},
      {{"l40s", "NVIDIA L40S", 0.864 * kT, 362.05 * kT, 362.05 * kT, 91.6 * kT, 733 * kT}, {"NVIDIA L40S"}},
      {{"h100-sxm", "NVIDIA H100 SXM", 3.35 * kT, 989.4 * kT, 989.4 * kT, 67 * kT, 1979 * kT},
       {"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"}},
      {{"h100-pcie", "NVIDIA H100 PCIe", 2.0 * kT, 756 * kT, 756 * kT, 51 * kT, 1513 * kT}, {"NVIDIA H100 PCIe"}},
      {{"h100-nvl", "NVIDIA H100 NVL", 3.9 * kT, 835.5 * kT, 835.5 * kT, 60 * kT, 1670.5 * kT}, {"NVIDIA H100 NVL"}},
      {{"h200", "NVIDIA H200", 4.8 * kT, 989.4 * kT, 989.4 * kT, 67 * kT, 1979 * kT}, {"NVIDIA H200"}},
      {{"h200-nvl", "NVIDIA H200 NVL", 4.8 * kT, 835.5 * kT, 835.5 * kT, 60 * kT, 1670.5 * kT}, {"NVIDIA H200 NVL"}},
      {{"h20", "NVIDIA H20", 4.0 * kT, 148 * kT, 148 * kT, 44 * kT, 296 * kT}, {"NVIDIA H20"}},
      {{"gh200", "NVIDIA GH200 (96GB HBM3)", 4.0 * kT, 989.4 * kT, 989.4 * kT, 67 * kT, 1979 * kT},
       {"NVIDIA GH200 480GB"}},
      {{"gh200-144gb", "NVIDIA GH200 (144GB HBM3e)", 4.9 * kT, 989.4 * kT, 989.4 * kT, 67 * kT, 1979 * kT},
       {"NVIDIA GH200 144G HBM3e"}},
      {{"b200", "NVIDIA B200", 8.0 * kT, 2250 * kT, 2250 * kT, 80 * kT, 4500 * kT}, {"NVIDIA B200"}},
  };
  return entries;
}

// The map key of a dtype's roof ("bf16", "fp8_e4m3").
std::string key_of(DType t) { return std::string(to_string(t)); }

// One compute probe of MeasuredCeilings: its key in Ceilings::compute_probes and the results, and its
// name in the source's notes.
struct ComputeProbe {
  const char* key;
  const char* what;
  ProbeRate MeasuredCeilings::*rate;
};
constexpr ComputeProbe kTensor16Probes[] = {
    {"mma_fp16", "mma.sync fp16", &MeasuredCeilings::mma_fp16},
    {"mma_bf16", "mma.sync bf16", &MeasuredCeilings::mma_bf16},
    {"gemm_fp16", "GEMM fp16", &MeasuredCeilings::gemm_fp16},
    {"gemm_bf16", "GEMM bf16", &MeasuredCeilings::gemm_bf16},
};
constexpr ComputeProbe kFp8Probes[] = {
    {"mma_fp8_e4m3", "mma.sync fp8_e4m3", &MeasuredCeilings::mma_fp8_e4m3},
    {"gemm_fp8_e4m3", "GEMM fp8_e4m3", &MeasuredCeilings::gemm_fp8_e4m3},
};
constexpr ComputeProbe kFp32Probes[] = {
    {"fma_fp32", "fp32 FMA", &MeasuredCeilings::fma_fp32},
};

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
  if (d.dense_fp8_flops_per_s > 0) c.peak_flops_per_s[key_of(DType::fp8_e4m3)] = d.dense_fp8_flops_per_s;
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
  if (t == DType::fp8_e4m3) return figure(to_string(t));
  for (std::string_view key : {to_string(t), std::string_view("bf16"), std::string_view("fp16")})
    if (const double f = figure(key); f > 0) return f;
  return 0;
}

std::string missing_roof(const Ceilings& c, DType t) {
  if (peak_flops_for(c, t) > 0) return {};
  const std::string name = key_of(t);
  if (t != DType::fp8_e4m3) return fmt::format("no {} roof: the ceilings hold no compute figure for it", name);
  // The fp8 probes' own reasons where they were recorded (a GPU without fp8 tensor cores, the library's
  // refusal), else ceilings measured before attnprof had them.
  std::vector<std::string> reasons;
  bool recorded = false;
  for (const ComputeProbe& p : kFp8Probes) {
    const auto it = c.compute_probes.find(p.key);
    if (it == c.compute_probes.end()) continue;
    recorded = true;
    if (!it->second.not_run.empty()) reasons.push_back(fmt::format("{} not run ({})", p.what, it->second.not_run));
  }
  if (!recorded)
    return fmt::format("no {} roof: these ceilings were measured without the fp8 probes (results before schema 1.14); "
                       "a 16-bit roof is not used for fp8 points, whose tensor rate is twice as high",
                       name);
  if (reasons.empty()) return fmt::format("no {} roof: the fp8 probes measured nothing usable", name);
  return fmt::format("no {} roof: {}", name, fmt::join(reasons, "; "));
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
  // clock, with that probe's FLOP/s and clock; else (no clock read) the best FLOP/s. False when no
  // probe gave a plausible figure (the datasheet's, if any, stays).
  auto set_roof = [&](DType dtype, std::span<const ComputeProbe> probes) {
    const std::string key = key_of(dtype);
    const ProbeRate* best_clocked = nullptr;
    double best_flops = 0;
    for (const ComputeProbe& probe : probes) {
      const ProbeRate& p = m.*probe.rate;
      if (!plausible(p.flops_per_s, datasheet_flops(key), probe.what)) continue;
      best_flops = std::max(best_flops, p.flops_per_s);
      if (p.sm_mhz > 0 && (!best_clocked || p.flops_per_s / p.sm_mhz > best_clocked->flops_per_s / best_clocked->sm_mhz))
        best_clocked = &p;
    }
    if (best_clocked) {
      c.peak_flops_per_s[key] = best_clocked->flops_per_s;
      c.flops_per_s_per_mhz[key] = best_clocked->flops_per_s / best_clocked->sm_mhz;
      c.probe_sm_mhz[key] = best_clocked->sm_mhz;
    } else if (best_flops > 0) {
      c.peak_flops_per_s[key] = best_flops;
    }
    return best_flops > 0;
  };
  // Checked against each dtype's own datasheet figure; a rejection is named once.
  set_roof(DType::bf16, kTensor16Probes);
  const std::string source_after_bf16 = c.source;
  set_roof(DType::fp16, kTensor16Probes);
  c.source = source_after_bf16;
  const bool fp8_measured = set_roof(DType::fp8_e4m3, kFp8Probes);
  if (!fp8_measured && datasheet_flops(key_of(DType::fp8_e4m3)) > 0 && !m.mma_fp8_e4m3.not_run.empty() &&
      !m.gemm_fp8_e4m3.not_run.empty())
    c.source += ", fp8_e4m3 roof from the datasheet (its probes did not run)";
  set_roof(DType::fp32, kFp32Probes);

  for (const auto probes : {std::span<const ComputeProbe>(kTensor16Probes), std::span<const ComputeProbe>(kFp8Probes),
                            std::span<const ComputeProbe>(kFp32Probes)})
    for (const ComputeProbe& probe : probes) {
      const ProbeRate& p = m.*probe.rate;
      if (p.flops_per_s > 0 || !p.not_run.empty()) c.compute_probes[probe.key] = p;
    }
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
