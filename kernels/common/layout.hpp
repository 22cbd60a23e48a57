// Index maps between the canonical [batch, heads, seq, hdim] order (core/shape.hpp, the inputs'
// random generator and the float64 reference) and the layout a kernel takes (kernels/registry.hpp).
// The testbeds fill a tensor in the kernel's layout with the canonical element's value and read O
// back through the same map, so one reference checks every layout.
#pragma once
#include <cstdint>

#include "core/shape.hpp"
#include "kernels/common/random.hpp"  // ATTNPROF_HD

namespace attnprof::kernels {

// The extents of one tensor: heads (or kv_heads), seq (seq_q or seq_k), hdim; bshd false = bhsd.
struct TensorMap {
  int64_t heads = 1, seq = 1, hdim = 1;
  bool bshd = false;
};

// The maps of Q (and LSE), of O, of K and of V of a shape: Q and K rows hdim wide, V and O rows
// value_hdim() wide. A packed batch (core/shape.hpp) is one batch of all its tokens: head-major [heads,
// tokens, hdim] as bhsd, token-major [tokens, heads, hdim] as bshd.
inline TensorMap q_tensor_map(const core::Shape& s, bool bshd) {
  return {s.heads, s.varlen() ? s.tokens_q() : s.seq_q, s.hdim, bshd};
}
inline TensorMap o_tensor_map(const core::Shape& s, bool bshd) {
  return {s.heads, s.varlen() ? s.tokens_q() : s.seq_q, s.value_hdim(), bshd};
}
inline TensorMap kv_tensor_map(const core::Shape& s, bool bshd) {
  return {s.kv_heads, s.varlen() ? s.tokens_k() : s.seq_k, s.hdim, bshd};
}
inline TensorMap v_tensor_map(const core::Shape& s, bool bshd) {
  return {s.kv_heads, s.varlen() ? s.tokens_k() : s.seq_k, s.value_hdim(), bshd};
}

// Canonical (bhsd) index of the element stored at `physical` in the kernel's layout.
ATTNPROF_HD int64_t canonical_index(const TensorMap& m, int64_t physical) {
  if (!m.bshd) return physical;
  const int64_t d = physical % m.hdim;
  int64_t rest = physical / m.hdim;
  const int64_t h = rest % m.heads;
  rest /= m.heads;
  const int64_t s = rest % m.seq;
  const int64_t b = rest / m.seq;
  return ((b * m.heads + h) * m.seq + s) * m.hdim + d;
}

// Where row `row` = (b * heads + h) * seq + s of the canonical order starts in the kernel's layout.
ATTNPROF_HD int64_t physical_row_offset(const TensorMap& m, int64_t row) {
  if (!m.bshd) return row * m.hdim;
  const int64_t s = row % m.seq;
  const int64_t bh = row / m.seq;
  const int64_t h = bh % m.heads;
  const int64_t b = bh / m.heads;
  return ((b * m.seq + s) * m.heads + h) * m.hdim;
}

}  // namespace attnprof::kernels
