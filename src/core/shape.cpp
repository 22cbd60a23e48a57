#include "core/shape.hpp"

#include <algorithm>
#include <climits>
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
    case DType::fp8_e4m3: return "fp8_e4m3";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "float32" || s == "f32") return DType::fp32;
  if (s == "fp16" || s == "float16" || s == "f16" || s == "half") return DType::fp16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp8_e4m3" || s == "fp8" || s == "e4m3") return DType::fp8_e4m3;
  throw InputError(fmt::format("unknown dtype '{}' (expected fp16, bf16, fp32 or fp8_e4m3)", s));
}

int dtype_bytes(DType t) { return t == DType::fp32 ? 4 : t == DType::fp8_e4m3 ? 1 : 2; }

std::string_view to_string(Pass p) {
  switch (p) {
    case Pass::fwd: return "fwd";
    case Pass::bwd: return "bwd";
    case Pass::fwd_bwd: return "fwd_bwd";
  }
  return "?";
}

Pass parse_pass(std::string_view s) {
  if (s == "fwd") return Pass::fwd;
  if (s == "bwd") return Pass::bwd;
  if (s == "fwd_bwd") return Pass::fwd_bwd;
  throw InputError(fmt::format("unknown pass '{}' (expected fwd, bwd or fwd_bwd)", s));
}

std::string_view to_string(KvDType t) {
  switch (t) {
    case KvDType::none: return "none";
    case KvDType::fp8_e4m3: return "fp8_e4m3";
    case KvDType::int8: return "int8";
  }
  return "?";
}

std::optional<KvDType> quantized_kv_dtype_named(std::string_view s) {
  if (s == "fp8_e4m3" || s == "fp8" || s == "e4m3") return KvDType::fp8_e4m3;
  if (s == "int8") return KvDType::int8;
  return std::nullopt;
}

KvDType parse_kv_dtype(std::string_view s, DType dtype) {
  if (const auto quantized = quantized_kv_dtype_named(s)) return *quantized;
  DType named{};
  try {
    named = parse_dtype(s);
  } catch (const InputError&) {
    throw InputError(fmt::format("unknown kv_dtype '{}' (expected fp8_e4m3, int8, or the dtype)", s));
  }
  if (dtype == DType::fp8_e4m3)
    throw InputError(fmt::format("kv_dtype {} with dtype fp8_e4m3: fp8 prefill stores K and V in fp8 E4M3 "
                                 "(kv_dtype fp8_e4m3, or none given)", s));
  if (named != dtype)
    throw InputError(fmt::format("kv_dtype {} with dtype {}: K and V are stored in the dtype or quantized "
                                 "(fp8_e4m3, int8)", s, to_string(dtype)));
  return KvDType::none;
}

std::string_view to_string(KvScale t) {
  switch (t) {
    case KvScale::tensor: return "tensor";
    case KvScale::head: return "head";
    case KvScale::token: return "token";
  }
  return "?";
}

KvScale parse_kv_scale(std::string_view s) {
  if (s == "tensor") return KvScale::tensor;
  if (s == "head") return KvScale::head;
  if (s == "token") return KvScale::token;
  throw InputError(fmt::format("unknown kv_scale '{}' (expected tensor, head or token)", s));
}

double kv_quant_max(KvDType t) {
  switch (t) {
    case KvDType::none: return 0;
    case KvDType::fp8_e4m3: return 448;
    case KvDType::int8: return 127;
  }
  return 0;
}

int Shape::kv_elem_bytes() const { return quantized_kv() ? 1 : dtype_bytes(dtype); }

int64_t Shape::kv_scale_elems() const {
  if (!quantized_kv()) return 0;
  switch (kv_scale) {
    case KvScale::tensor: return 1;
    case KvScale::head: return kv_heads;
    case KvScale::token: return kv_buffer_elems() / hdim;
  }
  return 0;
}

std::string Shape::label() const {
  std::string out = fmt::format("b{} h{}/{} s{}x{} d{}{}{} {}", batch, heads, kv_heads, seq_q, seq_k, hdim,
                                distinct_hdim_v() ? fmt::format("v{}", hdim_v) : std::string(),
                                causal ? " causal" : "", to_string(dtype));
  if (quantized_kv() && !quantized_q()) out += fmt::format(" kv-{}/{}", to_string(kv_dtype), to_string(kv_scale));
  if (page_size > 0) out += fmt::format(" page{}", page_size);
  if (kv_splits > 0) out += fmt::format(" splits{}", kv_splits);
  if (window > 0) out += fmt::format(" win{}", window);
  if (varlen()) {
    if (lengths.empty() || lengths.starts_with("list:")) {
      out += fmt::format(" varlen list:{}", fmt::join(seq_lens, "/"));
    } else {
      out += fmt::format(" varlen {} seed{} tokens{}", lengths, lengths_seed, tokens_q());
    }
  }
  if (backward()) out += fmt::format(" {}", to_string(pass));
  return out;
}

