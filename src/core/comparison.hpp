// Reference (materialised) vs fused kernels at each shape where both ran ok.
#pragma once
#include <nlohmann/json.hpp>

#include "core/results.hpp"

namespace attnprof::core {

// One object per shape with speedup, DRAM bytes saved, intensity shift, and how much of the latency
// gain the removed S/P traffic explains (sp_bytes / peak bandwidth against the P50 delta). Ordered as
// the records are.
nlohmann::json compare_kernels(const Results&);

}  // namespace attnprof::core
