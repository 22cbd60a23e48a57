// Counter-based random inputs: element `index` of tensor `tensor` (0 = Q, 1 = K, 2 = V) under `seed`
// is a pure function, computed identically on the host and on the device. The GPU fills its buffers
// with it, and the float64 reference recomputes only the rows it needs: no multi-GB copies.
// Values are k / 128 with k uniform in [-221, 221]: about unit variance, and exactly representable
// in fp32, fp16 and bf16 (8 significant bits), so every backend sees the same inputs bit for bit.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define ATTNPROF_HD __host__ __device__ __forceinline__
#else
#define ATTNPROF_HD inline
#endif

namespace attnprof::kernels {

inline constexpr int kInputHalfRange = 221;  // |k| <= 221 < 2^8: exact in bf16
inline constexpr float kInputStep = 1.0f / 128.0f;

ATTNPROF_HD uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// q_scale_log2 (0 to 8) multiplies Q's values by 2^q_scale_log2, which stays exact in every dtype: the
// scores spread that much wider, so a row's max keeps growing from key tile to key tile instead of
// settling in the first one (the GPU tests' check of the fused kernels' online-softmax rescaling).
ATTNPROF_HD float input_value(uint64_t seed, int tensor, uint64_t index, int q_scale_log2 = 0) {
  const uint64_t h = splitmix64(seed ^ splitmix64(index * 4 + static_cast<uint64_t>(tensor)));
  const int k = static_cast<int>((h >> 32) % (2 * kInputHalfRange + 1)) - kInputHalfRange;
  const float value = static_cast<float>(k) * kInputStep;
  return tensor == 0 ? value * static_cast<float>(1 << q_scale_log2) : value;
}

}  // namespace attnprof::kernels
