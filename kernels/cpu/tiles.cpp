#include "kernels/cpu/tiles.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "kernels/cpu/target_clones.hpp"

namespace attnprof::kernels::cpu {

HeadView head_view(const core::Shape& s, int64_t batch_head) {
  const int64_t b = batch_head / s.heads;
  const int64_t h = batch_head % s.heads;
  const int64_t kvh = h / (s.heads / s.kv_heads);
  const int64_t dv = s.value_hdim();
  HeadView v;
  v.q_offset = batch_head * s.seq_q * s.hdim;
  v.o_offset = batch_head * s.seq_q * dv;
  v.kv_offset = (b * s.kv_heads + kvh) * s.seq_k * s.hdim;
  v.v_offset = (b * s.kv_heads + kvh) * s.seq_k * dv;
  v.lse_offset = batch_head * s.seq_q;
  return v;
}

RowBlocks row_blocks(const core::Shape& s) {
  RowBlocks out;
  const int64_t batch = s.varlen() ? s.batch : 1;
  out.sequences.reserve(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) out.sequences.push_back(s.varlen() ? s.sequence(b) : s);
  const std::vector<int64_t> cu = s.cu_seqlens();
  const int64_t tokens = s.tokens_q();
  for (int64_t b = 0; b < batch; ++b) {
    const core::Shape& seq = out.sequences[static_cast<size_t>(b)];
    // Dense: every (batch, head) of the shape; packed: the heads of sequence b.
    const int64_t heads = s.varlen() ? s.heads : s.batch * s.heads;
    for (int64_t bh = 0; bh < heads; ++bh) {
      HeadView view = head_view(s, bh);
      if (s.varlen()) {
        const int64_t kvh = bh / (s.heads / s.kv_heads), start = cu[static_cast<size_t>(b)];
        view.q_offset = (bh * tokens + start) * s.hdim;
        view.o_offset = (bh * tokens + start) * s.value_hdim();
        view.kv_offset = (kvh * tokens + start) * s.hdim;
        view.v_offset = (kvh * tokens + start) * s.value_hdim();
        view.lse_offset = bh * tokens + start;
      }
      for (int64_t i0 = 0; i0 < seq.seq_q; i0 += kBlockRows)
        out.blocks.push_back({&seq, view, i0, std::min(kBlockRows, seq.seq_q - i0), out.score_elems + i0 * seq.seq_k});
      out.score_elems += seq.seq_q * seq.seq_k;
    }
  }
  return out;
}

int64_t score_elems(const core::Shape& s) {
  if (!s.varlen()) return s.batch * s.heads * s.seq_q * s.seq_k;
  int64_t sum = 0;
  for (int64_t len : s.seq_lens) sum += len * len;
  return s.heads * sum;
}

std::vector<KeyBlock> key_blocks(const RowBlocks& work) {
  // Row blocks that read the same K rows belong to one (sequence, kv head).
  std::map<std::pair<const core::Shape*, int64_t>, std::vector<const RowBlock*>> groups;
  for (const RowBlock& blk : work.blocks) groups[{blk.shape, blk.view.kv_offset}].push_back(&blk);
  std::vector<KeyBlock> out;
  for (const auto& [key, blocks] : groups) {
    const core::Shape& seq = *key.first;
    for (int64_t j0 = 0; j0 < seq.seq_k; j0 += kBlockKeys) {
      KeyBlock kb{&seq, key.second, blocks.front()->view.v_offset, j0, std::min(kBlockKeys, seq.seq_k - j0), {}};
      for (const RowBlock* blk : blocks) {
        const core::KeyRange r = block_keys(seq, blk->i0, blk->rows);
        if (r.begin < j0 + kb.keys && r.end > j0) kb.rows.push_back(blk);
      }
      out.push_back(std::move(kb));
    }
  }
  return out;
}

core::KeyRange block_keys(const core::Shape& s, int64_t i0, int64_t rows) {
  // Both ends of a row's range grow with the row: the first row has the lowest begin, the last the
  // highest end.
  return {s.keys_of_row(i0).begin, s.keys_of_row(i0 + rows - 1).end};
}

void pack_keys_transposed(const float* k, int64_t keys, int64_t hdim, float* kt) {
  for (int64_t d = 0; d < hdim; ++d) {
    float* col = kt + d * kBlockKeys;
    for (int64_t j = 0; j < keys; ++j) col[j] = k[j * hdim + d];
    for (int64_t j = keys; j < kBlockKeys; ++j) col[j] = 0.0f;
  }
}

namespace {

// Rows at a time: Rows x kBlockKeys accumulators stay in registers (4 rows x 64 keys = 16 AVX-512
// registers) and each loaded K panel row feeds Rows FMAs.
template <int Rows>
[[gnu::always_inline]] inline void qk_rows(const float* q, const float* kt, int64_t keys, int64_t hdim, float scale, float* s,
                    int64_t ld_s) {
  float acc[Rows][kBlockKeys] = {};
  for (int64_t d = 0; d < hdim; ++d) {
    const float* kt_row = kt + d * kBlockKeys;
    for (int r = 0; r < Rows; ++r) {
      const float qd = q[r * hdim + d];
      for (int64_t j = 0; j < kBlockKeys; ++j) acc[r][j] += qd * kt_row[j];
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int64_t j = 0; j < keys; ++j) s[r * ld_s + j] = acc[r][j] * scale;
}

}  // namespace

ATTNPROF_CPU_CLONES
void qk_tile(const float* q, int64_t rows, const float* kt, int64_t keys, int64_t hdim, float scale,
             float* s, int64_t ld_s) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) qk_rows<4>(q + r * hdim, kt, keys, hdim, scale, s + r * ld_s, ld_s);
  for (; r < rows; ++r) qk_rows<1>(q + r * hdim, kt, keys, hdim, scale, s + r * ld_s, ld_s);
}

