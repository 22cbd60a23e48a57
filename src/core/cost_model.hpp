// Analytic cost of one attention forward call: FLOPs, the fewest HBM bytes each kernel kind must move,
// workspace, arithmetic intensity. Plain arithmetic, unit-tested (tests/core/test_cost_model.cpp).
#pragma once
#include "core/results.hpp"
#include "core/shape.hpp"

namespace attnprof::core {

// materialized: S = QK^T and P = softmax(S) are written to and read back from HBM (the reference).
// fused: S and P never leave the chip (FlashAttention).
enum class KernelKind { materialized, fused };

// Unmasked score entries of one (batch, head): seq_q * seq_k, or with the bottom-right causal mask
// sum over rows i of clamp(i + seq_k - seq_q + 1, 0, seq_k).
double unmasked_scores(const Shape&);

// flops: 4*B*H*Nq*Nk*D, halved when causal (FlashAttention benchmark convention);
// flops_dense: never halved; flops_causal_exact: 4*B*H*D*unmasked_scores.
// fused min bytes: Q, K, V read once (and a paged cache's block table); O (dtype) and LSE (fp32) written once.
// materialized: plus S (fp32, written by QK^T, read by softmax) and P (dtype, written by softmax,
// read by PV); sp_bytes holds that extra traffic.
Cost cost_of(const Shape&, KernelKind);

// Device memory one call needs: inputs, outputs and workspace, in bytes.
double footprint_bytes(const Shape&, KernelKind);

}  // namespace attnprof::core
