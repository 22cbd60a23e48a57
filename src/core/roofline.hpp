// Roofline core: ceilings (datasheet table for common NVIDIA GPUs, measured values when present),
// ridge point, attainable throughput, bound classification. The table's figures and their sources are
// in docs/roofline.md: they are datasheet leads, not measurements.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/results.hpp"

namespace attnprof::core {

struct GpuDatasheet {
  std::string key;                 // "h200", "h100-sxm", "a100-80gb", "b200", ...
  std::string name;                // "NVIDIA H200"
  double hbm_bytes_per_s = 0;
  double dense_fp16_flops_per_s = 0, dense_bf16_flops_per_s = 0, fp32_flops_per_s = 0;
};

const std::vector<GpuDatasheet>& datasheets();
// Looks up by key ("h200") or by a device name as CUDA reports it ("NVIDIA H200"); nullopt if unknown.
std::optional<GpuDatasheet> find_datasheet(std::string_view key_or_name);
Ceilings datasheet_ceilings(const GpuDatasheet&);

double peak_flops_for(const Ceilings&, DType);      // falls back to bf16/fp16 if the dtype is absent
double ridge_point(const Ceilings&, DType);          // FLOP/byte where the roofs meet
double attainable_flops(const Ceilings&, DType, double intensity);  // min(peak, bw * intensity)

enum class Bound { memory, compute };
Bound bound_of(const Ceilings&, DType, double intensity);  // memory when intensity < ridge point
std::string_view to_string(Bound);

// The roofline's lower bound on the time of a call doing `flops` and moving `bytes`:
// max(flops / peak, bytes / bandwidth) = flops / attainable_flops(flops / bytes).  [s]
double roofline_floor_s(const Ceilings&, DType, double flops, double bytes);

}  // namespace attnprof::core
