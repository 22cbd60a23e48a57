// The definitions behind fused_launch.hpp for one head dim; fused_d<hdim>.cu instantiates them.
#pragma once
#include <type_traits>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/dynamic_smem.cuh"
#include "kernels/fused/fused_kernel.cuh"
#include "kernels/fused/fused_launch.hpp"

namespace attnprof::kernels::fused {

// Calls fn(element tag, variant constant) for the combinations instantiated at kHeadDim.
template <int kHeadDim, typename Fn>
void dispatch_dtype_variant(core::DType dtype, TileVariant variant, Fn&& fn) {
  auto by_variant = [&](auto tag) {
    switch (variant) {
      case TileVariant::fast:
        fn(tag, std::integral_constant<TileVariant, TileVariant::fast>{});
        return;
      case TileVariant::small:
        if constexpr (supported_variant(kHeadDim, TileVariant::small))
          fn(tag, std::integral_constant<TileVariant, TileVariant::small>{});
        return;
      case TileVariant::warps8:
        if constexpr (supported_variant(kHeadDim, TileVariant::warps8))
          fn(tag, std::integral_constant<TileVariant, TileVariant::warps8>{});
        return;
      case TileVariant::m64n32:
        if constexpr (supported_variant(kHeadDim, TileVariant::m64n32))
          fn(tag, std::integral_constant<TileVariant, TileVariant::m64n32>{});
        return;
      case TileVariant::m64n64:
        if constexpr (supported_variant(kHeadDim, TileVariant::m64n64))
          fn(tag, std::integral_constant<TileVariant, TileVariant::m64n64>{});
        return;
      case TileVariant::padded:
        if constexpr (supported_variant(kHeadDim, TileVariant::padded))
          fn(tag, std::integral_constant<TileVariant, TileVariant::padded>{});
        return;
      case TileVariant::m64n64sw:
        if constexpr (supported_variant(kHeadDim, TileVariant::m64n64sw))
          fn(tag, std::integral_constant<TileVariant, TileVariant::m64n64sw>{});
        return;
    }
  };
  dispatch_dtype(dtype, by_variant);
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
