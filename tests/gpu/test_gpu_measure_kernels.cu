// Known kernels for tests/gpu/test_gpu_measure.cpp: a streaming copy (analytic DRAM bytes), an empty
// kernel (a call far below the graph threshold), and kernels whose occupancy limiter is known.
#include "test_gpu_measure_kernels.hpp"

#include <cuda_runtime.h>

namespace attnprof::test {

namespace {

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

__global__ void empty_kernel() {}

__global__ void spin_kernel(long long cycles, int* sink) {
  const long long start = clock64();
  int spins = 0;
  while (clock64() - start < cycles) ++spins;
  if (spins == -1) *sink = spins;  // never true; keeps the loop
}

// Needs its dynamic shared memory: bounded by shared memory when the allocation is large.
__global__ void smem_kernel(float* out) {
  extern __shared__ float buffer[];
  buffer[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = buffer[(threadIdx.x + 1) % blockDim.x];
}

// 1024 threads and few registers: two blocks fill an SM's 2048 threads.
__global__ void __launch_bounds__(1024) wide_kernel(float* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<float>(threadIdx.x);
}

}  // namespace

void launch_copy(const void* src, void* dst, size_t bytes, int blocks, void* stream) {
  copy_kernel<<<blocks, 512, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float4*>(src),
                                                                     static_cast<float4*>(dst), bytes / sizeof(float4));
}

void launch_empty(void* stream) { empty_kernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(); }

void launch_spin(long long cycles, int blocks, void* stream) {
  spin_kernel<<<blocks, 128, 0, static_cast<cudaStream_t>(stream)>>>(cycles, nullptr);
}

const void* smem_kernel_func(size_t dynamic_smem_bytes) {
  cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dynamic_smem_bytes));
  return reinterpret_cast<const void*>(smem_kernel);
}

const void* wide_kernel_func() { return reinterpret_cast<const void*>(wide_kernel); }

}  // namespace attnprof::test
