// Probe kernels with known work (probe_kernels.hpp): streaming reads, copies and fills, mma.sync and
// FMA loops, an empty kernel, a dependent pointer chase and a register-heavy latency loop.
#include "measure/cuda/probe_kernels.hpp"

#include <cuda_runtime.h>

#include "measure/cuda/cuda_util.hpp"

namespace attnprof::measure::probes {

namespace {

constexpr uint32_t kImpossibleXor = 0x9e3779b9u;  // the sink is written only if the data XOR to this
constexpr uint32_t kLcgMultiplier = 1664525u;     // = 1 mod 4 (Numerical Recipes' LCG)
constexpr uint32_t kLcgIncrement = 1013904223u;   // odd

__device__ uint32_t xor_of(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

__global__ void read_kernel(const uint4* __restrict__ src, size_t n, int passes, uint32_t* sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  uint32_t acc = 0;
  for (int p = 0; p < passes; ++p) {
    size_t i = first;
    for (; i + 3 * stride < n; i += 4 * stride) {
      // Four independent loads in flight before the first use; L2 only (.cg), so a buffer read again
      // by the same SM is an L2 read, never an L1 hit.
      const uint4 a = __ldcg(src + i), b = __ldcg(src + i + stride), c = __ldcg(src + i + 2 * stride),
                  d = __ldcg(src + i + 3 * stride);
      acc ^= xor_of(a) ^ xor_of(b) ^ xor_of(c) ^ xor_of(d);
    }
    for (; i < n; i += stride) acc ^= xor_of(__ldcg(src + i));
  }
  if (acc == kImpossibleXor) sink[0] = acc;
}

// The bulk-copy read: one thread per CTA streams chunks through a ring of kBulkStages shared-memory
// buffers with cp.async.bulk (the Hopper copy engine a TMA kernel's loads use), each completion on
// its stage's mbarrier; the data is never read from shared memory, so the only traffic is the loads.
// Chunk j of the pass-repeated sequence is chunk j % chunks of the buffer; CTAs take chunks
// round-robin.
__global__ void read_bulk_kernel(const char* __restrict__ src, size_t chunks, uint32_t chunk_bytes, int passes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) uint64_t full[kBulkStages];
  if (threadIdx.x != 0) return;
  const auto bar_addr = [&](int s) { return static_cast<uint32_t>(__cvta_generic_to_shared(&full[s])); };
  for (int s = 0; s < kBulkStages; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_addr(s)));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const size_t total = chunks * static_cast<size_t>(passes);
  size_t issued = 0;
  for (size_t j = blockIdx.x; j < total; j += gridDim.x, ++issued) {
    const int s = static_cast<int>(issued % kBulkStages);
    if (issued >= kBulkStages) {  // the stage's previous chunk must have landed before it is reused
      const uint32_t parity = static_cast<uint32_t>((issued / kBulkStages - 1) & 1);
      uint32_t done = 0;
      while (!done)
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done) : "r"(bar_addr(s)), "r"(parity) : "memory");
    }
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(ring + static_cast<size_t>(s) * chunk_bytes));
    const char* from = src + (j % chunks) * chunk_bytes;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_addr(s)), "r"(chunk_bytes) : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
        "l"(from), "r"(chunk_bytes), "r"(bar_addr(s))
        : "memory");
  }
  // Drain: every stage still in flight completes before the CTA exits.
  for (size_t k = issued > kBulkStages ? issued - kBulkStages : 0; k < issued; ++k) {
    const int s = static_cast<int>(k % kBulkStages);
    const uint32_t parity = static_cast<uint32_t>((k / kBulkStages) & 1);
    uint32_t done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(bar_addr(s)), "r"(parity) : "memory");
  }
#endif
}

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n, int passes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (int p = 0; p < passes; ++p)
    for (size_t i = first; i < n; i += stride) __stcg(dst + i, __ldcg(src + i));
}

__global__ void fill_kernel(uint4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    dst[i] = zero;
    dst[i + stride] = zero;
    dst[i + 2 * stride] = zero;
    dst[i + 3 * stride] = zero;
  }
  for (; i < n; i += stride) dst[i] = zero;
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

__global__ void empty_kernel() {}

__global__ void chase_init_kernel(uint32_t* next, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const auto mask = static_cast<uint32_t>(n - 1);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    next[i] = (kLcgMultiplier * static_cast<uint32_t>(i) + kLcgIncrement) & mask;
}

__global__ void chase_kernel(const uint32_t* next, uint32_t mask, int steps, uint32_t* out) {
  const uint32_t thread = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t j = (thread * 2654435761u) & mask;  // Knuth's multiplicative hash: starts spread over the cycle
  // Each load's address is the previous load's value: one load in flight per thread, its whole
  // latency exposed.
  for (int s = 0; s < steps; ++s) j = __ldcg(next + j);
  out[thread] = j;
}