namespace {

// Columns of the PV accumulator kept in registers while all keys of a block stream past.
constexpr int64_t kPvColumns = 64;

// Rows x kPvColumns accumulators in registers (4 x 64 = 16 AVX-512 registers); every V load feeds
// Rows FMAs, and the accumulator is loaded and stored once per key block, not once per key.
template <int Rows>
[[gnu::always_inline]] inline void pv_rows(const float* p, int64_t ld_p, const float* v, int64_t keys,
                                           int64_t hdim, float* acc) {
  int64_t d0 = 0;
  for (; d0 + kPvColumns <= hdim; d0 += kPvColumns) {
    float a[Rows][kPvColumns];
    for (int r = 0; r < Rows; ++r)
      for (int64_t c = 0; c < kPvColumns; ++c) a[r][c] = acc[r * hdim + d0 + c];
    for (int64_t j = 0; j < keys; ++j) {
      const float* v_row = v + j * hdim + d0;
      for (int r = 0; r < Rows; ++r) {
        const float pj = p[r * ld_p + j];
        for (int64_t c = 0; c < kPvColumns; ++c) a[r][c] += pj * v_row[c];
      }
    }
    for (int r = 0; r < Rows; ++r)
      for (int64_t c = 0; c < kPvColumns; ++c) acc[r * hdim + d0 + c] = a[r][c];
  }
  if (d0 == hdim) return;
  for (int r = 0; r < Rows; ++r) {  // ragged hdim: the remaining columns, row by row
    float* __restrict out = acc + r * hdim;
    for (int64_t j = 0; j < keys; ++j) {
      const float pj = p[r * ld_p + j];
      const float* __restrict v_row = v + j * hdim;
      for (int64_t d = d0; d < hdim; ++d) out[d] += pj * v_row[d];
    }
  }
}

}  // namespace

