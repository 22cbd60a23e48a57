// Measured ceilings of the current device, each the best a real kernel can reach so that no measured
// kernel beats its roof:
// - HBM bandwidth: the best of three streaming probes (a read-only reduction, a float4 copy, a
//   write-only fill) over two buffer sizes and three grid shapes, best of the repetitions;
// - L2 bandwidth: the read probe over an L2-resident buffer, L1 bypassed;
// - tensor-core FLOP/s per dtype: back-to-back independent mma.sync m16n8k16 on every SM (the
//   portable fused kernel's instruction) and a large cuBLAS GEMM (wgmma on Hopper), each with the SM
//   clock it ran at (clock stamps around the launch), so the roof can be scaled to a point's clock;
// - fp8 (E4M3) tensor-core FLOP/s the same two ways: mma.sync m16n8k32 E4M3 and a large cuBLASLt fp8
//   GEMM, each with its clock, or "not run" with the reason (a GPU before sm_89, a build without
//   sm_89+ code, the library's refusal);
// - FP32 FMA FLOP/s, with its clock;
// - launch latency: GPU time per launch of back-to-back empty kernels.
// core::merge_with_datasheet turns them into core::Ceilings; the backend caches them per device
// (ceilings_cache.hpp).
#pragma once
#include "core/roofline.hpp"

namespace attnprof::measure {

// Runs the probes on the current device (about two seconds). Throws kernels::CudaError, and
// kernels::DeviceOutOfMemory when the bandwidth buffers do not fit.
core::MeasuredCeilings measure_ceilings();
// GPU time of one of many back-to-back empty launches [us], the median of a few repetitions: the
// ceilings' launch_latency_us. Another context busy on the GPU (time-slicing) shows in it at once.
double measure_empty_launch_us();

}  // namespace attnprof::measure