int64_t Shape::tokens_q() const {
  if (!varlen()) return batch * seq_q;
  int64_t sum = 0;
  for (int64_t len : seq_lens)  // saturates: a hostile file's lengths must not overflow before validate()
    if (__builtin_add_overflow(sum, len, &sum)) return INT64_MAX;
  return sum;
}

std::vector<int64_t> Shape::cu_seqlens() const {
  std::vector<int64_t> cu;
  if (!varlen()) return cu;
  cu.reserve(seq_lens.size() + 1);
  cu.push_back(0);
  for (int64_t len : seq_lens) cu.push_back(cu.back() + len);
  return cu;
}

Shape Shape::sequence(int64_t b) const {
  if (!varlen()) return *this;
  Shape s = padded();
  s.batch = 1;
  s.seq_q = s.seq_k = seq_lens.at(static_cast<size_t>(b));
  return s;
}

Shape Shape::padded() const {
  if (!varlen()) return *this;
  // Every field but the packed batch's, without copying its lengths (sequence() is called per sequence).
  Shape s;
  s.batch = batch;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.seq_q = seq_q;
  s.seq_k = seq_k;
  s.hdim = hdim;
  s.causal = causal;
  s.dtype = dtype;
  s.page_size = page_size;
  s.kv_splits = kv_splits;
  s.window = window;
  s.hdim_v = hdim_v;
  s.pass = pass;
  s.kv_dtype = kv_dtype;
  s.kv_scale = kv_scale;
  return s;
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
  if (page_size < 0 || kv_splits < 0)
    throw InputError(fmt::format("impossible shape {}: page_size and kv_splits must be 0 or positive", label()));
  if (window < 0)
    throw InputError(fmt::format("impossible shape {}: window must be 0 (no window) or positive, not {}", label(), window));
  if (hdim_v != 0 && (hdim_v < 0 || hdim_v % kHdimVStep != 0 || hdim_v > kMaxHdimV))
    throw InputError(fmt::format("impossible shape {}: hdim_v {} is not a positive multiple of {} up to {}", label(),
                                 hdim_v, kHdimVStep, kMaxHdimV));
  if (backward() && (paged() || kv_splits > 0))
    throw InputError(fmt::format("impossible shape {}: a backward pass has no {} (an inference layout)", label(),
                                 paged() ? "paged KV cache" : "split count"));
  if (!quantized_kv() && kv_scale != KvScale::tensor)
    throw InputError(fmt::format("impossible shape {}: kv_scale {} applies to a quantized KV cache (kv_dtype "
                                 "fp8_e4m3 or int8)", label(), to_string(kv_scale)));
  if (quantized_q() && backward())
    throw InputError(fmt::format("impossible shape {}: fp8 prefill (dtype fp8_e4m3) is a forward pass only", label()));
  if (quantized_q() && (kv_dtype != KvDType::fp8_e4m3 || kv_scale != KvScale::tensor))
    throw InputError(fmt::format("impossible shape {}: dtype fp8_e4m3 stores K and V in fp8 E4M3 with one scale "
                                 "per tensor, not kv_dtype {} with kv_scale {}", label(), to_string(kv_dtype),
                                 to_string(kv_scale)));
  if (quantized_kv() && backward())
    throw InputError(fmt::format("impossible shape {}: a quantized KV cache is inference's (forward pass only)", label()));
  if (quantized_kv() && dtype == DType::fp32)
    throw InputError(fmt::format("impossible shape {}: a quantized KV cache serves fp16 or bf16 attention", label()));
  if (varlen()) {
    if (static_cast<int64_t>(seq_lens.size()) != batch)
      throw InputError(fmt::format("impossible shape {}: {} sequence lengths for batch {}", label(), seq_lens.size(), batch));
    int64_t longest = 0;
    double total = 0;
    for (int64_t len : seq_lens) {
      if (len < 1) throw InputError(fmt::format("impossible shape {}: a sequence length of {}", label(), len));
      longest = std::max(longest, len);
      total += static_cast<double>(len);
    }
    if (seq_q != longest || seq_k != longest)
      throw InputError(fmt::format("impossible shape {}: seq_q and seq_k must be the longest length, {}", label(), longest));
    if (total > INT32_MAX)
      throw InputError(fmt::format("impossible shape {}: more than 2^31 - 1 tokens (cu_seqlens is int32)", label()));
    if (paged())
      throw InputError(fmt::format("impossible shape {}: a packed batch reads contiguous K and V (no page_size)", label()));
  }
  // Kernels index in 64 bits; a tensor past kMaxTensorElems fits no device, and the products below
  // are checked in floating point first so that they cannot overflow.
  const auto elems = [](std::initializer_list<int64_t> sizes) {
    double p = 1;
    for (int64_t v : sizes) p *= static_cast<double>(v);
    return p;
  };
  const int64_t rows = varlen() ? 1 : batch;  // a packed batch's token count was checked above
  const int64_t tq = varlen() ? tokens_q() : seq_q, tk = varlen() ? tokens_k() : seq_k;
  const int64_t widest = std::max(hdim, value_hdim());
  if (elems({rows, heads, tq, widest}) > static_cast<double>(kMaxTensorElems) ||
      elems({rows, kv_heads, tk, widest}) > static_cast<double>(kMaxTensorElems))
    throw InputError(fmt::format("impossible shape {}: a tensor has more than 2^48 elements", label()));
}

