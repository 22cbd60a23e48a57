// The quantizer of a KV cache (core/shape.hpp's kv_dtype and kv_scale) and of fp8 prefill's Q (dtype
// fp8_e4m3), one definition for the device fill, the CPU backend and the float64 reference, so all
// three see the same bytes.
// fp8 E4M3 (OCP FP8): sign, 4 exponent bits (bias 7), 3 mantissa bits; largest 448, smallest normal
// 2^-6, subnormals in steps of 2^-9, no infinity, S.1111.111 is NaN. Encoding rounds to nearest even
// and saturates at 448, as cuda_fp8.h's __NV_SATFINITE conversion does. int8: round to nearest even,
// clamped to [-127, 127] (symmetric: -128 is never written).
// Scales: per tensor and per kv head, the inputs' full range over the code's largest magnitude
// (kernels/common/random.hpp draws every element from [-221/128, 221/128], so this is the scale a
// static calibration of these inputs finds, in every head); per token, the row's own largest
// magnitude over it (a dynamic scale written with the token); fp8 prefill's Q, one static scale
// (q_tensor_scale). A stored element x is then decode(encode(x / scale)) * scale.
#pragma once
#include <math.h>

#include <cmath>
#include <cstdint>

#include "core/shape.hpp"
#include "kernels/common/random.hpp"

namespace attnprof::kernels {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kInt8Max = 127.0f;
// The largest magnitude kernels/common/random.hpp draws (Q's unscaled).
inline constexpr float kInputAmax = static_cast<float>(kInputHalfRange) * kInputStep;

ATTNPROF_HD float quant_max(core::KvDType t) { return t == core::KvDType::int8 ? kInt8Max : kE4m3Max; }

ATTNPROF_HD uint8_t encode_e4m3(float x) {
  const uint8_t sign = signbit(x) ? 0x80 : 0x00;
  const float a = fabsf(x);
  if (a != a) return 0x7F;                 // NaN
  if (a >= kE4m3Max) return sign | 0x7E;  // saturate: S.1111.110 is 448
  if (a < 0x1p-6f) {
    // Subnormal steps of 2^-9; a code of 8 is 0x08, the smallest normal, as it should be.
    return sign | static_cast<uint8_t>(rintf(a * 0x1p9f));
  }
  int e = 0;
  const float m = frexpf(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exponent = e - 1;               // a = (1 + f) * 2^exponent, exponent in [-6, 8]
  int mantissa = static_cast<int>(rintf((m * 2.0f - 1.0f) * 8.0f));
  if (mantissa == 8) {
    mantissa = 0;
    ++exponent;
  }
  const int code = ((exponent + 7) << 3) | mantissa;
  return sign | static_cast<uint8_t>(code > 0x7E ? 0x7E : code);
}

ATTNPROF_HD float decode_e4m3(uint8_t c) {
  const int exponent = (c >> 3) & 0xF, mantissa = c & 0x7;
  const float sign = (c & 0x80) ? -1.0f : 1.0f;
  if (exponent == 0xF && mantissa == 0x7) return NAN;
  if (exponent == 0) return sign * static_cast<float>(mantissa) * 0x1p-9f;
  return sign * (1.0f + static_cast<float>(mantissa) * 0.125f) * ldexpf(1.0f, exponent - 7);
}

ATTNPROF_HD int8_t encode_int8(float x) {
  const float r = rintf(x);
  return static_cast<int8_t>(r > kInt8Max ? kInt8Max : (r < -kInt8Max ? -kInt8Max : r));
}

// The stored byte of x / scale, and the value a stored byte stands for.
ATTNPROF_HD uint8_t quantize(core::KvDType t, float x, float scale) {
  const float y = x / scale;
  return t == core::KvDType::int8 ? static_cast<uint8_t>(encode_int8(y)) : encode_e4m3(y);
}
ATTNPROF_HD float dequantize(core::KvDType t, uint8_t code, float scale) {
  const float y = t == core::KvDType::int8 ? static_cast<float>(static_cast<int8_t>(code)) : decode_e4m3(code);
  return y * scale;
}

// The scale of a row of `width` values (see above): the static one per tensor and per head, the row's
// largest magnitude over the code's per token (a row of zeros takes the static one).
ATTNPROF_HD float static_scale(core::KvDType t) { return kInputAmax / quant_max(t); }
// The scale of a row whose largest magnitude is amax.
ATTNPROF_HD float scale_of(core::KvDType t, core::KvScale g, float amax) {
  return g == core::KvScale::token && amax > 0 ? amax / quant_max(t) : static_scale(t);
}
ATTNPROF_HD float row_scale(core::KvDType t, core::KvScale g, const float* row, int64_t width) {
  float amax = 0;
  for (int64_t d = 0; d < width; ++d) amax = fmaxf(amax, fabsf(row[d]));
  return scale_of(t, g, amax);
}

// fp8 prefill's Q (core::Shape::quantized_q): one E4M3 scale for the tensor, its inputs' range over 448
// as K's and V's per-tensor scale; Q's values are 2^q_scale_log2 times larger under a test's wider
// scores (random.hpp), and so is the scale, which leaves every stored byte as it is.
ATTNPROF_HD float q_tensor_scale(int q_scale_log2 = 0) {
  return static_scale(core::KvDType::fp8_e4m3) * static_cast<float>(1 << q_scale_log2);
}
// One element of fp8 prefill's Q: the value its stored byte stands for.
ATTNPROF_HD float quantized_q_value(float x, float scale) {
  return dequantize(core::KvDType::fp8_e4m3, quantize(core::KvDType::fp8_e4m3, x, scale), scale);
}

// Row `width` values in place: each replaced by the value its stored byte stands for.
ATTNPROF_HD void quantize_row_in_place(core::KvDType t, core::KvScale g, float* row, int64_t width) {
  const float scale = row_scale(t, g, row, width);
  for (int64_t d = 0; d < width; ++d) row[d] = dequantize(t, quantize(t, row[d], scale), scale);
}

}  // namespace attnprof::kernels
