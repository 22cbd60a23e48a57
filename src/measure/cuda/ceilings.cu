#include <utility>
#include "measure/cuda/ceilings.hpp"

#include <algorithm>
#include <cstdint>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/roofline.hpp"
#include "measure/cuda/cuda_util.hpp"

namespace attnprof::measure {

namespace {

constexpr size_t kCopyBufferBytes = size_t{2} << 30;  // 2 GiB each way: far beyond L2
constexpr int kRepetitions = 10;
constexpr int kMmaChains = 8;             // independent accumulators per warp
constexpr int kMmaIterations = 8192;
constexpr double kFlopsPerMma = 2.0 * 16 * 8 * 16;  // m16n8k16
constexpr int kFmaChains = 8;
constexpr int kFmaIterations = 16384;

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

template <bool Bf16>
__global__ void mma_kernel(float* out, int iterations) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // Operand registers hold arbitrary bit patterns derived from the thread index: the tensor core's
  // issue rate does not depend on the values.
  const uint32_t seed = 0x3c003c00u ^ (threadIdx.x * 0x00010001u);
  uint32_t a0 = seed, a1 = seed + 1, a2 = seed + 2, a3 = seed + 3, b0 = seed + 4, b1 = seed + 5;
  float acc[kMmaChains][4] = {};
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c) {
      if constexpr (Bf16) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      }
    }
  }
  float sum = 0;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) sum += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
#else
  out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<float>(iterations);
#endif
}

__global__ void fma_kernel(float* out, int iterations) {
  float x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) x[c] = threadIdx.x * 1e-3f + c;
  // Contracting (y < 1) keeps the chains finite; the rate does not depend on the values anyway.
  const float y = 0.9999f, z = 1e-4f;
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) x[c] = fmaf(x[c], y, z);
  }
  float sum = 0;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) sum += x[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// Best time of kRepetitions launches after one warm-up [ms].
template <typename Launch>
double best_ms(const Launch& launch) {
  Event start, stop;
  launch();
  check_cuda(cudaGetLastError(), "ceiling probe launch");
  double best = 1e30;
  for (int r = 0; r < kRepetitions; ++r) {
    start.record(nullptr);
    launch();
    stop.record(nullptr);
    best = std::min(best, elapsed_ms(start, stop));
  }
  check_cuda(cudaGetLastError(), "ceiling probe launch");
  return best;
}

// Uniform values in [-1, 1) from a hash of the index: tensor cores draw more power (and the clock can
// drop) on varied data than on a constant fill, which would overstate the roof.
template <bool Bf16>
__global__ void random_fill_kernel(uint16_t* out, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    h ^= h >> 16;
    h *= 2246822519u;
    h ^= h >> 13;
    const float v = static_cast<float>(h >> 8) * (2.f / 16777216.f) - 1.f;
    if constexpr (Bf16) {
      const __nv_bfloat16 b = __float2bfloat16(v);
      out[i] = *reinterpret_cast<const uint16_t*>(&b);
    } else {
      const __half b = __float2half(v);
      out[i] = *reinterpret_cast<const uint16_t*>(&b);
    }
  }
}

// A large cuBLAS GEMM (n^3, fp32 accumulate, output in the input type): the fastest tensor-core path
// the library knows for the device (wgmma on Hopper), which a hand-written mma.sync loop cannot reach.
// 0 when cuBLAS is not usable here (the mma.sync probe then stands alone).
double gemm_flops_per_s(cudaDataType_t type) {
  constexpr int kN = 8192;
  const size_t bytes = static_cast<size_t>(kN) * kN * 2;
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 0;
  double flops_per_s = 0;
  try {
    DeviceBuffer a(bytes), b(bytes), c(bytes);
    const size_t elems = bytes / 2;
    for (void* m : {a.get(), b.get()}) {
      if (type == CUDA_R_16BF)
        random_fill_kernel<true><<<1024, 256>>>(static_cast<uint16_t*>(m), elems);
      else
        random_fill_kernel<false><<<1024, 256>>>(static_cast<uint16_t*>(m), elems);
    }
    check_cuda(cudaGetLastError(), "random_fill_kernel launch");
    const float one = 1.f, zero = 0.f;
    bool ok = true;
    const double ms = best_ms([&] {
      ok = ok && cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a.get(), type, kN, b.get(), type,
                              kN, &zero, c.get(), type, kN, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    });
    if (ok) flops_per_s = 2.0 * kN * kN * static_cast<double>(kN) / (ms * 1e-3);
  } catch (const std::exception&) {
    flops_per_s = 0;  // out of memory, say: the GEMM probe is optional
    (void)cudaGetLastError();
  }
  cublasDestroy(handle);
  return flops_per_s;
}

}  // namespace