ATTNPROF_CPU_CLONES
void pv_tile(const float* p, int64_t ld_p, int64_t rows, const float* v, int64_t keys, int64_t hdim,
             float* acc) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) pv_rows<4>(p + r * ld_p, ld_p, v, keys, hdim, acc + r * hdim);
  for (; r < rows; ++r) pv_rows<1>(p + r * ld_p, ld_p, v, keys, hdim, acc + r * hdim);
}

namespace {

// exp(x) for x <= 0: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in a high part exact in fp32 and a
// low part), exp(r) by its Taylor polynomial to degree 7 (truncation error < 2^-27 on that interval),
// and 2^n put into the exponent field.
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;       // 8 significant bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;    // ln 2 - kLn2Hi
  constexpr float kMinArg = -87.0f;            // exp below ~2^-125.5: flushed to zero
  const bool underflow = x < kMinArg;
  x = x < kMinArg ? kMinArg : x;
  const float n = __builtin_nearbyintf(x * kLog2e);
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const auto scale_bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &scale_bits, sizeof(scale));
  return underflow ? 0.0f : p * scale;
}

}  // namespace

ATTNPROF_CPU_CLONES
float exp_shifted_sum(float* x, int64_t n, float shift) {
  for (int64_t i = 0; i < n; ++i) x[i] = exp_nonpositive(x[i] - shift);
  // A plain `sum += x[i]` is a serial dependency the compiler may not reorder; kSumLanes partial
  // sums vectorise (the result differs from the serial sum only in rounding order).
  constexpr int64_t kSumLanes = 16;
  float partial[kSumLanes] = {};
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (int64_t l = 0; l < kSumLanes; ++l) partial[l] += x[i + l];
  float sum = 0.0f;
  for (; i < n; ++i) sum += x[i];
  for (int64_t l = 0; l < kSumLanes; ++l) sum += partial[l];
  return sum;
}

ATTNPROF_CPU_CLONES
void round_in_place(core::DType dtype, float* x, int64_t n) {
  if (dtype == core::DType::fp32) return;
  if (dtype == core::DType::bf16) {
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits;
      __builtin_memcpy(&bits, &x[i], sizeof(bits));
      const bool finite = (bits & 0x7F800000u) != 0x7F800000u;
      const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
      bits = finite ? rounded : bits;
      __builtin_memcpy(&x[i], &bits, sizeof(bits));
    }
    return;
  }
  // fp16: as kernels::round_to, branch-free so the loop vectorises.
  constexpr float kFp16MinNormal = 0x1p-14f, kFp16Max = 65504.0f;
  constexpr float kInf = __builtin_inff();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    uint32_t bits;
    __builtin_memcpy(&bits, &v, sizeof(bits));
    const bool finite = (bits & 0x7F800000u) != 0x7F800000u;
    const uint32_t normal_bits = (bits + 0xFFFu + ((bits >> 13) & 1u)) & 0xFFFFE000u;
    float normal;
    __builtin_memcpy(&normal, &normal_bits, sizeof(normal));
    const float mag = v < 0 ? -v : v;
    const float sub = __builtin_nearbyintf(v * 0x1p24f) * 0x1p-24f;
    const float overflowed = v < 0 ? -kInf : kInf;
    const float normal_mag = normal < 0 ? -normal : normal;
    float r = mag < kFp16MinNormal ? sub : (normal_mag > kFp16Max ? overflowed : normal);
    x[i] = finite ? r : v;
  }
}

float row_delta(const float* d_o, const float* o, int64_t n) {
  float sum = 0;
  for (int64_t d = 0; d < n; ++d) sum += d_o[d] * o[d];
  return sum;
}

void write_accumulator(core::DType dtype, float* acc, int64_t n, float scale, float* out) {
  if (scale != 1.0f)
    for (int64_t e = 0; e < n; ++e) acc[e] *= scale;
  round_in_place(dtype, acc, n);
  std::copy(acc, acc + n, out);
}

}  // namespace attnprof::kernels::cpu
