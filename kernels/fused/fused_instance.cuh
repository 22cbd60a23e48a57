// The definitions behind fused_launch.hpp for one head dim; fused_d<hdim>.cu instantiates them.
#pragma once
#include <iterator>
#include <type_traits>
#include <utility>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/dynamic_smem.cuh"
#include "kernels/fused/fused_kernel.cuh"
#include "kernels/fused/fused_launch.hpp"

namespace attnprof::kernels::fused {

// Calls fn(element tag, variant constant) for the combinations instantiated at kHeadDim: every
// variant of kTileVariants that supported_variant() allows there.
template <int kHeadDim, typename Fn>
void dispatch_dtype_variant(core::DType dtype, TileVariant variant, Fn&& fn) {
  dispatch_dtype(dtype, [&](auto tag) {
    [&]<size_t... kI>(std::index_sequence<kI...>) {
      dispatch_value<kTileVariants[kI]...>(variant, [&](auto var) {
        if constexpr (supported_variant(kHeadDim, var.value)) fn(tag, var);
      });
    }(std::make_index_sequence<std::size(kTileVariants)>{});
  });
}

template <int kHeadDim>
const void* kernel_func(core::DType dtype, TileVariant variant) {
  const void* func = nullptr;
  dispatch_dtype_variant<kHeadDim>(dtype, variant, [&](auto tag, auto var) {
    using T = decltype(tag);
    func = reinterpret_cast<const void*>(&fused_attention_kernel<T, kHeadDim, var.value>);
  });
  return func;
}

template <int kHeadDim>
void launch_kernel(core::DType dtype, TileVariant variant, const FusedParams& p, unsigned grid,
                   cudaStream_t stream) {
  dispatch_dtype_variant<kHeadDim>(dtype, variant, [&](auto tag, auto var) {
    using T = decltype(tag);
    constexpr TileConfig c = tile_config(kHeadDim, var.value);
    constexpr size_t smem = smem_bytes(c, kHeadDim, sizeof(T));
    allow_dynamic_smem<&fused_attention_kernel<T, kHeadDim, var.value>>(smem);
    fused_attention_kernel<T, kHeadDim, var.value><<<grid, threads_of(c), smem, stream>>>(p);
    ATTNPROF_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace attnprof::kernels::fused

#define ATTNPROF_FUSED_INSTANTIATE(HDIM)                                                        \
  namespace attnprof::kernels::fused {                                                          \
  template const void* kernel_func<HDIM>(core::DType, TileVariant);                             \
  template void launch_kernel<HDIM>(core::DType, TileVariant, const FusedParams&, unsigned,     \
                                    cudaStream_t);                                              \
  }
