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

Cost cost_of(const Shape& s, KernelKind kind) {
  const double bytes = dtype_bytes(s.dtype);
  const double bh = static_cast<double>(s.batch) * static_cast<double>(s.heads);
  const double per_score = kGemmsPerCall * kFlopsPerMac * static_cast<double>(s.hdim);
  const double scores_dense = bh * static_cast<double>(s.seq_q) * static_cast<double>(s.seq_k);

  Cost c;
  c.flops_dense = per_score * scores_dense;
  c.flops = s.causal ? c.flops_dense / 2 : c.flops_dense;
  c.flops_causal_exact = per_score * bh * unmasked_scores(s);

  // A paged cache adds its block table (int32 per page); the pad of a last page is never read.
  c.min_bytes_read = (static_cast<double>(s.q_elems()) + 2 * static_cast<double>(s.kv_elems())) * bytes +
                     static_cast<double>(s.block_table_elems()) * kBlockTableEntryBytes;
  c.min_bytes_write = static_cast<double>(s.q_elems()) * bytes + static_cast<double>(s.lse_elems()) * kFp32Bytes;
  if (kind == KernelKind::materialized) {
    // S (fp32) written by QK^T and read by the softmax; P (dtype) written by the softmax and read by
    // PV. The dense GEMMs write every entry, masked or not, so causal does not shrink this.
    const double sp_once = scores_dense * (kFp32Bytes + bytes);
    c.min_bytes_read += sp_once;
    c.min_bytes_write += sp_once;
    c.sp_bytes = 2 * sp_once;
    c.workspace_bytes = sp_once;
  }
  c.intensity = c.flops / (c.min_bytes_read + c.min_bytes_write);
  return c;
}

double footprint_bytes(const Shape& s, KernelKind kind) {
  const double bytes = dtype_bytes(s.dtype);
  const double tensors = (2 * static_cast<double>(s.q_elems()) + 2 * static_cast<double>(s.kv_buffer_elems())) * bytes +
                         static_cast<double>(s.lse_elems()) * kFp32Bytes +
                         static_cast<double>(s.block_table_elems()) * kBlockTableEntryBytes;
  return tensors + cost_of(s, kind).workspace_bytes;
}

}  // namespace attnprof::core
