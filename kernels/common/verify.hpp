// Verification against a float64 CPU reference, shared by every backend.
// A kernel's O rows are compared with (a) the float64 reference and (b) the same math done naively in
// the kernel's low precision (S in fp32 from the inputs, P rounded to the dtype, PV accumulated in fp32,
// O rounded to the dtype). FlashAttention's rule: the kernel passes when its max error is at most
// 2x the naive computation's max error plus a small absolute term, its LSE is close, and no output
// element was left unwritten (poisoned) or non-finite. docs/verification.md explains the numbers.
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
// The naive low-precision computation of the same row (the baseline of the 2x rule).
std::vector<double> naive_lowp_row(const core::Shape&, uint64_t seed, int64_t row);

// Rounds to the dtype's precision (round to nearest even), for host-side emulation.
float round_to(core::DType, float);

// o_rows: rows.size() * value_hdim() values as the kernel wrote them (converted to float); lse_rows likewise.
// unwritten: poisoned or non-finite elements counted over the WHOLE of O and LSE by the caller.
// q_scale_log2: the inputs' Q scale (kernels/common/random.hpp), 0 unless a test widened the scores.
// check_lse false: the kernel writes no LSE (a plugin may not); lse_rows is then ignored.
core::Verification verify_rows(const core::Shape&, uint64_t seed, const std::vector<int64_t>& rows,
                               const std::vector<float>& o_rows, const std::vector<float>& lse_rows,
                               int64_t unwritten, int q_scale_log2 = 0, bool check_lse = true);

}  // namespace attnprof::kernels
