// The fused-sm90 backward's main stage (fused_sm90_bwd_kernel.cuh), instantiated at bwd::kHeadDims for
// fp16 and bf16, with its launch; the other two stages are the fused kernel's.
#include "kernels/common/cuda_check.cuh"
#include "kernels/common/dispatch.cuh"
#include "kernels/common/dynamic_smem.cuh"
#include "kernels/fused_sm90/fused_sm90_bwd_kernel.cuh"
#include "kernels/fused_sm90/fused_sm90_launch.hpp"

namespace attnprof::kernels::fused_sm90 {

template <int kHeadDim>
const void* bwd_main_func(core::DType dtype) {
  const void* func = nullptr;
  dispatch_dtype(dtype, [&](auto tag) {
    func = reinterpret_cast<const void*>(&fused_sm90_bwd_main_kernel<decltype(tag), kHeadDim>);
  });
  return func;
}

template <int kHeadDim>
void launch_bwd_main(core::DType dtype, const Sm90BwdMaps& maps, const fused::FusedBwdParams& p, int64_t ctas,
                     cudaStream_t stream) {
  if (ctas == 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    constexpr size_t smem = bwd::smem_bytes(kHeadDim);
    allow_dynamic_smem<&fused_sm90_bwd_main_kernel<T, kHeadDim>>(smem);
    fused_sm90_bwd_main_kernel<T, kHeadDim><<<static_cast<unsigned>(ctas), bwd::kThreads, smem, stream>>>(
        maps.q, maps.k, maps.v, maps.d_o, maps.dq_accum, p);
    ATTNPROF_CUDA_CHECK(cudaGetLastError());
  });
}

template const void* bwd_main_func<64>(core::DType);
template const void* bwd_main_func<128>(core::DType);
template void launch_bwd_main<64>(core::DType, const Sm90BwdMaps&, const fused::FusedBwdParams&, int64_t,
                                  cudaStream_t);
template void launch_bwd_main<128>(core::DType, const Sm90BwdMaps&, const fused::FusedBwdParams&, int64_t,
                                   cudaStream_t);

}  // namespace attnprof::kernels::fused_sm90
