// Device helpers both fused kernels use to turn fp32 scores into MMA operands and probabilities.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/lazy_max.hpp"

namespace attnprof::kernels {

// Two floats rounded to the dtype and packed as one MMA operand register (lo in the low half).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// 2^x on the special-function unit; exp2(-inf) = +0, which is how masked scores vanish.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The lazy row max of kernels/common/lazy_max.hpp, for the kRows rows a lane holds; each row's scores
// are spread over the 4 lanes of a quad. lane_max[r] is this lane's max of row r's raw scores in the
// key tile. A max moves only when a score of the warp's rows would make some P exceed 2^kLazyMaxLog2;
// then every row takes its quad's true max and rescale[r] is the factor by which O and the sums
// accumulated under the old max shrink. Returns whether the warp moved any max (warp-uniform; when it
// did not, every rescale is exactly 1 and no shuffle ran).
template <int kRows>
__device__ __forceinline__ bool move_lazy_max(float (&row_max)[kRows], const float (&lane_max)[kRows],
                                              float scale_log2, float (&rescale)[kRows]) {
  bool exceeds = false;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    // -inf row max (no key seen yet) against a finite score: +inf, exceeds; -inf against -inf: NaN, not.
    exceeds |= (lane_max[r] - row_max[r]) * scale_log2 > kLazyMaxLog2;
    rescale[r] = 1.f;
  }
  if (!__any_sync(0xffffffffu, exceeds)) return false;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float m = fmaxf(row_max[r], lane_max[r]);
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    // exp2(-inf) = 0 when the row saw no key before this tile; 1 when the max did not move.
    if (m != row_max[r]) rescale[r] = fast_exp2((row_max[r] - m) * scale_log2);
    row_max[r] = m;
  }
  return true;
}

}  // namespace attnprof::kernels
