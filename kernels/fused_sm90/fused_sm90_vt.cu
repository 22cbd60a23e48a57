// fused-sm90's first launch for dtype fp8_e4m3: V^T in the key order the kernel's P fragments follow
// (fused_sm90_tiles.hpp, fp8 namespace). fp8 wgmma reads both operands K-major, and P V's K is the keys.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/tiles/fused_sm90_tiles.hpp"
#include "kernels/common/cuda_check.cuh"
#include "kernels/fused_sm90/fused_sm90_launch.hpp"

namespace attnprof::kernels::fused_sm90 {

namespace {

constexpr int kVtTile = 64;  // keys x head columns of one CTA's tile

// One CTA transposes 64 keys x 64 columns of one (batch, kv head) through shared memory: coalesced
// 4-byte reads of V's rows, coalesced 4-byte writes of V^T's rows. Keys past seq_k become zeros.
__global__ void __launch_bounds__(256) write_vt_kernel(const uint8_t* __restrict__ v, uint8_t* __restrict__ vt,
                                                       int seq_k, int vt_keys, int hdim) {
  __shared__ uint8_t tile[kVtTile][kVtTile + 4];
  const int64_t head = blockIdx.z;
  const int key0 = blockIdx.x * kVtTile, col0 = blockIdx.y * kVtTile;
  const uint8_t* v_head = v + head * static_cast<int64_t>(seq_k) * hdim;
  uint8_t* vt_head = vt + head * static_cast<int64_t>(hdim) * vt_keys;
  // Load: thread (r, c4) reads 4 bytes of V's row key0 + r (16 threads per 64-byte row piece).
  for (int i = threadIdx.x; i < kVtTile * kVtTile / 4; i += blockDim.x) {
    const int r = i / (kVtTile / 4), c = (i % (kVtTile / 4)) * 4;
    const int key = key0 + r;
    uint32_t word = 0;
    if (key < seq_k) word = *reinterpret_cast<const uint32_t*>(v_head + static_cast<int64_t>(key) * hdim + col0 + c);
#pragma unroll
    for (int b = 0; b < 4; ++b) tile[r][c + b] = static_cast<uint8_t>(word >> (8 * b));
  }
  __syncthreads();
  // Store: V^T row col0 + r, positions key0 + c .. + 3, each from its source key.
  for (int i = threadIdx.x; i < kVtTile * kVtTile / 4; i += blockDim.x) {
    const int r = i / (kVtTile / 4), c = (i % (kVtTile / 4)) * 4;
    uint32_t word = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int source = static_cast<int>(fp8::vt_source_key(c + b));  // inside the tile: 64 is a multiple of 16
      word |= static_cast<uint32_t>(tile[source][r]) << (8 * b);
    }
    *reinterpret_cast<uint32_t*>(vt_head + static_cast<int64_t>(col0 + r) * vt_keys + key0 + c) = word;
  }
}

}  // namespace

void write_vt(const void* v, void* vt, int64_t heads_total, int64_t seq_k, int hdim, cudaStream_t stream) {
  const auto keys = static_cast<int>(fp8::vt_keys(seq_k));
  const dim3 grid(static_cast<unsigned>(keys / kVtTile), static_cast<unsigned>(hdim / kVtTile),
                  static_cast<unsigned>(heads_total));
  write_vt_kernel<<<grid, 256, 0, stream>>>(static_cast<const uint8_t*>(v), static_cast<uint8_t*>(vt),
                                            static_cast<int>(seq_k), keys, hdim);
  ATTNPROF_CUDA_CHECK(cudaGetLastError());
}

const void* write_vt_func() { return reinterpret_cast<const void*>(&write_vt_kernel); }

}  // namespace attnprof::kernels::fused_sm90
