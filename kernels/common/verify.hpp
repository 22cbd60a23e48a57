// Verification against a float64 CPU reference, shared by every backend.
// A kernel's O rows are compared with (a) the float64 reference and (b) the same math done naively in
// the kernel's low precision (S in fp32 from the inputs, P rounded to the dtype, PV accumulated in fp32,
// O rounded to the dtype). FlashAttention's rule: the kernel passes when its max error is at most
// 2x the naive computation's max error plus a small absolute term, its LSE is close, and no output
// element was left unwritten (poisoned) or non-finite. fp8 prefill (core::Shape::quantized_q) is held
// instead to a bound derived for each O element (fp8_o_bounds_row), against the float64 attention of
// its dequantized Q, K and V. docs/verification.md explains the numbers.
#pragma once
#include <cstdint>
#include <vector>

#include "core/results.hpp"
#include "core/shape.hpp"

namespace attnprof::kernels {

// Flat row index r = (b * heads + h) * seq_q + i, or h * tokens + cu_seqlens[b] + i for a packed batch
// (the row's LSE index). All rows when there are at most max_rows, else a seeded sample that always
// includes the first and last query row of the first and last (b, h); of a packed batch, the first and
// last row of every sequence at the first, the last and one seeded head, with a sample of its rows.
std::vector<int64_t> rows_to_check(const core::Shape&, int max_rows, uint64_t seed);

struct ReferenceRow {
  std::vector<double> o;  // value_hdim() values
  double lse = 0;         // natural log of the softmax denominator (of scale * q.k); -inf if no key
};
// Float64 reference for one row, inputs from kernels/common/random.hpp.
ReferenceRow reference_row(const core::Shape&, uint64_t seed, int64_t row);
// The naive low-precision computation of the same row (the baseline of the 2x rule). For fp8 prefill,
// what an fp8 tensor-core kernel computes: P = exp(s - max) rounded to E4M3, P V in fp32, divided by the
// fp32 row sum of the unrounded P, O rounded to bf16.
std::vector<double> naive_lowp_row(const core::Shape&, uint64_t seed, int64_t row);
// fp8 prefill: the bound each of the row's value_hdim() O elements is held to (docs/verification.md#fp8-prefill).
std::vector<double> fp8_o_bounds_row(const core::Shape&, uint64_t seed, int64_t row);

// Rounds to the dtype's precision (round to nearest even), for host-side emulation; fp8_e4m3 to E4M3
// at scale 1, saturating at 448.
float round_to(core::DType, float);

// o_rows: rows.size() * value_hdim() values as the kernel wrote them (converted to float); lse_rows likewise.
// unwritten: poisoned or non-finite elements counted over the WHOLE of O and LSE by the caller.
// q_scale_log2: the inputs' Q scale (kernels/common/random.hpp), 0 unless a test widened the scores.
// check_lse false: the kernel writes no LSE (a plugin may not); lse_rows is then ignored.
core::Verification verify_rows(const core::Shape&, uint64_t seed, const std::vector<int64_t>& rows,
                               const std::vector<float>& o_rows, const std::vector<float>& lse_rows,
                               int64_t unwritten, int q_scale_log2 = 0, bool check_lse = true);

// The backward pass (core/shape.hpp): dO is tensor 3 of kernels/common/random.hpp (shaped as O). The
// float64 backward takes the O and LSE the kernel's backward read (its forward's, checked against the
// float64 forward by verify_rows): D = rowsum(dO * O), P = exp(scale * q.k - LSE) under the mask,
// dS = P * (dP - D). Checked rows: grad_rows_to_check. dQ rows index as Q's rows (rows_to_check's
// flat row r); dK and dV rows are key rows r = (b * kv_heads + g) * seq_k + j (packed: g * tokens +
// cu_seqlens[b] + j), each summed over its group's query heads and all query rows.
struct GradRows {
  std::vector<int64_t> q_rows;   // rows of dQ
  std::vector<int64_t> kv_rows;  // rows of dK and of dV
};
GradRows grad_rows_to_check(const core::Shape&, int max_rows, uint64_t seed);

// o_all and lse_all: the whole of O and LSE as the backward read them (converted to float, in the
// bhsd layout or the packed one). dq_rows: q_rows.size() * hdim values; dk_rows kv_rows.size() * hdim;
// dv_rows kv_rows.size() * value_hdim(). unwritten: poisoned or non-finite elements counted over the
// whole of dQ, dK and dV by the caller. Fills the GradChecks ("dq", "dk", "dv") of the returned
// Verification's grads, and passed when all three are within tolerance and nothing is unwritten;
// the caller merges it with the forward check of O and LSE.
core::Verification verify_grads(const core::Shape&, uint64_t seed, const GradRows& rows,
                                const std::vector<float>& o_all, const std::vector<float>& lse_all,
                                const std::vector<float>& dq_rows, const std::vector<float>& dk_rows,
                                const std::vector<float>& dv_rows, int64_t unwritten);
// A backward point's one Verification: the forward check of the O and LSE its backward read
// (verify_rows) takes verify_grads' GradChecks and unwritten count, and passes only when both passed.
void merge_grad_checks(core::Verification& forward, const core::Verification& grads);

}  // namespace attnprof::kernels
