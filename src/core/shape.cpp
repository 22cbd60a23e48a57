#include "core/shape.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/files.hpp"

namespace attnprof::core {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "float32" || s == "f32") return DType::fp32;
  if (s == "fp16" || s == "float16" || s == "f16" || s == "half") return DType::fp16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  throw InputError(fmt::format("unknown dtype '{}' (expected fp16, bf16 or fp32)", s));
}

int dtype_bytes(DType t) { return t == DType::fp32 ? 4 : 2; }

std::string Shape::label() const {
  return fmt::format("b{} h{}/{} s{}x{} d{}{} {}", batch, heads, kv_heads, seq_q, seq_k, hdim,
                     causal ? " causal" : "", to_string(dtype));
}

void Shape::validate() const {
  auto positive = [&](int64_t v, const char* name) {
    if (v <= 0) throw InputError(fmt::format("impossible shape {}: {} must be positive", label(), name));
  };
  positive(batch, "batch");
  positive(heads, "heads");
  positive(kv_heads, "kv_heads");
  positive(seq_q, "seq_q");
  positive(seq_k, "seq_k");
  positive(hdim, "hdim");
  if (heads % kv_heads != 0)
    throw InputError(fmt::format("impossible shape {}: kv_heads {} does not divide heads {}", label(),
                                 kv_heads, heads));
  // 2^31 elements per tensor keeps every kernel's 32-bit row arithmetic safe.
  constexpr int64_t kMaxElems = int64_t{1} << 31;
  if (q_elems() >= kMaxElems || kv_elems() >= kMaxElems)
    throw InputError(fmt::format("impossible shape {}: a tensor has 2^31 elements or more", label()));
}

double softmax_scale(const Shape& s) { return 1.0 / std::sqrt(static_cast<double>(s.hdim)); }

void to_json(nlohmann::json& j, DType t) { j = std::string(to_string(t)); }
void from_json(const nlohmann::json& j, DType& t) { t = parse_dtype(j.get<std::string>()); }

void to_json(nlohmann::json& j, const Shape& s) {
  j = {{"batch", s.batch},   {"heads", s.heads}, {"kv_heads", s.kv_heads}, {"seq_q", s.seq_q},
       {"seq_k", s.seq_k},   {"hdim", s.hdim},   {"causal", s.causal},     {"dtype", s.dtype}};
}

void from_json(const nlohmann::json& j, Shape& s) {
  const auto size = [&](const char* key) { return json_int<int64_t>(j.at(key), key); };
  s.batch = size("batch");
  s.heads = size("heads");
  s.kv_heads = j.contains("kv_heads") ? size("kv_heads") : s.heads;
  s.seq_q = size("seq_q");
  s.seq_k = j.contains("seq_k") ? size("seq_k") : s.seq_q;
  s.hdim = size("hdim");
  s.causal = j.value("causal", false);
  s.dtype = j.at("dtype").get<DType>();
}

}  // namespace attnprof::core
