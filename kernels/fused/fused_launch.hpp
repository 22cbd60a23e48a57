// What the host side of the fused kernel (fused.cu) needs from its instantiations without compiling
// them: the launch parameters and, per head dim, the kernels' addresses and their launches (the
// forward's, and the backward's three stages, from fused_bwd_d<hdim>.cu). Each head dim's
// kernels are instantiated in their own translation unit (fused_d<hdim>.cu, from fused_instance.cuh),
// so the six compile in parallel and a change to one tile recompiles one file.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/shape.hpp"
#include "kernels/common/dispatch.cuh"
#include "core/tiles/fused_tiles.hpp"

namespace attnprof::kernels::fused {

struct FusedParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;
  int seq_q, seq_k;
  int heads, kv_heads, group;  // group = heads / kv_heads query heads per kv head
  int num_m_blocks;            // query-row blocks per (batch, head)
  float scale_log2;            // softmax_scale * log2(e): scores go straight into exp2
  bool causal;
  int window;                  // sliding window in keys (core/shape.hpp); 0 = none
  // Packed variable-length batch: int32 [batch + 1] (core/shape.hpp) on the device, and the batch's
  // tokens (the head stride of Q, K, V, O and LSE is tokens rows). seq_q and seq_k then hold the
  // longest length, which num_m_blocks covers; nullptr for a dense batch.
  const int32_t* cu_seqlens;
  int tokens;
};

// fused_attention_kernel<T, kHeadDim, variant> for dtype fp16 or bf16; supported_variant(kHeadDim,
// variant) must hold.
template <int kHeadDim>
const void* kernel_func(core::DType dtype, TileVariant variant);

// Raises the kernel's dynamic shared-memory limit (once per device) and launches it.
template <int kHeadDim>
void launch_kernel(core::DType dtype, TileVariant variant, const FusedParams& p, unsigned grid,
                   cudaStream_t stream);

#define ATTNPROF_FUSED_DECLARE(HDIM)                                                        \
  extern template const void* kernel_func<HDIM>(core::DType, TileVariant);                  \
  extern template void launch_kernel<HDIM>(core::DType, TileVariant, const FusedParams&,    \
                                           unsigned, cudaStream_t);
ATTNPROF_FUSED_DECLARE(32)
ATTNPROF_FUSED_DECLARE(64)
ATTNPROF_FUSED_DECLARE(96)
ATTNPROF_FUSED_DECLARE(128)
ATTNPROF_FUSED_DECLARE(192)
ATTNPROF_FUSED_DECLARE(256)
#undef ATTNPROF_FUSED_DECLARE

// The backward (fused_bwd_kernel.cuh): inputs Q, K, V, O, dO (the dtype) and LSE; outputs dQ, dK, dV;
// the fp32 workspace of BwdWorkspace. Shape fields as FusedParams'.
struct FusedBwdParams {
  const void* q;
  const void* k;
  const void* v;
  const void* o;
  const void* d_o;
  const float* lse;
  void* dq;
  void* dk;
  void* dv;
  float* dq_accum;  // (rows of Q, hdim): dQ / scale summed over the key blocks by atomics
  float* lse_log2;  // (rows of Q): LSE * log2(e), 0 for a row that sees no key
  float* d_sum;     // (rows of Q): D = rowsum(dO * O)
  int seq_q, seq_k;
  int heads, kv_heads, group;
  int num_n_blocks;  // key blocks (CTAs) per (batch, kv head)
  float scale_log2;  // softmax_scale * log2(e)
  float scale;       // softmax_scale: dQ and dK are scale * dS K and scale * dS^T Q
  bool causal;
  int window;
  const int32_t* cu_seqlens;  // as FusedParams'
  int tokens;
  int64_t q_rows;    // rows of Q, O and LSE: batch * heads * seq_q, or heads * tokens packed
};

// The workspace of one backward call: dq_accum, then lse_log2 and d_sum, in floats.
struct BwdWorkspace {
  int64_t dq_accum_floats, lse_log2_floats, d_sum_floats;
  constexpr int64_t bytes() const { return (dq_accum_floats + lse_log2_floats + d_sum_floats) * 4; }
};
constexpr BwdWorkspace bwd_workspace(int64_t q_rows, int hdim) { return {q_rows * hdim, q_rows, q_rows}; }

// The backward's three kernels for dtype fp16 or bf16 at kHeadDim (bwd_supported_hdim): D and the
// scaled LSE per row and a zeroed dq_accum; dK, dV and dq_accum; dQ from dq_accum.
enum class BwdStage { preprocess, main, dq_convert };
template <int kHeadDim>
const void* bwd_kernel_func(core::DType dtype, BwdStage stage);
// Grid (CTAs) and block (threads) of a stage for p; dynamic shared memory of the main stage.
struct BwdLaunchDims {
  int64_t grid_blocks;
  int block_threads;
  size_t dynamic_smem_bytes;
};
template <int kHeadDim>
BwdLaunchDims bwd_launch_dims(core::DType dtype, BwdStage stage, int64_t q_rows, int64_t main_ctas);
template <int kHeadDim>
void launch_bwd_stage(core::DType dtype, BwdStage stage, const FusedBwdParams& p, int64_t main_ctas,
                      cudaStream_t stream);

#define ATTNPROF_FUSED_BWD_DECLARE(HDIM)                                                             \
  extern template const void* bwd_kernel_func<HDIM>(core::DType, BwdStage);                         \
  extern template BwdLaunchDims bwd_launch_dims<HDIM>(core::DType, BwdStage, int64_t, int64_t);      \
  extern template void launch_bwd_stage<HDIM>(core::DType, BwdStage, const FusedBwdParams&, int64_t, \
                                              cudaStream_t);
ATTNPROF_FUSED_BWD_DECLARE(64)
ATTNPROF_FUSED_BWD_DECLARE(128)
#undef ATTNPROF_FUSED_BWD_DECLARE

// Calls fn(std::integral_constant<int, hdim>) for a supported head dim (kHeadDims).
template <typename Fn>
void dispatch_hdim(int hdim, Fn&& fn) {
  dispatch_value<32, 64, 96, 128, 192, 256>(hdim, fn);
}

// The same for a head dim the backward has (kBwdHeadDims).
template <typename Fn>
void dispatch_bwd_hdim(int hdim, Fn&& fn) {
  dispatch_value<64, 128>(hdim, fn);
}

}  // namespace attnprof::kernels::fused
