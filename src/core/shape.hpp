// One point of a sweep: the attention problem's shape and element type.
// Layout convention for every kernel: Q and O are [batch, heads, seq_q, hdim], K and V are
// [batch, kv_heads, seq_k, hdim], row-major and contiguous; LSE is [batch, heads, seq_q] in fp32.
// Query head h reads kv head h / (heads / kv_heads) (grouped-query attention).
// Causal masking is aligned to the bottom-right corner (FlashAttention >= 2.1): query row i sees key
// j iff j <= i + (seq_k - seq_q). A row that sees no key has O = 0 and LSE = -inf.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace attnprof::core {

enum class DType { fp32, fp16, bf16 };

std::string_view to_string(DType);
DType parse_dtype(std::string_view);  // throws InputError naming the token
int dtype_bytes(DType);

struct Shape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t seq_q = 1;
  int64_t seq_k = 1;
  int64_t hdim = 64;
  bool causal = false;
  DType dtype = DType::bf16;

  // "b8 h16/16 s2048x2048 d128 causal bf16": stable, human-readable, used as the point's key.
  std::string label() const;
  // Throws InputError when the shape is impossible (non-positive sizes, kv_heads not dividing heads).
  void validate() const;
  // Elements of each tensor.
  int64_t q_elems() const { return batch * heads * seq_q * hdim; }
  int64_t kv_elems() const { return batch * kv_heads * seq_k * hdim; }
  int64_t lse_elems() const { return batch * heads * seq_q; }

  friend bool operator==(const Shape&, const Shape&) = default;
};

// The softmax scale every kernel uses: 1 / sqrt(hdim).
double softmax_scale(const Shape&);

void to_json(nlohmann::json&, const Shape&);
void from_json(const nlohmann::json&, Shape&);
void to_json(nlohmann::json&, DType);
void from_json(const nlohmann::json&, DType&);

}  // namespace attnprof::core