double softmax_scale(const Shape& s) { return 1.0 / std::sqrt(static_cast<double>(s.hdim)); }

void imply_fp8_kv_format(Shape& s) {
  if (!s.quantized_q()) return;
  if (s.kv_dtype == KvDType::none) {
    if (s.kv_scale != KvScale::tensor)
      throw InputError(fmt::format("shape {}: kv_scale {} with dtype fp8_e4m3: fp8 prefill has one scale per tensor",
                                   s.label(), to_string(s.kv_scale)));
    s.kv_dtype = KvDType::fp8_e4m3;
    return;
  }
  if (s.kv_dtype != KvDType::fp8_e4m3)
    throw InputError(fmt::format("shape {}: kv_dtype {} with dtype fp8_e4m3: fp8 prefill stores K and V in fp8 "
                                 "E4M3 (kv_dtype fp8_e4m3, or none given)", s.label(), to_string(s.kv_dtype)));
  if (s.kv_scale != KvScale::tensor)
    throw InputError(fmt::format("shape {}: kv_scale {} with dtype fp8_e4m3: fp8 prefill has one scale per tensor",
                                 s.label(), to_string(s.kv_scale)));
}

void to_json(nlohmann::json& j, DType t) { j = std::string(to_string(t)); }
void from_json(const nlohmann::json& j, DType& t) { t = parse_dtype(j.get<std::string>()); }

void to_json(nlohmann::json& j, const Shape& s) {
  j = {{"batch", s.batch},   {"heads", s.heads}, {"kv_heads", s.kv_heads}, {"seq_q", s.seq_q},
       {"seq_k", s.seq_k},   {"hdim", s.hdim},   {"causal", s.causal},     {"dtype", s.dtype}};
  if (s.page_size > 0) j["page_size"] = s.page_size;
  if (s.kv_splits > 0) j["kv_splits"] = s.kv_splits;
  if (s.window > 0) j["window"] = s.window;
  if (s.distinct_hdim_v()) j["hdim_v"] = s.hdim_v;
  if (s.backward()) j["pass"] = std::string(to_string(s.pass));
  if (s.quantized_kv() && !s.quantized_q()) {  // an fp8 point's K and V are fp8 per tensor: its dtype says so
    j["kv_dtype"] = std::string(to_string(s.kv_dtype));
    j["kv_scale"] = std::string(to_string(s.kv_scale));
  }
  if (s.varlen()) {
    j["seq_lens"] = s.seq_lens;
    j["lengths"] = s.lengths;
    j["lengths_seed"] = s.lengths_seed;
  }
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
  s.page_size = j.contains("page_size") ? json_int<int64_t>(j.at("page_size"), "page_size") : 0;
  s.kv_splits = j.contains("kv_splits") ? json_int<int64_t>(j.at("kv_splits"), "kv_splits") : 0;
  s.window = j.contains("window") ? json_int<int64_t>(j.at("window"), "window") : 0;  // absent before 1.7
  // Absent before 1.9, and whenever V is as wide as K: hdim. Written equal to hdim, it is hdim too.
  s.hdim_v = j.contains("hdim_v") ? json_int<int64_t>(j.at("hdim_v"), "hdim_v") : 0;
  if (s.hdim_v == s.hdim) s.hdim_v = 0;
  // Absent before 1.8 (and for a dense shape): dense.
  s.seq_lens.clear();
  if (j.contains("seq_lens")) {
    const auto& lens = j.at("seq_lens");
    if (!lens.is_array()) throw InputError("shape: \"seq_lens\" must be an array of integers");
    for (const auto& len : lens) s.seq_lens.push_back(json_int<int64_t>(len, "seq_lens"));
  }
  s.lengths = j.contains("lengths") ? j.at("lengths").get<std::string>() : std::string();
  s.lengths_seed = j.contains("lengths_seed") ? json_int<int64_t>(j.at("lengths_seed"), "lengths_seed") : 0;
  // Absent before 1.12, and for the forward: fwd.
  s.pass = j.contains("pass") ? parse_pass(j.at("pass").get<std::string>()) : Pass::fwd;
  // Absent before 1.13, and whenever K and V are in the dtype: not quantized.
  s.kv_dtype = j.contains("kv_dtype") ? parse_kv_dtype(j.at("kv_dtype").get<std::string>(), s.dtype) : KvDType::none;
  s.kv_scale = j.contains("kv_scale") ? parse_kv_scale(j.at("kv_scale").get<std::string>()) : KvScale::tensor;
  // dtype fp8_e4m3 (1.14 on) implies its K and V format, written or not.
  imply_fp8_kv_format(s);
}

}  // namespace attnprof::core
