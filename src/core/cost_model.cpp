// Analytic FLOPs and minimum HBM traffic of one attention call, forward, backward or both
// (docs/cost-model.md has the formulas and a worked example).
#include "core/cost_model.hpp"

#include <algorithm>
#include <map>

namespace attnprof::core {

namespace {

constexpr double kFp32Bytes = 4;    // S and LSE are fp32 in every kernel
constexpr double kBlockTableEntryBytes = 4;  // int32 page index
constexpr double kFlopsPerMac = 2;  // one multiply-add
// FlashAttention's benchmarks count a backward as 2.5 forwards (its five products against two).
constexpr double kFaBackwardFactor = 2.5;
// Two GEMMs per (batch, head): QK^T of 2 * seq_q * seq_k * hdim FLOPs and PV of 2 * seq_q * seq_k *
// hdim_v (the value head dim, hdim unless the shape says otherwise).

// sum of clamp(x, 0, n) over x = lo .. hi (0 when lo > hi), in closed form.
double clamped_sum(int64_t lo, int64_t hi, int64_t n) {
  if (lo > hi) return 0;
  double sum = 0;
  const int64_t a = std::max<int64_t>(lo, 0), b = std::min(hi, n);
  if (a <= b) sum += (static_cast<double>(a) + static_cast<double>(b)) * static_cast<double>(b - a + 1) / 2;
  const int64_t c = std::max(lo, n + 1);  // x past n counts n
  if (c <= hi) sum += static_cast<double>(n) * static_cast<double>(hi - c + 1);
  return sum;
}

// With p = i + seq_k - seq_q, row i's keys are [clamp(p - W + 1), clamp(end(p))) (Shape::keys_of_row),
// where end(p) is p + 1 causal, p + W with a window, seq_k otherwise; `end_offset` is that + 1 or + W
// (0 for the constant seq_k). The clamped begin never passes the clamped end.
struct RowLimits {
  bool end_is_seq_k = false;  // no causal mask and no window: every row ends at seq_k
  int64_t end_offset = 0;     // end(p) = p + end_offset otherwise
  int64_t window = 0;         // the clamped window (0: begin is 0)
};

RowLimits row_limits(const Shape& s) {
  RowLimits l;
  l.window = s.windowed() ? std::min(s.window, s.seq_q + s.seq_k) : 0;  // as Shape::keys_of_row clamps it
  if (s.causal) l.end_offset = 1;
  else if (s.windowed()) l.end_offset = l.window;
  else l.end_is_seq_k = true;
  return l;
}

}  // namespace

double unmasked_scores(const Shape& s) {
  const RowLimits l = row_limits(s);
  const int64_t p0 = s.seq_k - s.seq_q, p1 = s.seq_k - 1;  // aligned positions of the first and last row
  const double ends = l.end_is_seq_k ? static_cast<double>(s.seq_q) * static_cast<double>(s.seq_k)
                                     : clamped_sum(p0 + l.end_offset, p1 + l.end_offset, s.seq_k);
  const double begins = l.window > 0 ? clamped_sum(p0 - l.window + 1, p1 - l.window + 1, s.seq_k) : 0;
  return ends - begins;
}

int64_t rows_with_keys(const Shape& s) {
  const RowLimits l = row_limits(s);
  if (l.end_is_seq_k) return s.seq_q;
  // Row i sees a key iff its end i + seq_k - seq_q + end_offset >= 1 (a begin never reaches seq_k).
  const int64_t first = std::max<int64_t>(0, s.seq_q - s.seq_k - l.end_offset + 1);
  return std::max<int64_t>(0, s.seq_q - first);
}

KeyRange keys_seen(const Shape& s) {
  const int64_t rows = rows_with_keys(s);
  if (rows == 0) return {};
  // Both ends of a row's range grow with the row, and consecutive rows' ranges overlap or touch
  // (begin(i + 1) = begin(i) + 1 <= end(i) for W >= 1), so the rows see one contiguous range.
  return {s.keys_of_row(s.seq_q - rows).begin, s.keys_of_row(s.seq_q - 1).end};
}

namespace {

// Block-table entries (pages) of one sequence that hold the keys in `keys`.
int64_t pages_touched(const Shape& s, KeyRange keys) {
  if (!s.paged() || keys.size() <= 0) return 0;
  return (keys.end - 1) / s.page_size - keys.begin / s.page_size + 1;
}

}  // namespace

namespace {

// The forward (Shape::pass fwd) of a dense shape.
Cost forward_cost_of(const Shape& s, KernelKind kind) {
  // Bytes of one element: of Q as stored (1 for fp8 prefill), of O as written (Shape::out_dtype), and
  // of what the materialized reference computes in (its P, and the dequantized copies of a quantized
  // Q, K and V: out_dtype too, the dtype but for fp8 prefill's bf16).
  const double q_elem = dtype_bytes(s.dtype), o_elem = dtype_bytes(s.out_dtype());
  const double bytes = dtype_bytes(s.out_dtype());
  // fp8 prefill's one float32 scale of Q (K's and V's are the quantized cache's, below).
  const double q_scale_bytes = s.quantized_q() ? kFp32Bytes : 0;
  const double bh = static_cast<double>(s.batch) * static_cast<double>(s.heads);
  // Per score: one multiply-add per dim of Q.K (hdim) and one per dim of P.V (the value head dim).
  const double per_score = kFlopsPerMac * static_cast<double>(s.hdim + s.value_hdim());
  const double scores_dense = bh * static_cast<double>(s.seq_q) * static_cast<double>(s.seq_k);
  const double scores_unmasked = bh * unmasked_scores(s);

  Cost c;
  c.flops_dense = per_score * scores_dense;
  c.flops = per_score * scores_unmasked;
  c.flops_fa_convention = s.causal ? c.flops_dense / 2 : c.flops_dense;

  // Fused: only the K and V rows some query row sees are needed (every key without a window: the last
  // row sees them all under the bottom-right mask), and of a paged cache the block-table entries of
  // their pages; the pad of a last page is never read. A query row that sees no key needs no Q, its O
  // row is 0 and its LSE -inf.
  // A quantized KV cache (Shape::kv_dtype) stores one byte per element, and per token a float32 scale
  // beside each K row and each V row; per tensor or per kv head its scales are read once.
  const double kv_elem = s.kv_elem_bytes();
  const bool token_scales = s.quantized_kv() && s.kv_scale == KvScale::token;
  const double kv_row_bytes = static_cast<double>(s.hdim + s.value_hdim()) * kv_elem +
                              (token_scales ? 2 * kFp32Bytes : 0);  // a key's K row and V row
  const double scale_bytes = token_scales ? 0 : 2 * static_cast<double>(s.kv_scale_elems()) * kFp32Bytes;
  const double batch_kv_heads = static_cast<double>(s.batch) * static_cast<double>(s.kv_heads);
  const KeyRange seen = keys_seen(s);
  const double kv_seen_bytes = batch_kv_heads * static_cast<double>(seen.size()) * kv_row_bytes + scale_bytes +
                               static_cast<double>(s.batch) * static_cast<double>(pages_touched(s, seen)) *
                                   kBlockTableEntryBytes;
  // The materialized reference's dense GEMMs read all of K and V (and a paged cache's whole table). A
  // quantized cache it first reads whole (bytes and scales) and writes back in the dtype, contiguous,
  // for the GEMMs to read: that copy is its workspace. fp8 prefill's Q likewise (its bytes and scale
  // read, a bf16 copy written and read by QK^T).
  const double kv_dense_elems = static_cast<double>(s.kv_elems() + s.v_elems());
  const double q_elems = static_cast<double>(s.q_elems());
  const double dequantized_bytes =
      (s.quantized_kv() ? kv_dense_elems * bytes : 0) + (s.quantized_q() ? q_elems * bytes : 0);
  const double kv_bytes = kv_dense_elems * bytes + static_cast<double>(s.block_table_elems()) * kBlockTableEntryBytes +
                          (s.quantized_kv() ? static_cast<double>(s.kv_buffer_elems() + s.v_buffer_elems()) * kv_elem +
                                                  2 * static_cast<double>(s.kv_scale_elems()) * kFp32Bytes
                                            : 0);
  const double q_bytes = q_elems * bytes + (s.quantized_q() ? q_elems * q_elem + q_scale_bytes : 0);
  const double q_rows_read_bytes =
      bh * static_cast<double>(rows_with_keys(s)) * static_cast<double>(s.hdim) * q_elem + q_scale_bytes;
  const double o_bytes = static_cast<double>(s.o_elems()) * o_elem;
  c.min_bytes_write = o_bytes + static_cast<double>(s.lse_elems()) * kFp32Bytes;
  if (kind == KernelKind::fused) {
    c.min_bytes_read = q_rows_read_bytes + kv_seen_bytes;
  } else {
    // The reference's dense GEMMs read all of Q, K and V. QK^T writes every entry of S (fp32); the
    // softmax reads S only where unmasked, writes every entry of P (dtype, 0 where masked) and PV reads
    // all of P. Measured on the H200 (reports/h200-fa-bench) the causal reference moves 1.002-1.010x
    // this (DRAM counters plus the L2 write-back tail).
    const double s_write = scores_dense * kFp32Bytes, s_read = scores_unmasked * kFp32Bytes;
    const double p_write = scores_dense * bytes, p_read = scores_dense * bytes;
    c.min_bytes_read = q_bytes + kv_bytes + s_read + p_read;
    c.min_bytes_write += s_write + p_write + dequantized_bytes;
    c.sp_bytes = s_write + s_read + p_write + p_read;
    c.workspace_bytes = s_write + p_write + dequantized_bytes;
  }
  return c;
}

// The backward (Shape::pass bwd) of a dense shape: dQ, dK, dV from Q, K, V, O, dO and LSE.
Cost backward_cost_of(const Shape& s, KernelKind kind) {
  const double bytes = dtype_bytes(s.dtype);
  const double d = static_cast<double>(s.hdim), dv = static_cast<double>(s.value_hdim());
  const double bh = static_cast<double>(s.batch) * static_cast<double>(s.heads);
  // Per score, five products: S = QK^T recomputed (D), dV = P^T dO (Dv), dP = dO V^T (Dv), dQ = dS K
  // (D) and dK = dS^T Q (D). 2.5x the forward's per score when Dv = D.
  const double per_score = kFlopsPerMac * (3 * d + 2 * dv);
  const double scores_dense = bh * static_cast<double>(s.seq_q) * static_cast<double>(s.seq_k);
  const double scores_unmasked = bh * unmasked_scores(s);

  Cost c;
  c.flops_dense = per_score * scores_dense;
  c.flops = per_score * scores_unmasked;
  c.flops_fa_convention = kFaBackwardFactor * forward_cost_of(s, kind).flops_fa_convention;

  const double q_elems = static_cast<double>(s.q_elems()), o_elems = static_cast<double>(s.o_elems());
  const double k_elems = static_cast<double>(s.kv_elems()), v_elems = static_cast<double>(s.v_elems());
  // The gradients, written whole (a row that sees no key has dQ = 0, a key no row sees dK = dV = 0):
  // dQ as Q, dK and dV as K and V, kv_heads wide.
  const double grads_write = (q_elems + k_elems + v_elems) * bytes;
  if (kind == KernelKind::fused) {
    // The rows that see a key: their Q, O and dO rows (D = rowsum(dO * O)) and LSE; the K and V rows
    // of the keys some row sees. Nothing else is needed.
    const double rows = bh * static_cast<double>(rows_with_keys(s));
    const double batch_kv_heads = static_cast<double>(s.batch) * static_cast<double>(s.kv_heads);
    const double keys = batch_kv_heads * static_cast<double>(keys_seen(s).size());
    c.min_bytes_read = rows * ((d + 2 * dv) * bytes + kFp32Bytes) + keys * (d + dv) * bytes;
    c.min_bytes_write = grads_write;
  } else {
    // The unfused reference backward, one pass per product, every score-sized buffer whole:
    //   S  = scale QK^T       reads Q, K; writes S (fp32)
    //   P  = exp(S - LSE)     reads S where unmasked and LSE; writes P (dtype, 0 where masked)
    //   dV = P^T dO           reads P, dO; writes dV
    //   dP = dO V^T           reads dO, V; writes dP (fp32)
    //   dS = P (dP - D)       reads O, dO (D = rowsum(dO * O)), P, dP; writes dS (dtype)
    //   dQ = scale dS K       reads dS, K; writes dQ
    //   dK = scale dS^T Q     reads dS, Q; writes dK
    // dP reuses S's buffer and dS P's, so the workspace is the forward's. With GQA the dV and dK GEMMs
    // sum over the group's query rows (their k dimension): no per-head buffers.
    const double lse_bytes = static_cast<double>(s.lse_elems()) * kFp32Bytes;
    const double s_bytes = scores_dense * kFp32Bytes, s_read = scores_unmasked * kFp32Bytes;
    const double p_bytes = scores_dense * bytes, dp_bytes = scores_dense * kFp32Bytes;
    const double ds_bytes = scores_dense * bytes;
    // The GEMMs' and dS's operands: Q and K twice, V once, dO three times and O once (O-shaped both).
    const double operands = (2 * q_elems + 2 * k_elems + v_elems + 4 * o_elems) * bytes;
    c.sp_bytes = s_bytes + s_read + 3 * p_bytes + 2 * dp_bytes + 3 * ds_bytes;
    c.min_bytes_read = operands + lse_bytes + s_read + 2 * p_bytes + dp_bytes + 2 * ds_bytes;
    c.min_bytes_write = grads_write + s_bytes + p_bytes + dp_bytes + ds_bytes;
    c.workspace_bytes = s_bytes + p_bytes;
  }
  return c;
}

Cost dense_cost_of(const Shape& s, KernelKind kind) {
  Cost c;
  switch (s.pass) {
    case Pass::fwd: c = forward_cost_of(s, kind); break;
    case Pass::bwd: c = backward_cost_of(s, kind); break;
    case Pass::fwd_bwd: {
      // The forward's cost plus the backward's: the forward writes O and LSE and the backward reads
      // them back (no call keeps a whole problem on chip). The backward's buffers serve the forward's
      // S and P, so the workspace is the larger of the two.
      const Cost f = forward_cost_of(s, kind), b = backward_cost_of(s, kind);
      c.flops = f.flops + b.flops;
      c.flops_dense = f.flops_dense + b.flops_dense;
      c.flops_fa_convention = f.flops_fa_convention + b.flops_fa_convention;
      c.min_bytes_read = f.min_bytes_read + b.min_bytes_read;
      c.min_bytes_write = f.min_bytes_write + b.min_bytes_write;
      c.sp_bytes = f.sp_bytes + b.sp_bytes;
      c.workspace_bytes = std::max(f.workspace_bytes, b.workspace_bytes);
      break;
    }
  }
  const double min_bytes = c.min_bytes_read + c.min_bytes_write;
  c.intensity = min_bytes > 0 ? c.flops / min_bytes : 0;
  return c;
}

}  // namespace

Cost cost_of(const Shape& s, KernelKind kind) {
  if (!s.varlen()) return dense_cost_of(s, kind);
  // Every term is linear in the batch: the sequences of one length cost that many times one of them.
  std::map<int64_t, int64_t> sequences_of_length;
  for (int64_t len : s.seq_lens) ++sequences_of_length[len];
  Shape one = s.padded();
  Cost c;
  for (const auto& [len, count] : sequences_of_length) {
    one.batch = count;
    one.seq_q = one.seq_k = len;
    const Cost part = dense_cost_of(one, kind);
    c.flops += part.flops;
    c.flops_dense += part.flops_dense;
    c.flops_fa_convention += part.flops_fa_convention;
    c.min_bytes_read += part.min_bytes_read;
    c.min_bytes_write += part.min_bytes_write;
    c.sp_bytes += part.sp_bytes;
    c.workspace_bytes += part.workspace_bytes;
  }
  const double min_bytes = c.min_bytes_read + c.min_bytes_write;
  c.intensity = min_bytes > 0 ? c.flops / min_bytes : 0;
  const Cost padded = dense_cost_of(s.padded(), kind);
  c.padded_flops = padded.flops;
  c.padded_min_bytes = padded.min_bytes_read + padded.min_bytes_write;
  return c;
}

void set_tflops(Record& r) {
  const double p50_s = r.latency.p50_us * 1e-6;
  r.tflops = p50_s > 0 ? r.cost.flops / p50_s / 1e12 : 0;
  r.tflops_fa_convention = p50_s > 0 ? r.cost.flops_fa_convention / p50_s / 1e12 : 0;
}

double footprint_bytes(const Shape& s, KernelKind kind) {
  const double bytes = dtype_bytes(s.dtype);  // Q's element (1 for fp8 prefill, with its scale); O's below
  const double tensors = static_cast<double>(s.q_elems()) * bytes + (s.quantized_q() ? kFp32Bytes : 0) +
                         static_cast<double>(s.o_elems()) * dtype_bytes(s.out_dtype()) +
                         static_cast<double>(s.kv_buffer_elems() + s.v_buffer_elems()) * s.kv_elem_bytes() +
                         2 * static_cast<double>(s.kv_scale_elems()) * kFp32Bytes +
                         static_cast<double>(s.lse_elems()) * kFp32Bytes +
                         static_cast<double>(s.block_table_elems()) * kBlockTableEntryBytes;
  // The backward's dO (as O) and gradients (dQ as Q, dK and dV as K and V).
  const double grads = s.backward() ? static_cast<double>(s.o_elems() + s.q_elems() + s.kv_elems() + s.v_elems()) * bytes : 0;
  return tensors + grads + cost_of(s, kind).workspace_bytes;
}

}  // namespace attnprof::core
