#include "core/explain.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"

namespace attnprof::core {

namespace {

constexpr double kUsPerS = 1e6;

}  // namespace

std::string_view to_string(KernelKind k) { return k == KernelKind::materialized ? "materialized" : "fused"; }

Explanation explain(std::string_view gpu_key_or_name, const Shape& shape) {
  shape.validate();
  const auto sheet = find_datasheet(gpu_key_or_name);
  if (!sheet) {
    std::vector<std::string> keys;
    for (const auto& d : datasheets()) keys.push_back(d.key);
    throw InputError(fmt::format("unknown GPU '{}' (known: {})", gpu_key_or_name, fmt::join(keys, ", ")));
  }
  Explanation e{*sheet, datasheet_ceilings(*sheet), shape, {}};
  if (!(peak_flops_for(e.ceilings, shape.dtype) > 0))
    throw InputError(fmt::format("{} has no {} roof in the datasheet table (fp8 tensor cores came with sm_89)",
                                 sheet->key, to_string(shape.dtype)));
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
