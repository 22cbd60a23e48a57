// The shape fields both fused kernels' launch parameters carry (fused::FusedParams,
// fused_sm90::Sm90Params), filled from the shape one way. Host code only.
#pragma once
#include "core/shape.hpp"

namespace attnprof::kernels {

inline constexpr float kLog2e = 1.4426950408889634f;

// seq_q, seq_k, heads, kv_heads, group (query heads per kv head), scale_log2 (softmax scale x
// log2(e): scores go straight into exp2), causal (a bool in one struct, an int in the other) and
// window (0 = none; clamped to seq_q + seq_k, beyond which a window changes nothing, so it fits an int).
template <typename Params>
void fill_shape_fields(Params& p, const core::Shape& s) {
  p.seq_q = static_cast<int>(s.seq_q);
  p.seq_k = static_cast<int>(s.seq_k);
  p.heads = static_cast<int>(s.heads);
  p.kv_heads = static_cast<int>(s.kv_heads);
  p.group = static_cast<int>(s.heads / s.kv_heads);
  p.scale_log2 = static_cast<float>(core::softmax_scale(s)) * kLog2e;
  p.causal = s.causal ? 1 : 0;
  p.window = static_cast<int>(s.window < s.seq_q + s.seq_k ? s.window : s.seq_q + s.seq_k);
}

}  // namespace attnprof::kernels
