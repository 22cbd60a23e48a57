// The sweep grammar: "batch=1,4;heads=16;seq=512:16384:x2;hdim=64,128;causal=0,1;dtype=bf16,fp16".
// Axes: batch, heads, kv_heads, seq (sets seq_q and seq_k), seq_q, seq_k, hdim, hdim_v (the value head
// dim: a multiple of 8 up to 512; absent = hdim), causal, dtype, tokens, dim, page_size, kv_splits,
// window, lengths, lengths_seed.
// Values: comma lists, geometric a:b:xk and arithmetic a:b:+k ranges (inclusive of b when reached).
// tokens=N ties batch = N / seq (FlashAttention benchmark convention; must divide evenly).
// dim=N ties heads = N / hdim (the model dimension; must divide evenly).
// lengths=uniform:LO:HI|zipf:S:LO:HI|list:A/B/C makes a packed variable-length batch (core/lengths.hpp):
// batch (or, with tokens=N, as many as reach N tokens) lengths drawn with lengths_seed (default 1).
// kv_heads absent -> = heads; seq_k absent -> = seq_q. Cartesian product in axis order given (the
// first axis varies slowest). Several products may be joined with '|'; their points are concatenated
// in order and must not repeat. Full reference: docs/sweep-spec.md.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/shape.hpp"

namespace attnprof::core {

// A sweep larger than this is almost certainly a typo (and would run for days).
inline constexpr int64_t kMaxSweepPoints = 100000;

struct SweepSpec {
  std::string text;            // the spec as given (or the preset's expansion)
  std::string preset;          // preset name, if any
  std::vector<Shape> shapes;   // expanded, validated, in sweep order
};

// Throws InputError with a one-line message naming the bad token.
SweepSpec parse_axes(std::string_view spec);
// Presets: "quick" (CI-sized), "fa-bench", "long-context", "decode", "serving". Throws InputError for
// unknown names.
SweepSpec preset(std::string_view name);
std::vector<std::string> preset_names();
// A sweep from a JSON file: {"axes": "..."} or {"preset": "..."} or {"shapes": [ {shape}, ... ]}.
// Refuses (InputError) files over core::kMaxSpecFileBytes, JSON nested deeper than
// core::kMaxJsonDepth, keys that are not axis names and values of the wrong JSON type.
SweepSpec load_sweep_file(const std::string& path);
// The same from the file's text; `name` is for messages.
SweepSpec parse_sweep_file(std::string_view text, const std::string& name);

// One shape: "batch=8,heads=16,seq=2048,hdim=128,dtype=bf16" (comma-separated key=value, one value
// per key; the same axes as a sweep, each given at most once). Throws InputError naming the token.
Shape parse_shape(std::string_view text);

}  // namespace attnprof::core
