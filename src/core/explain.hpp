// `attnprof explain`: the analytic picture of one shape on one GPU, with no GPU needed. For each
// kernel kind, the cost model (FLOPs, minimum bytes, workspace) placed on the GPU's datasheet roofline.
// Rendered by report::render_explanation (report/outputs.hpp).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cost_model.hpp"
#include "core/roofline.hpp"
#include "core/shape.hpp"

namespace attnprof::core {

struct KernelExplanation {
  std::string kernel;                 // "reference" or "fused", as in results records
  KernelKind kind = KernelKind::fused;
  Cost cost;
  double footprint_bytes = 0;
  double ridge_flops_per_byte = 0;    // for the shape's dtype
  Bound bound = Bound::memory;
  double attainable_flops_per_s = 0;  // min(peak, bandwidth * intensity)
  double floor_latency_us = 0;        // max(flops / peak, bytes / bandwidth)
};

struct Explanation {
  GpuDatasheet gpu;
  Ceilings ceilings;                  // from the datasheet
  Shape shape;
  std::vector<KernelExplanation> kernels;  // reference, then fused
};

// Throws InputError (one line, listing the known keys) when the GPU is not in the datasheet table, and
// (one line) when its datasheet has no roof for the shape's dtype (fp8_e4m3 before sm_89).
Explanation explain(std::string_view gpu_key_or_name, const Shape&);

std::string_view to_string(KernelKind);
void to_json(nlohmann::json&, const KernelExplanation&);
void to_json(nlohmann::json&, const Explanation&);

}  // namespace attnprof::core
