// Measured ceilings of the current device: HBM bandwidth (a float4 grid-stride copy over >= 2 GiB,
// bytes read + written), tensor-core peak per dtype (back-to-back independent mma.sync m16n8k16 with
// fp32 accumulate on every SM: the instruction the portable fused kernel uses; and a large cuBLAS GEMM,
// the library's fastest path, wgmma on Hopper: the roof is the faster of the two), and FP32 FMA peak. Merged
// with the datasheet into core::Ceilings; the backend caches them per device (ceilings_cache.hpp).
#pragma once
#include "core/results.hpp"

namespace attnprof::measure {

struct MeasuredCeilings {
  double copy_bytes_per_s = 0;        // (read + written) / time, best of the repetitions
  double copy_buffer_bytes = 0;       // size of each of the two buffers
  double mma_fp16_flops_per_s = 0;
  double mma_bf16_flops_per_s = 0;
  double gemm_fp16_flops_per_s = 0;   // cuBLAS 8192^3 GEMM (wgmma on Hopper); 0 if it could not run
  double gemm_bf16_flops_per_s = 0;
  double fma_fp32_flops_per_s = 0;
};

// Runs the three probes on the current device (about a second). Throws kernels::CudaError.
MeasuredCeilings measure_ceilings();

// Measured values where present, datasheet values kept beside them (source "measured+datasheet", or
// "measured" when the device has no datasheet entry).
core::Ceilings merge_with_datasheet(const MeasuredCeilings&, const std::string& device_name);

}  // namespace attnprof::measure
