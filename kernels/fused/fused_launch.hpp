// What the host side of the fused kernel (fused.cu) needs from its instantiations without compiling
// them: the launch parameters and, per head dim, the kernel's address and its launch. Each head dim's
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

// Calls fn(std::integral_constant<int, hdim>) for a supported head dim (kHeadDims).
template <typename Fn>
void dispatch_hdim(int hdim, Fn&& fn) {
  dispatch_value<32, 64, 96, 128, 192, 256>(hdim, fn);
}

}  // namespace attnprof::kernels::fused
