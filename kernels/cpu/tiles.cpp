#include "kernels/cpu/tiles.hpp"

#include <algorithm>
#include <cmath>

// Function multi-versioning: GCC/Clang emit one clone per listed ISA level and an ifunc resolver.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ATTNPROF_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNPROF_CPU_CLONES
#endif

namespace attnprof::kernels::cpu {

HeadView head_view(const core::Shape& s, int64_t batch_head) {
  const int64_t b = batch_head / s.heads;
  const int64_t h = batch_head % s.heads;
  const int64_t kvh = h / (s.heads / s.kv_heads);
  HeadView v;
  v.q_offset = batch_head * s.seq_q * s.hdim;
  v.kv_offset = (b * s.kv_heads + kvh) * s.seq_k * s.hdim;
  v.lse_offset = batch_head * s.seq_q;
  return v;
}

int64_t visible_keys(const core::Shape& s, int64_t i) {
  if (!s.causal) return s.seq_k;
  return std::clamp<int64_t>(i + s.seq_k - s.seq_q + 1, 0, s.seq_k);
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
inline void qk_rows(const float* q, const float* kt, int64_t keys, int64_t hdim, float scale, float* s,
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

ATTNPROF_CPU_CLONES
void pv_tile(const float* p, int64_t ld_p, int64_t rows, const float* v, int64_t keys, int64_t hdim,
             float* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict out = acc + r * hdim;
    const float* p_row = p + r * ld_p;
    for (int64_t j = 0; j < keys; ++j) {
      const float pj = p_row[j];
      if (pj == 0.0f) continue;  // masked keys and underflowed exponentials add nothing
      const float* __restrict v_row = v + j * hdim;
      for (int64_t d = 0; d < hdim; ++d) out[d] += pj * v_row[d];
    }
  }
}

ATTNPROF_CPU_CLONES
float exp_shifted_sum(float* x, int64_t n, float shift) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - shift);
    sum += x[i];
  }
  return sum;
}

}  // namespace attnprof::kernels::cpu
