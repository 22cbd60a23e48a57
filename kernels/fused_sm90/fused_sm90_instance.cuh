// The definitions behind fused_sm90_launch.hpp for one tile width; fused_sm90_d<width>.cu instantiates
// them.
#pragma once
#include <cuda_fp8.h>

#include <type_traits>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/dynamic_smem.cuh"
#include "kernels/fused_sm90/fused_sm90_kernel.cuh"
#include "kernels/fused_sm90/fused_sm90_launch.hpp"

namespace attnprof::kernels::fused_sm90 {

// Calls fn(element tag, schedule constant): __half, __nv_bfloat16, or __nv_fp8_e4m3 for dtype fp8_e4m3
// where the tile width has fp8 kernels (fp8::supported_hdim).
template <int kTile, typename Fn>
void dispatch_dtype_schedule(core::DType dtype, Schedule schedule, Fn&& fn) {
  auto by_schedule = [&](auto tag) {
    switch (schedule) {
      case Schedule::overlap: fn(tag, std::integral_constant<Schedule, Schedule::overlap>{}); return;
      case Schedule::pingpong: fn(tag, std::integral_constant<Schedule, Schedule::pingpong>{}); return;
      case Schedule::serial: fn(tag, std::integral_constant<Schedule, Schedule::serial>{}); return;
    }
  };
  if (dtype == core::DType::fp8_e4m3) {
    if constexpr (fp8::supported_hdim(kTile)) by_schedule(__nv_fp8_e4m3{});
    return;
  }
  dispatch_dtype(dtype, by_schedule);
}

template <int kTile>
const void* kernel_func(core::DType dtype, Schedule schedule) {
  const void* func = nullptr;
  dispatch_dtype_schedule<kTile>(dtype, schedule, [&](auto tag, auto sched) {
    using T = decltype(tag);
    func = reinterpret_cast<const void*>(&fused_sm90_kernel<T, kTile, sched.value>);
  });
  return func;
}

template <int kTile>
void launch_kernel(core::DType dtype, Schedule schedule, const Sm90Maps& maps, const Sm90Params& p,
                   unsigned grid, cudaStream_t stream) {
  dispatch_dtype_schedule<kTile>(dtype, schedule, [&](auto tag, auto sched) {
    using T = decltype(tag);
    constexpr size_t smem = std::is_same_v<T, __nv_fp8_e4m3> ? fp8::smem_bytes(kTile) : smem_bytes(kTile);
    allow_dynamic_smem<&fused_sm90_kernel<T, kTile, sched.value>>(smem);
    fused_sm90_kernel<T, kTile, sched.value><<<grid, kThreads, smem, stream>>>(maps.q, maps.k, maps.v, maps.o, p);
    ATTNPROF_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace attnprof::kernels::fused_sm90

#define ATTNPROF_SM90_INSTANTIATE(TILE)                                                              \
  namespace attnprof::kernels::fused_sm90 {                                                          \
  template const void* kernel_func<TILE>(core::DType, Schedule);                                     \
  template void launch_kernel<TILE>(core::DType, Schedule, const Sm90Maps&, const Sm90Params&, unsigned, \
                                    cudaStream_t);                                                   \
  }
