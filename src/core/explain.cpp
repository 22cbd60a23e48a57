#include "core/explain.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace attnprof::core {

namespace {

constexpr double kUsPerS = 1e6;

// 1234567 -> "1.235 M"; decimal prefixes, as datasheets use them.
std::string si(double v, std::string_view unit) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& [scale, prefix] : kPrefixes)
    if (v >= scale) return fmt::format("{:.3f} {}{}", v / scale, prefix, unit);
  return fmt::format("{:.3f} {}", v, unit);
}

}  // namespace

std::string_view to_string(KernelKind k) { return k == KernelKind::materialized ? "materialized" : "fused"; }

Explanation explain(std::string_view gpu_key_or_name, const Shape& shape) {
  shape.validate();
  const auto sheet = find_datasheet(gpu_key_or_name);
  if (!sheet) {
    std::string keys;
    for (const auto& d : datasheets()) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", d.key);
    throw InputError(fmt::format("unknown GPU '{}' (known: {})", gpu_key_or_name, keys));
  }
  Explanation e{*sheet, datasheet_ceilings(*sheet), shape, {}};
  for (const auto& [name, kind] : {std::pair{"reference", KernelKind::materialized},
                                   std::pair{"fused", KernelKind::fused}}) {
    KernelExplanation k;
    k.kernel = name;
    k.kind = kind;
    k.cost = cost_of(shape, kind);
    k.footprint_bytes = footprint_bytes(shape, kind);
    k.ridge_flops_per_byte = ridge_point(e.ceilings, shape.dtype);
    k.bound = bound_of(e.ceilings, shape.dtype, k.cost.intensity);
    k.attainable_flops_per_s = attainable_flops(e.ceilings, shape.dtype, k.cost.intensity);
    k.floor_latency_us = kUsPerS * roofline_floor_s(e.ceilings, shape.dtype, k.cost.flops,
                                                    k.cost.min_bytes_read + k.cost.min_bytes_write);
    e.kernels.push_back(k);
  }
  return e;
}

std::string format_explanation(const Explanation& e) {
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
  row("S and P", [](const K& k) { return std::string(k.kind == KernelKind::materialized ? "in HBM" : "on chip"); });
  row("FLOPs (exact)", [](const K& k) { return si(k.cost.flops, "FLOP"); });
  row("FLOPs (FA convention)", [](const K& k) { return si(k.cost.flops_fa_convention, "FLOP"); });
  row("FLOPs (dense)", [](const K& k) { return si(k.cost.flops_dense, "FLOP"); });
  row("min bytes read", [](const K& k) { return si(k.cost.min_bytes_read, "B"); });
  row("min bytes written", [](const K& k) { return si(k.cost.min_bytes_write, "B"); });
  row("S/P traffic (read+write)", [](const K& k) { return si(k.cost.sp_bytes, "B"); });
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
  return out;
}

void to_json(nlohmann::json& j, const KernelExplanation& k) {
  j = {{"kernel", k.kernel},
       {"kind", to_string(k.kind)},
       {"cost", k.cost},
       {"footprint_bytes", k.footprint_bytes},
       {"ridge_flops_per_byte", k.ridge_flops_per_byte},
       {"bound", to_string(k.bound)},
       {"attainable_flops_per_s", k.attainable_flops_per_s},
       {"floor_latency_us", k.floor_latency_us}};
}

void to_json(nlohmann::json& j, const Explanation& e) {
  j = {{"gpu", {{"key", e.gpu.key}, {"name", e.gpu.name}}},
       {"ceilings", e.ceilings},
       {"shape", e.shape},
       {"label", e.shape.label()},
       {"kernels", e.kernels}};
}

}  // namespace attnprof::core
