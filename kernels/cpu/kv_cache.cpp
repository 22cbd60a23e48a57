#include "kernels/cpu/kv_cache.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/common/paged.hpp"
#include "kernels/common/quant.hpp"
#include "kernels/common/random.hpp"
#include "kernels/cpu/parallel.hpp"

namespace attnprof::kernels::cpu {
namespace {

// Values per parallel chunk: whole rows, about 64k elements.
constexpr int64_t kChunkElems = int64_t{1} << 16;
// What a page's pad holds: all-ones bytes, NaN in fp32 and in fp8 E4M3 (S.1111.111), as the CUDA
// testbed's memset leaves it.
constexpr uint8_t kPadByte = 0xFF;

int64_t width_of(const core::Shape& s, KvTensor which) { return which == KvTensor::k ? s.hdim : s.value_hdim(); }

// Logical rows of K (and of V): one per (kv head, key) of every sequence, in the canonical order
// r = (b * kv_heads + h) * seq_k + j, or h * tokens + t packed.
int64_t logical_rows(const core::Shape& s) { return s.kv_heads * s.tokens_k(); }

int64_t rows_per_chunk(int64_t width) { return std::max<int64_t>(1, kChunkElems / width); }

// Where logical row r starts in the buffer: through the layout map, or the block table of a paged cache
// (dense batches only: core::Shape::validate refuses a packed batch in pages).
int64_t row_offset(const core::Shape& s, int64_t width, const TensorMap& map, const int32_t* table, int64_t r) {
  if (!s.paged()) return physical_row_offset(map, r);
  const int64_t j = r % s.seq_k, bh = r / s.seq_k;
  return paged_offset(table, s.pages_per_seq(), s.kv_heads, s.page_size, width, bh / s.kv_heads, bh % s.kv_heads, j, 0);
}

// The scale of logical row r, stored at `offset` (core/shape.hpp): the tensor's, its kv head's, or its
// own beside the row.
float stored_scale(const core::Shape& s, const float* scales, int64_t width, int64_t r, int64_t offset) {
  switch (s.kv_scale) {
    case core::KvScale::tensor: return scales[0];
    case core::KvScale::head: return scales[(r / (s.varlen() ? s.tokens_k() : s.seq_k)) % s.kv_heads];
    case core::KvScale::token: return scales[offset / width];
  }
  return scales[0];
}

TensorMap map_of(const core::Shape& s, KvTensor which, bool bshd) {
  return which == KvTensor::k ? kv_tensor_map(s, bshd) : v_tensor_map(s, bshd);
}

}  // namespace

void fill_kv(const core::Shape& s, uint64_t seed, KvTensor which, const TensorMap& map, const int32_t* block_table,
             void* out, float* scales) {
  if (s.paged() && block_table == nullptr) throw std::runtime_error("fill_kv: a paged shape without a block table");
  if (s.quantized_kv() && scales == nullptr) throw std::runtime_error("fill_kv: a quantized shape without scales");
  const int tensor = static_cast<int>(which);
  const int64_t width = width_of(s, which);
  const int64_t buffer_elems = which == KvTensor::k ? s.kv_buffer_elems() : s.v_buffer_elems();
  const bool quantized = s.quantized_kv();
  auto* bytes = static_cast<uint8_t*>(out);
  auto* values = static_cast<float*>(out);

  if (s.paged())
    parallel_for(buffer_elems, kChunkElems, [&](int64_t lo, int64_t hi) {
      if (quantized)
        std::memset(bytes + lo, kPadByte, static_cast<size_t>(hi - lo));
      else
        std::fill(values + lo, values + hi, std::numeric_limits<float>::quiet_NaN());
    });
  if (quantized) {
    const bool token = s.kv_scale == core::KvScale::token;
    const float unset = token ? std::numeric_limits<float>::quiet_NaN() : static_scale(s.kv_dtype);
    std::fill(scales, scales + s.kv_scale_elems(), unset);  // per token: each row writes its own below
  }

  parallel_for(logical_rows(s), rows_per_chunk(width), [&](int64_t lo, int64_t hi) {
    std::vector<float> row(static_cast<size_t>(width));
    for (int64_t r = lo; r < hi; ++r) {
      const auto first = static_cast<uint64_t>(r * width);  // canonical index of the row's first element
      for (int64_t d = 0; d < width; ++d) row[d] = input_value(seed, tensor, first + static_cast<uint64_t>(d));
      const int64_t offset = row_offset(s, width, map, block_table, r);
      if (!quantized) {
        std::copy(row.begin(), row.end(), values + offset);
        continue;
      }
      const float scale = row_scale(s.kv_dtype, s.kv_scale, row.data(), width);
      for (int64_t d = 0; d < width; ++d) bytes[offset + d] = quantize(s.kv_dtype, row[d], scale);
      if (s.kv_scale == core::KvScale::token) scales[offset / width] = scale;
    }
  });
}

void read_kv_contiguous(const AttentionArgs& a, KvTensor which, float* out) {
  const core::Shape& s = a.shape;
  const void* in = which == KvTensor::k ? a.k : a.v;
  const float* scales = which == KvTensor::k ? a.k_scale : a.v_scale;
  if (s.paged() && a.block_table == nullptr) throw std::runtime_error("read_kv_contiguous: a paged shape without a block table");
  if (s.quantized_kv() && scales == nullptr) throw std::runtime_error("read_kv_contiguous: a quantized KV cache without scales");
  const int64_t width = width_of(s, which);
  const TensorMap map = map_of(s, which, a.layout == Layout::bshd);
  // Each code's value at scale 1: dequantize(code, scale) is that times the scale, bit for bit, and a
  // lookup costs a fraction of decoding E4M3 element by element.
  std::array<float, 256> unit_values{};
  if (s.quantized_kv())
    for (int c = 0; c < 256; ++c) unit_values[c] = dequantize(s.kv_dtype, static_cast<uint8_t>(c), 1.0f);
  parallel_for(logical_rows(s), rows_per_chunk(width), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t offset = row_offset(s, width, map, a.block_table, r);
      float* dst = out + r * width;
      if (!s.quantized_kv()) {
        const float* src = static_cast<const float*>(in) + offset;
        std::copy(src, src + width, dst);
        continue;
      }
      const uint8_t* src = static_cast<const uint8_t*>(in) + offset;
      const float scale = stored_scale(s, scales, width, r, offset);
      for (int64_t d = 0; d < width; ++d) dst[d] = unit_values[src[d]] * scale;
    }
  });
}

