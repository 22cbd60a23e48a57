#include "core/decode_terms.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "core/cost_model.hpp"

namespace attnprof::core {

namespace {

bool names_combine(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("combine") != std::string::npos;
}

// "void ns::flash_fwd_splitkv_combine_kernel<traits...>(params)" -> "flash_fwd_splitkv_combine_kernel".
std::string function_name(std::string_view kernel) {
  if (kernel.rfind("void ", 0) == 0) kernel.remove_prefix(5);
  kernel = kernel.substr(0, std::min(kernel.find('<'), kernel.find('(')));
  if (const size_t colons = kernel.rfind("::"); colons != std::string_view::npos) kernel.remove_prefix(colons + 2);
  return std::string(kernel);
}

}  // namespace

bool is_decode(const Shape& s) {
  // A backward pass is training's: it reads no KV cache and writes dK and dV for every key.
  return !s.backward() && s.seq_q >= 1 && s.seq_q <= kDecodeMaxSeqQ && s.seq_k >= kDecodeMinKeysPerQuery * s.seq_q;
}

int64_t generated_tokens(const Shape& s) { return s.batch * s.seq_q; }

double kv_cache_bytes(const Shape& s) {
  const double keys = s.windowed() ? static_cast<double>(keys_seen(s).size()) : static_cast<double>(s.seq_k);
  // A key's K row (hdim) and V row (the value head dim), one byte an element when quantized, with a
  // float32 scale beside each row when the scales are per token.
  const bool token_scales = s.quantized_kv() && s.kv_scale == KvScale::token;
  const double row_bytes = static_cast<double>(s.hdim + s.value_hdim()) * static_cast<double>(s.kv_elem_bytes()) +
                           (token_scales ? 8.0 : 0.0);
  return static_cast<double>(s.batch) * static_cast<double>(s.kv_heads) * keys * row_bytes;
}

std::optional<CombineShare> combine_share(const Record& r) {
  if (r.stages.size() >= 2) {
    for (const auto& s : r.stages)
      if (names_combine(s.name)) return CombineShare{s.name, s.share_of_p50};
    return std::nullopt;
  }
  if (r.launches.size() >= 2) {
    double total_us = 0;
    for (const auto& l : r.launches) total_us += l.duration_us;
    if (!(total_us > 0)) return std::nullopt;
    for (const auto& l : r.launches)
      if (names_combine(l.name)) return CombineShare{function_name(l.name), l.duration_us / total_us};
  }
  return std::nullopt;
}

std::optional<int64_t> kv_tile_keys(const Record& r) {
  const auto it = r.plan.find("block_n");
  if (it == r.plan.end() || it->second <= 0) return std::nullopt;
  return it->second;
}

}  // namespace attnprof::core
