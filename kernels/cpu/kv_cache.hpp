// The KV cache of a shape on the host, as core/shape.hpp stores it: K and V contiguous or as page
// pools behind a shuffled block table (kernels/common/paged.hpp), in fp32 or quantized to one byte per
// element with float32 scales (kernels/common/quant.hpp).
//   fill_kv            writes K or V from kernels/common/random.hpp the way the CUDA testbed writes the
//                      device's (a quantized row r: the canonical elements r * width .., its scale from
//                      their largest magnitude, its bytes), so the float64 reference sees the same values
//   read_kv_contiguous reads it back as the contiguous fp32 tensor a CPU kernel multiplies: gathered
//                      from the pages, each byte the value it stands for (dequantize(code, scale))
// The CPU backend and the CPU kernels' tests fill with the first; the CPU reference's first stage
// (gather_kv, dequant_kv) is the second. fp8 prefill's Q (core::Shape::quantized_q: E4M3 bytes with one
// scale) has the same pair, fill_q and read_q_contiguous (the reference's dequant_qkv stage).
#pragma once
#include <cstdint>

#include "core/shape.hpp"
#include "kernels/common/layout.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels::cpu {

// Which of the two a call means: kernels/common/random.hpp's tensor ids.
enum class KvTensor { k = 1, v = 2 };

// Fills K or V of `s` under `seed` in the buffers a kernel gets (AttentionArgs::k, v, k_scale, v_scale):
// `out` holds s.kv_buffer_elems() (V: v_buffer_elems()) fp32 values, or as many bytes when
// s.quantized_kv(); `scales` then holds s.kv_scale_elems() floats (nullptr otherwise). Contiguous,
// logical row r of the canonical order starts at physical_row_offset(map, r); paged, at its place in
// the pool through `block_table` (shuffled_block_table(s, seed)), and every pad slot after a
// sequence's last key holds NaN (quantized: 0xFF bytes and, per token, a NaN scale).
void fill_kv(const core::Shape& s, uint64_t seed, KvTensor which, const TensorMap& map, const int32_t* block_table,
             void* out, float* scales);

// K or V of a call (a.k or a.v, with a.block_table, a.k_scale or a.v_scale as a.shape says) into `out`,
// the contiguous fp32 tensor of s.kv_elems() (V: v_elems()) values in the canonical order: [batch,
// kv_heads, seq_k, width], a packed batch [kv_heads, tokens, width]. Throws std::runtime_error when a
// paged shape has no block table or a quantized one no scales.
void read_kv_contiguous(const AttentionArgs& a, KvTensor which, float* out);

// fp8 prefill's Q under `seed`: s.q_elems() E4M3 bytes in `out`, element e the byte of canonical element
// canonical_index(map, e) (kernels/common/quant.hpp's q_tensor_scale, the bytes the CUDA testbed
// writes), and that one scale in `*scale`. Throws std::runtime_error for a shape whose Q is not quantized.
void fill_q(const core::Shape& s, uint64_t seed, const TensorMap& map, uint8_t* out, float* scale);

// Q of an fp8 prefill call (a.q bytes, a.q_scale) into `out`, s.q_elems() fp32 values in the canonical
// order, each byte the value it stands for. Throws std::runtime_error without a scale.
void read_q_contiguous(const AttentionArgs& a, float* out);

}  // namespace attnprof::kernels::cpu
