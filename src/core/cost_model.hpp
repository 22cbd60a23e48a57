// Analytic cost of one attention call (forward, backward or both: Shape::pass): FLOPs, the fewest HBM bytes each kernel kind must move,
// workspace, arithmetic intensity. Plain arithmetic, unit-tested (tests/core/test_cost_model.cpp).
#pragma once
#include "core/results.hpp"
#include "core/shape.hpp"

namespace attnprof::core {

// materialized: S = QK^T and P = softmax(S) are written to and read back from HBM (the reference).
// fused: S and P never leave the chip (FlashAttention).
enum class KernelKind { materialized, fused };

// unmasked_scores, rows_with_keys and keys_seen describe one (batch, head) of a dense shape (a packed
// batch's per sequence: Shape::sequence).
// Unmasked score entries of one (batch, head): the sum over query rows of Shape::keys_of_row(i).size()
// (seq_q * seq_k without a mask), in closed form for any seq_q, seq_k, causal and window.
double unmasked_scores(const Shape&);

// Query rows of one (batch, head) that see at least one key: seq_q, or min(seq_q, seq_k) when causal,
// or those with i + seq_k - seq_q + window >= 1 for a window without the causal mask.
int64_t rows_with_keys(const Shape&);

// The keys that at least one query row sees (one contiguous range): [0, seq_k) without a window,
// empty when no row sees a key.
KeyRange keys_seen(const Shape&);

// flops: 2*B*H*(D + Dv)*unmasked_scores (exact for any mask and window; D the query/key head dim, Dv the
// value head dim, so 4*B*H*D*unmasked_scores when they are equal); flops_dense: 2*B*H*Nq*Nk*(D + Dv);
// flops_fa_convention: flops_dense, halved when causal (FlashAttention's benchmarks; it ignores the
// window).
// fused min bytes: the Q rows that see a key, the K (hdim wide) and V (hdim_v wide) rows of keys_seen
// read once (and a paged cache's block-table entries of their pages); O (dtype, hdim_v wide) and LSE
// (fp32) written once.
// materialized (the reference, as kernels/reference/reference.cu runs it): all of Q, K, V read by
// the dense GEMMs; S (fp32) written whole by QK^T and read by the softmax only where unmasked; P
// (dtype) written whole by the softmax and read whole by PV. sp_bytes holds that S/P traffic.
// The backward (pass bwd): flops 2*B*H*(3D + 2Dv)*unmasked_scores (S recomputed, dV = P^T dO,
// dP = dO V^T, dQ = dS K, dK = dS^T Q), flops_dense likewise over every score, flops_fa_convention
// 2.5x the forward's (FlashAttention's benchmarks). fused min bytes: the Q, O and dO rows and LSE of
// the rows that see a key, the K and V rows of keys_seen read; dQ, dK and dV written whole.
// materialized (the unfused reference backward): S (fp32), P (dtype), dP (fp32) and dS (dtype)
// written whole, each read by the passes that need it, the GEMMs' operands read by each GEMM, and with
// GQA fp32 per-query-head dK and dV written and read by their reduction; docs/cost-model.md lists the
// passes. fwd_bwd: the forward's cost plus the backward's (workspace: the larger).
// A packed batch (Shape::varlen) costs the sum of its sequences' costs, each a dense batch of one at
// its length (exact for the causal mask and the window, which apply per sequence); padded_flops and
// padded_min_bytes are what the same batch padded to its longest sequence would cost (0 when dense).
Cost cost_of(const Shape&, KernelKind);

// Record::tflops (cost.flops over the P50) and tflops_fa_convention (cost.flops_fa_convention over
// the P50); both 0 without a positive P50.
void set_tflops(Record&);

// Device memory one call needs: inputs, outputs and workspace, in bytes (with a backward's dO, dQ,
// dK and dV).
double footprint_bytes(const Shape&, KernelKind);

}  // namespace attnprof::core