__global__ void __launch_bounds__(kRegisterHeavyThreads, 1)
    register_heavy_kernel(const float* __restrict__ src, uint32_t mask, int iterations, float* out) {
  float live[kRegisterHeavyLive];
#pragma unroll
  for (int k = 0; k < kRegisterHeavyLive; ++k) live[k] = threadIdx.x * 1e-3f + k;
  // One hashed 128-byte line per warp and iteration, one word per lane: the loads are coalesced, so
  // the memory system moves what the probe reads and stays nearly idle. The address does not depend
  // on the loaded value, but every FMA does: each iteration waits for its load (an HBM latency, the
  // line is far from the last), which only other warps could hide, and registers leave room for no
  // other block.
  const uint32_t lane = threadIdx.x % 32;
  uint32_t h = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
#pragma unroll 1
  for (int it = 0; it < iterations; ++it) {
    h = h * kLcgMultiplier + kLcgIncrement;
    const float v = __ldcg(src + ((h & mask & ~31u) | lane));
#pragma unroll
    for (int k = 0; k < kRegisterHeavyLive; ++k) live[k] = fmaf(live[k], v, 1e-4f);
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < kRegisterHeavyLive; ++k) sum += live[k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

}  // namespace

void launch_read(const void* src, size_t bytes, int passes, uint32_t* sink, int blocks, int threads, cudaStream_t stream) {
  read_kernel<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(src), bytes / sizeof(uint4), passes, sink);
  check_cuda(cudaGetLastError(), "read probe launch");
}

size_t launch_read_bulk(const void* src, size_t bytes, int passes, uint32_t chunk_bytes, int blocks,
                        cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(kBulkStages) * chunk_bytes;
  check_cuda(cudaFuncSetAttribute(read_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
             "cudaFuncSetAttribute (bulk read probe)");
  const size_t chunks = bytes / chunk_bytes;
  read_bulk_kernel<<<blocks, 32, smem, stream>>>(static_cast<const char*>(src), chunks, chunk_bytes, passes);
  check_cuda(cudaGetLastError(), "bulk read probe launch");
  return chunks * chunk_bytes;
}

void launch_copy(const void* src, void* dst, size_t bytes, int passes, int blocks, int threads, cudaStream_t stream) {
  copy_kernel<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst),
                                              bytes / sizeof(uint4), passes);
  check_cuda(cudaGetLastError(), "copy probe launch");
}

void launch_fill(void* dst, size_t bytes, int blocks, int threads, cudaStream_t stream) {
  fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<uint4*>(dst), bytes / sizeof(uint4));
  check_cuda(cudaGetLastError(), "fill probe launch");
}

void launch_mma(bool bf16, float* out, int iterations, int blocks, int threads, cudaStream_t stream) {
  if (bf16)
    mma_kernel<true><<<blocks, threads, 0, stream>>>(out, iterations);
  else
    mma_kernel<false><<<blocks, threads, 0, stream>>>(out, iterations);
  check_cuda(cudaGetLastError(), "mma.sync probe launch");
}

void launch_fma(float* out, int iterations, int blocks, int threads, cudaStream_t stream) {
  fma_kernel<<<blocks, threads, 0, stream>>>(out, iterations);
  check_cuda(cudaGetLastError(), "FMA probe launch");
}

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  check_cuda(cudaGetLastError(), "empty probe launch");
}

void launch_chase_init(uint32_t* next, size_t n, cudaStream_t stream) {
  chase_init_kernel<<<1024, 256, 0, stream>>>(next, n);
  check_cuda(cudaGetLastError(), "pointer-chase set-up launch");
}

void launch_chase(const uint32_t* next, size_t n, int steps, uint32_t* out, int blocks, int threads,
                  cudaStream_t stream) {
  chase_kernel<<<blocks, threads, 0, stream>>>(next, static_cast<uint32_t>(n - 1), steps, out);
  check_cuda(cudaGetLastError(), "pointer-chase probe launch");
}

void launch_register_heavy(const float* src, size_t n, int iterations, float* out, int blocks, cudaStream_t stream) {
  register_heavy_kernel<<<blocks, kRegisterHeavyThreads, 0, stream>>>(src, static_cast<uint32_t>(n - 1), iterations, out);
  check_cuda(cudaGetLastError(), "register-heavy probe launch");
}

const void* function_of(Kernel k) {
  switch (k) {
    case Kernel::read: return reinterpret_cast<const void*>(&read_kernel);
    case Kernel::copy: return reinterpret_cast<const void*>(&copy_kernel);
    case Kernel::fill: return reinterpret_cast<const void*>(&fill_kernel);
    case Kernel::mma_bf16: return reinterpret_cast<const void*>(&mma_kernel<true>);
    case Kernel::mma_fp16: return reinterpret_cast<const void*>(&mma_kernel<false>);
    case Kernel::fma: return reinterpret_cast<const void*>(&fma_kernel);
    case Kernel::empty: return reinterpret_cast<const void*>(&empty_kernel);
    case Kernel::chase: return reinterpret_cast<const void*>(&chase_kernel);
    case Kernel::register_heavy: return reinterpret_cast<const void*>(&register_heavy_kernel);
  }
  return nullptr;
}

}  // namespace attnprof::measure::probes
