// The definitions behind fused_launch.hpp's backward for one head dim; fused_bwd_d<hdim>.cu
// instantiates them.
#pragma once
#include "kernels/common/cuda_check.cuh"
#include "kernels/common/dispatch.cuh"
#include "kernels/common/dynamic_smem.cuh"
#include "kernels/fused/fused_bwd_kernel.cuh"
#include "kernels/fused/fused_launch.hpp"

namespace attnprof::kernels::fused {

template <int kHeadDim>
const void* bwd_kernel_func(core::DType dtype, BwdStage stage) {
  const void* func = nullptr;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (stage) {
      case BwdStage::preprocess: func = reinterpret_cast<const void*>(&fused_bwd_preprocess_kernel<T, kHeadDim>); break;
      case BwdStage::main: func = reinterpret_cast<const void*>(&fused_bwd_main_kernel<T, kHeadDim>); break;
      case BwdStage::dq_convert: func = reinterpret_cast<const void*>(&fused_bwd_dq_convert_kernel<T, kHeadDim>); break;
    }
  });
  return func;
}

template <int kHeadDim>
BwdLaunchDims bwd_launch_dims(core::DType dtype, BwdStage stage, int64_t q_rows, int64_t main_ctas) {
  constexpr int64_t kPreprocessRows = kBwdPreprocessThreads / kBwdLanesPerRow;
  constexpr int64_t kConvertElems = int64_t{kBwdConvertThreads} * kBwdConvertElems;
  constexpr BwdTileConfig c = bwd_tile_config(kHeadDim);
  switch (stage) {
    case BwdStage::preprocess: return {(q_rows + kPreprocessRows - 1) / kPreprocessRows, kBwdPreprocessThreads, 0};
    case BwdStage::main: return {main_ctas, bwd_threads_of(c), bwd_smem_bytes(c, kHeadDim, core::dtype_bytes(dtype))};
    case BwdStage::dq_convert: return {(q_rows * kHeadDim + kConvertElems - 1) / kConvertElems, kBwdConvertThreads, 0};
  }
  return {};
}

template <int kHeadDim>
void launch_bwd_stage(core::DType dtype, BwdStage stage, const FusedBwdParams& p, int64_t main_ctas,
                      cudaStream_t stream) {
  const BwdLaunchDims dims = bwd_launch_dims<kHeadDim>(dtype, stage, p.q_rows, main_ctas);
  if (dims.grid_blocks == 0) return;
  const auto grid = static_cast<unsigned>(dims.grid_blocks);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (stage) {
      case BwdStage::preprocess:
        fused_bwd_preprocess_kernel<T, kHeadDim><<<grid, dims.block_threads, 0, stream>>>(p);
        break;
      case BwdStage::main:
        allow_dynamic_smem<&fused_bwd_main_kernel<T, kHeadDim>>(dims.dynamic_smem_bytes);
        fused_bwd_main_kernel<T, kHeadDim><<<grid, dims.block_threads, dims.dynamic_smem_bytes, stream>>>(p);
        break;
      case BwdStage::dq_convert:
        fused_bwd_dq_convert_kernel<T, kHeadDim><<<grid, dims.block_threads, 0, stream>>>(p);
        break;
    }
  });
  ATTNPROF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace attnprof::kernels::fused

#define ATTNPROF_FUSED_BWD_INSTANTIATE(HDIM)                                                            \
  namespace attnprof::kernels::fused {                                                                  \
  template const void* bwd_kernel_func<HDIM>(core::DType, BwdStage);                                    \
  template BwdLaunchDims bwd_launch_dims<HDIM>(core::DType, BwdStage, int64_t, int64_t);                \
  template void launch_bwd_stage<HDIM>(core::DType, BwdStage, const FusedBwdParams&, int64_t,           \
                                       cudaStream_t);                                                   \
  }
