// What the host side of fused-sm90 (fused_sm90.cu) needs from its instantiations without compiling
// them: the launch parameters and, per tile width (tile_hdim), the kernel's address and its launch.
// Each width's kernels are instantiated in their own translation unit (fused_sm90_d<width>.cu, from
// fused_sm90_instance.cuh), so they compile in parallel.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include "core/shape.hpp"
#include "kernels/fused/fused_launch.hpp"
#include "kernels/common/dispatch.cuh"
#include "core/tiles/fused_sm90_tiles.hpp"

namespace attnprof::kernels::fused_sm90 {

struct Sm90Params {
  void* o;
  float* lse;
  int seq_q, seq_k;
  int heads, kv_heads, group;  // group = heads / kv_heads
  int num_m_blocks;            // query-row blocks per (batch, head)
  int num_tiles;               // num_m_blocks * batch * heads work tiles
  float scale_log2;            // softmax_scale * log2(e)
  int causal;
  int window;                  // sliding window in keys (core/shape.hpp); 0 = none
  int rotated;                 // tile order of a causal or windowed shape (plan_grid, fused_sm90_tiles.hpp)
  // dtype fp8_e4m3: the per-tensor scales (device, one float each); unread otherwise.
  const float* q_scale;
  const float* k_scale;
  const float* v_scale;
};

struct Sm90Maps {
  CUtensorMap q, k, v, o;
};

// The backward's TMA maps: Q and dO in boxes of bwd::block_m(hdim) rows, K and V of bwd::kBlockN rows
// (64 columns each, 128-byte swizzle), dq_accum (fp32) in boxes of bwd::block_m(hdim) rows of 32 columns.
struct Sm90BwdMaps {
  CUtensorMap q, k, v, d_o, dq_accum;
};

// fused_sm90_kernel<T, kTile, schedule> for dtype fp16, bf16, or fp8_e4m3 (tile widths 128 and 256; v is
// then the V^T map of write_vt's output).
template <int kTile>
const void* kernel_func(core::DType dtype, Schedule schedule);

// Raises the kernel's dynamic shared-memory limit (once per device) and launches it.
template <int kTile>
void launch_kernel(core::DType dtype, Schedule schedule, const Sm90Maps& maps, const Sm90Params& p,
                   unsigned grid, cudaStream_t stream);

#define ATTNPROF_SM90_DECLARE(TILE)                                                               \
  extern template const void* kernel_func<TILE>(core::DType, Schedule);                           \
  extern template void launch_kernel<TILE>(core::DType, Schedule, const Sm90Maps&, const Sm90Params&, \
                                           unsigned, cudaStream_t);
ATTNPROF_SM90_DECLARE(64)
ATTNPROF_SM90_DECLARE(128)
ATTNPROF_SM90_DECLARE(192)
ATTNPROF_SM90_DECLARE(256)
#undef ATTNPROF_SM90_DECLARE

// dtype fp8_e4m3: V [batch * kv_heads, seq_k, hdim] -> V^T [batch * kv_heads, hdim, fp8::vt_keys(seq_k)]
// with the keys of every 16 in fp8::vt_source_key's order and zeros past seq_k (fused_sm90_vt.cu).
void write_vt(const void* v, void* vt, int64_t heads_total, int64_t seq_k, int hdim, cudaStream_t stream);
const void* write_vt_func();

// The backward's main stage (fused_sm90_bwd.cu) at a head dim of bwd::kHeadDims, fp16 or bf16: dK, dV
// and dq_accum from the parameters the fused kernel's preprocess stage has prepared; ctas =
// bwd::key_blocks(seq_k) * batch * kv_heads.
template <int kHeadDim>
const void* bwd_main_func(core::DType dtype);
template <int kHeadDim>
void launch_bwd_main(core::DType dtype, const Sm90BwdMaps& maps, const fused::FusedBwdParams& p, int64_t ctas,
                     cudaStream_t stream);
extern template const void* bwd_main_func<64>(core::DType);
extern template const void* bwd_main_func<128>(core::DType);
extern template void launch_bwd_main<64>(core::DType, const Sm90BwdMaps&, const fused::FusedBwdParams&, int64_t,
                                         cudaStream_t);
extern template void launch_bwd_main<128>(core::DType, const Sm90BwdMaps&, const fused::FusedBwdParams&, int64_t,
                                          cudaStream_t);

// Calls fn(std::integral_constant<int, tile>) for a tile width with instantiated kernels.
template <typename Fn>
void dispatch_tile(int tile, Fn&& fn) {
  dispatch_value<64, 128, 192, 256>(tile, fn);
}

}  // namespace attnprof::kernels::fused_sm90