void fill_q(const core::Shape& s, uint64_t seed, const TensorMap& map, uint8_t* out, float* scale) {
  if (!s.quantized_q()) throw std::runtime_error("fill_q: Q of " + s.label() + " is not quantized");
  const float q_scale = q_tensor_scale();
  *scale = q_scale;
  parallel_for(s.q_elems(), kChunkElems, [&](int64_t lo, int64_t hi) {
    for (int64_t e = lo; e < hi; ++e)
      out[e] = quantize(core::KvDType::fp8_e4m3,
                        input_value(seed, 0, static_cast<uint64_t>(canonical_index(map, e))), q_scale);
  });
}

void read_q_contiguous(const AttentionArgs& a, float* out) {
  const core::Shape& s = a.shape;
  if (a.q_scale == nullptr) throw std::runtime_error("read_q_contiguous: fp8 Q without its scale");
  const TensorMap map = q_tensor_map(s, a.layout == Layout::bshd);
  const auto* in = static_cast<const uint8_t*>(a.q);
  const float scale = *a.q_scale;
  std::array<float, 256> unit_values{};  // as read_kv_contiguous: dequantize's result bit for bit
  for (int c = 0; c < 256; ++c) unit_values[c] = dequantize(core::KvDType::fp8_e4m3, static_cast<uint8_t>(c), 1.0f);
  parallel_for(s.q_elems(), kChunkElems, [&](int64_t lo, int64_t hi) {
    for (int64_t e = lo; e < hi; ++e) out[canonical_index(map, e)] = unit_values[in[e]] * scale;
  });
}

}  // namespace attnprof::kernels::cpu
