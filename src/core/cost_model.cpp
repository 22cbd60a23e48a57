// Analytic FLOPs and minimum HBM traffic of one attention forward (docs/cost-model.md has the
// formulas and a worked example).
#include "core/cost_model.hpp"

#include <algorithm>

namespace attnprof::core {

namespace {

constexpr double kFp32Bytes = 4;    // S and LSE are fp32 in every kernel
constexpr double kBlockTableEntryBytes = 4;  // int32 page index
constexpr double kFlopsPerMac = 2;  // one multiply-add
// Two GEMMs (QK^T and PV), each 2 * seq_q * seq_k * hdim FLOPs per (batch, head).
constexpr double kGemmsPerCall = 2;

}  // namespace

double unmasked_scores(const Shape& s) {
  if (!s.causal) return static_cast<double>(s.seq_q) * static_cast<double>(s.seq_k);
  // Row i sees max(i + offset + 1, 0) keys (never more than seq_k: the last row sees exactly seq_k).
  // The rows that see at least one key form an arithmetic series from `first_count` to seq_k.
  const int64_t offset = s.seq_k - s.seq_q;
  const int64_t first_row = std::max<int64_t>(0, -offset);
  const int64_t rows = s.seq_q - first_row;
  if (rows <= 0) return 0;
  const int64_t first_count = first_row + offset + 1;
  return static_cast<double>(first_count + s.seq_k) * static_cast<double>(rows) / 2;
}

int64_t rows_with_keys(const Shape& s) {
  if (!s.causal) return s.seq_q;
  // Bottom-right alignment: row i sees a key iff i >= seq_q - seq_k.
  return std::clamp<int64_t>(s.seq_k, 0, s.seq_q);
}

Cost cost_of(const Shape& s, KernelKind kind) {
  const double bytes = dtype_bytes(s.dtype);
  const double bh = static_cast<double>(s.batch) * static_cast<double>(s.heads);
  const double per_score = kGemmsPerCall * kFlopsPerMac * static_cast<double>(s.hdim);
  const double scores_dense = bh * static_cast<double>(s.seq_q) * static_cast<double>(s.seq_k);
  const double scores_unmasked = bh * unmasked_scores(s);

  Cost c;
  c.flops_dense = per_score * scores_dense;
  c.flops = per_score * scores_unmasked;
  c.flops_fa_convention = s.causal ? c.flops_dense / 2 : c.flops_dense;

  // A paged cache adds its block table (int32 per page) to K and V; the pad of a last page is never read.
  const double kv_bytes = 2 * static_cast<double>(s.kv_elems()) * bytes +
                          static_cast<double>(s.block_table_elems()) * kBlockTableEntryBytes;
  const double q_bytes = static_cast<double>(s.q_elems()) * bytes;
  // Every key is seen by the last query row (bottom-right mask), so K and V are read whole; a query
  // row that sees no key needs no Q, its O row is 0 and its LSE -inf.
  const double q_rows_read_bytes = bh * static_cast<double>(rows_with_keys(s)) * static_cast<double>(s.hdim) * bytes;
  c.min_bytes_write = q_bytes + static_cast<double>(s.lse_elems()) * kFp32Bytes;
  if (kind == KernelKind::fused) {
    c.min_bytes_read = q_rows_read_bytes + kv_bytes;
  } else {
    // The reference's dense GEMMs read all of Q, K and V. QK^T writes every entry of S (fp32); the
    // softmax reads S only where unmasked, writes every entry of P (dtype, 0 where masked) and PV reads
    // all of P. Measured on the H200 (reports/h200-fa-bench) the causal reference moves 1.002-1.010x
    // this (DRAM counters plus the L2 write-back tail).
    const double s_write = scores_dense * kFp32Bytes, s_read = scores_unmasked * kFp32Bytes;
    const double p_write = scores_dense * bytes, p_read = scores_dense * bytes;
    c.min_bytes_read = q_bytes + kv_bytes + s_read + p_read;
    c.min_bytes_write += s_write + p_write;
    c.sp_bytes = s_write + s_read + p_write + p_read;
    c.workspace_bytes = s_write + p_write;
  }
  const double min_bytes = c.min_bytes_read + c.min_bytes_write;
  c.intensity = min_bytes > 0 ? c.flops / min_bytes : 0;
  return c;
}

void set_tflops(Record& r) {
  const double p50_s = r.latency.p50_us * 1e-6;
  r.tflops = p50_s > 0 ? r.cost.flops / p50_s / 1e12 : 0;
  r.tflops_fa_convention = p50_s > 0 ? r.cost.flops_fa_convention / p50_s / 1e12 : 0;
}

double footprint_bytes(const Shape& s, KernelKind kind) {
  const double bytes = dtype_bytes(s.dtype);
  const double tensors = (2 * static_cast<double>(s.q_elems()) + 2 * static_cast<double>(s.kv_buffer_elems())) * bytes +
                         static_cast<double>(s.lse_elems()) * kFp32Bytes +
                         static_cast<double>(s.block_table_elems()) * kBlockTableEntryBytes;
  return tensors + cost_of(s, kind).workspace_bytes;
}

}  // namespace attnprof::core
