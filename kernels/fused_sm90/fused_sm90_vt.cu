// fused-sm90's first launch for dtype fp8_e4m3: V^T in the key order the kernel's P fragments follow
// (fused_sm90_tiles.hpp, fp8 namespace). fp8 wgmma reads both operands K-major, and P V's K is the keys.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/tiles/fused_sm90_tiles.hpp"
#include "kernels/common/cuda_check.cuh"
#include "kernels/fused_sm90/fused_sm90_launch.hpp"

namespace attnprof::kernels::fused_sm90 {

namespace {

// fp8::vt_column_word's permutes: PRMT on the device (its model, fp8::prmt, on the host).
struct BytePerm {
  __host__ __device__ uint32_t operator()(uint32_t x, uint32_t y, unsigned selector) const {
#ifdef __CUDA_ARCH__
    return __byte_perm(x, y, selector);
#else
    return fp8::prmt(x, y, selector);
#endif
  }
};

// The geometry is fp8's (fused_sm90_tiles.hpp): each thread loads 4 keys x 32 columns with 16-byte
// reads, permutes them into 32 column words of 4 keys in V^T's order, and stores those; keys past
// seq_k are zeros. No shared memory: every byte moves global -> registers -> global once.
__global__ void __launch_bounds__(fp8::kVtThreads) write_vt_kernel(const uint8_t* __restrict__ v,
                                                                   uint8_t* __restrict__ vt, int seq_k, int vt_keys,
                                                                   int hdim) {
  constexpr int kLoads = fp8::kVtColsPerThread / 16;  // 16-byte loads per key row
  const int64_t head = blockIdx.z;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int group = lane / 4, t = lane % 4;
  const int key_base = blockIdx.x * fp8::kVtKeysPerCta + group * 16;
  const int col0 = blockIdx.y * fp8::kVtColsPerCta + warp * fp8::kVtColsPerThread;
  const uint8_t* v_head = v + head * static_cast<int64_t>(seq_k) * hdim;
  uint8_t* vt_head = vt + head * static_cast<int64_t>(hdim) * vt_keys;
  uint4 rows[4][kLoads];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int key = key_base + static_cast<int>(fp8::vt_source_key(4 * t + i));
#pragma unroll
    for (int h = 0; h < kLoads; ++h)
      rows[i][h] = key < seq_k ? *reinterpret_cast<const uint4*>(v_head + static_cast<int64_t>(key) * hdim + col0 + 16 * h)
                               : make_uint4(0, 0, 0, 0);
  }
  uint8_t* out = vt_head + static_cast<int64_t>(col0) * vt_keys + key_base + 4 * t;
#pragma unroll
  for (int h = 0; h < kLoads; ++h)
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      auto word = [&](int i) {
        const uint4& r = rows[i][h];
        return q == 0 ? r.x : q == 1 ? r.y : q == 2 ? r.z : r.w;
      };
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int col = 16 * h + 4 * q + b;
        *reinterpret_cast<uint32_t*>(out + static_cast<int64_t>(col) * vt_keys) =
            fp8::vt_column_word(BytePerm{}, word(0), word(1), word(2), word(3), b);
      }
    }
}

}  // namespace

void write_vt(const void* v, void* vt, int64_t heads_total, int64_t seq_k, int hdim, cudaStream_t stream) {
  const auto keys = static_cast<int>(fp8::vt_keys(seq_k));
  const dim3 grid(static_cast<unsigned>(keys / fp8::kVtKeysPerCta), static_cast<unsigned>(hdim / fp8::kVtColsPerCta),
                  static_cast<unsigned>(heads_total));
  write_vt_kernel<<<grid, fp8::kVtThreads, 0, stream>>>(static_cast<const uint8_t*>(v), static_cast<uint8_t*>(vt),
                                                        static_cast<int>(seq_k), keys, hdim);
  ATTNPROF_CUDA_CHECK(cudaGetLastError());
}

const void* write_vt_func() { return reinterpret_cast<const void*>(&write_vt_kernel); }

}  // namespace attnprof::kernels::fused_sm90
