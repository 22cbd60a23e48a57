// The sweep grammar: "batch=1,4;heads=16;seq=512:16384:x2;hdim=64,128;causal=0,1;dtype=bf16,fp16".
// Axes: batch, heads, kv_heads, seq (sets seq_q and seq_k), seq_q, seq_k, hdim, causal, dtype, tokens.
// Values: comma lists, geometric a:b:xk and arithmetic a:b:+k ranges (inclusive of b when reached).
// tokens=N ties batch = N / seq (FlashAttention benchmark convention; must divide evenly).
// kv_heads absent -> = heads; seq_k absent -> = seq_q. Cartesian product in axis order given.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/shape.hpp"

namespace attnprof::core {

struct SweepSpec {
  std::string text;            // the spec as given (or the preset's expansion)
  std::string preset;          // preset name, if any
  std::vector<Shape> shapes;   // expanded, validated, in sweep order
};

// Throws InputError with a one-line message naming the bad token.
SweepSpec parse_axes(std::string_view spec);
// Presets: "quick" (CI-sized), "fa-bench", "long-context". Throws InputError for unknown names.
SweepSpec preset(std::string_view name);
std::vector<std::string> preset_names();
// A sweep from a JSON file: {"axes": "..."} or {"preset": "..."} or {"shapes": [ {shape}, ... ]}.
SweepSpec load_sweep_file(const std::string& path);

}  // namespace attnprof::core
