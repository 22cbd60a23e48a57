// What the host side of fused-sm90 (fused_sm90.cu) needs from its instantiations without compiling
// them: the launch parameters and, per tile width (tile_hdim), the kernel's address and its launch.
// Each width's kernels are instantiated in their own translation unit (fused_sm90_d<width>.cu, from
// fused_sm90_instance.cuh), so they compile in parallel.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include "core/shape.hpp"
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
};

struct Sm90Maps {
  CUtensorMap q, k, v, o;
};

// fused_sm90_kernel<T, kTile, schedule> for dtype fp16 or bf16.
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

// Calls fn(std::integral_constant<int, tile>) for a tile width with instantiated kernels.
template <typename Fn>
void dispatch_tile(int tile, Fn&& fn) {
  dispatch_value<64, 128, 192, 256>(tile, fn);
}

}  // namespace attnprof::kernels::fused_sm90