MeasuredCeilings measure_ceilings() {
  MeasuredCeilings m;
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  int sm_count = 0;
  check_cuda(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");

  {
    size_t free_bytes = 0, total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    // Two buffers; leave a quarter of free memory untouched.
    const size_t buffer_bytes = std::min(kCopyBufferBytes, free_bytes / 8 * 3 / sizeof(float4) * sizeof(float4));
    DeviceBuffer src(buffer_bytes), dst(buffer_bytes);
    check_cuda(cudaMemset(src.get(), 1, buffer_bytes), "cudaMemset");
    const size_t n = buffer_bytes / sizeof(float4);
    const double ms = best_ms([&] {
      copy_kernel<<<sm_count * 8, 512>>>(static_cast<const float4*>(src.get()), static_cast<float4*>(dst.get()), n);
    });
    m.copy_buffer_bytes = static_cast<double>(buffer_bytes);
    m.copy_bytes_per_s = 2.0 * static_cast<double>(buffer_bytes) / (ms * 1e-3);
  }

  constexpr int kThreads = 256;
  const int blocks = sm_count * 8;  // 64 warps per SM: every scheduler has warps to switch between
  DeviceBuffer out(static_cast<size_t>(blocks) * kThreads * sizeof(float));
  auto* out_ptr = static_cast<float*>(out.get());
  const double warps = static_cast<double>(blocks) * kThreads / 32;
  const double mma_flops = warps * kMmaIterations * kMmaChains * kFlopsPerMma;
  m.mma_fp16_flops_per_s =
      mma_flops / (best_ms([&] { mma_kernel<false><<<blocks, kThreads>>>(out_ptr, kMmaIterations); }) * 1e-3);
  m.mma_bf16_flops_per_s =
      mma_flops / (best_ms([&] { mma_kernel<true><<<blocks, kThreads>>>(out_ptr, kMmaIterations); }) * 1e-3);
  m.gemm_fp16_flops_per_s = gemm_flops_per_s(CUDA_R_16F);
  m.gemm_bf16_flops_per_s = gemm_flops_per_s(CUDA_R_16BF);
  const double fma_flops = 2.0 * blocks * kThreads * static_cast<double>(kFmaIterations) * kFmaChains;
  m.fma_fp32_flops_per_s = fma_flops / (best_ms([&] { fma_kernel<<<blocks, kThreads>>>(out_ptr, kFmaIterations); }) * 1e-3);
  return m;
}

core::Ceilings merge_with_datasheet(const MeasuredCeilings& m, const std::string& device_name) {
  core::Ceilings c;
  if (const auto sheet = core::find_datasheet(device_name)) {
    c = core::datasheet_ceilings(*sheet);
    c.source = "measured+datasheet";
  } else {
    c.source = "measured";
  }
  // A probe that beats the datasheet by more than kImplausibleOverDatasheet measured nothing real
  // (e.g. a binary built for an older architecture runs an empty probe): keep the datasheet value.
  constexpr double kImplausibleOverDatasheet = 1.25;
  auto take = [&](double measured, double& slot, double datasheet_value, const char* what) {
    if (measured <= 0) return;
    if (datasheet_value > 0 && measured > kImplausibleOverDatasheet * datasheet_value) {
      c.source += std::string(", ") + what + " probe rejected as implausible";
      return;
    }
    slot = measured;
  };
  take(m.copy_bytes_per_s, c.peak_bw_bytes_per_s, c.datasheet_bw_bytes_per_s, "bandwidth");
  // The tensor roof is the faster of the two tensor probes: a kernel can use either path.
  for (const auto& [dtype, measured] :
       {std::pair<std::string, double>{"fp16", std::max(m.mma_fp16_flops_per_s, m.gemm_fp16_flops_per_s)},
        {"bf16", std::max(m.mma_bf16_flops_per_s, m.gemm_bf16_flops_per_s)},
        {"fp32", m.fma_fp32_flops_per_s}}) {
    const auto it = c.datasheet_flops_per_s.find(dtype);
    double slot = c.peak_flops_per_s.count(dtype) ? c.peak_flops_per_s[dtype] : 0.0;
    take(measured, slot, it == c.datasheet_flops_per_s.end() ? 0.0 : it->second, dtype.c_str());
    if (slot > 0) c.peak_flops_per_s[dtype] = slot;
  }
  return c;
}

}  // namespace attnprof::measure
