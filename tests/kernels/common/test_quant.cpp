// kernels/common/quant.hpp: fp8 E4M3 against the OCP FP8 definition (every code), round to nearest
// even and saturation when encoding, int8's rounding and clamp, and the scales of each granularity.
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/quant.hpp"

using attnprof::core::KvDType;
using attnprof::core::KvScale;
namespace k = attnprof::kernels;

namespace {

// OCP 8-bit floating point, E4M3: the value of code c read as an integer significand times a power of
// two, subnormals (exponent field 0) at 2^-6 * m / 8, S.1111.111 NaN, no infinity.
double ocp_e4m3(unsigned c) {
  const unsigned exponent = (c >> 3) & 0xF, mantissa = c & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return NAN;
  const double magnitude = exponent == 0 ? std::ldexp(double(mantissa), -9)
                                         : std::ldexp(double(8 + mantissa), int(exponent) - 10);
  return (c & 0x80) ? -magnitude : magnitude;
}

}  // namespace

TEST_CASE("decode_e4m3: all 256 codes are the OCP E4M3 values; the named ones by hand", "[quant]") {
  for (unsigned c = 0; c < 256; ++c) {
    INFO("code " << c);
    const double expected = ocp_e4m3(c);
    const float got = k::decode_e4m3(static_cast<uint8_t>(c));
    if (std::isnan(expected)) {
      CHECK(std::isnan(got));
    } else {
      CHECK(double(got) == expected);
      CHECK(std::signbit(got) == bool(c & 0x80));
    }
  }
  CHECK(k::decode_e4m3(0x7E) == 448.0f);  // the largest
  CHECK(k::decode_e4m3(0xFE) == -448.0f);
  CHECK(k::decode_e4m3(0x38) == 1.0f);
  CHECK(k::decode_e4m3(0x08) == 0x1p-6f);  // the smallest normal
  CHECK(k::decode_e4m3(0x01) == 0x1p-9f);  // the smallest subnormal
  CHECK(k::decode_e4m3(0x77) == 240.0f);
  CHECK(std::isnan(k::decode_e4m3(0x7F)));
  CHECK(std::isnan(k::decode_e4m3(0xFF)));
  // The positive codes 0x00 .. 0x7E are increasing: one number line, no gap or repeat.
  for (unsigned c = 1; c <= 0x7E; ++c) CHECK(k::decode_e4m3(uint8_t(c)) > k::decode_e4m3(uint8_t(c - 1)));
}

TEST_CASE("encode_e4m3: every finite code round-trips; ties to even; saturation at 448; NaN", "[quant]") {
  for (unsigned c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    INFO("code " << c);
    CHECK(k::encode_e4m3(k::decode_e4m3(uint8_t(c))) == c);
  }
  // Halfway between two neighbours: the even mantissa wins.
  CHECK(k::encode_e4m3(1.0625f) == 0x38);   // 1.0 (m 0) | 1.125 (m 1)
  CHECK(k::encode_e4m3(1.1875f) == 0x3A);   // 1.125 (m 1) | 1.25 (m 2)
  CHECK(k::encode_e4m3(1.9375f) == 0x40);   // 1.875 (m 7) | 2.0: the carry into the exponent
  CHECK(k::encode_e4m3(432.0f) == 0x7E);    // 416 (m 5) | 448 (m 6)
  CHECK(k::encode_e4m3(-1.0625f) == 0xB8);
  CHECK(k::encode_e4m3(0x1p-10f) == 0x00);  // 0 | 2^-9
  CHECK(k::encode_e4m3(3 * 0x1p-10f) == 0x02);  // 2^-9 | 2^-8
  CHECK(k::encode_e4m3(7.5f * 0x1p-9f) == 0x08);  // the last subnormal | the smallest normal
  // Off the ties: nearest.
  CHECK(k::encode_e4m3(1.07f) == 0x39);
  CHECK(k::encode_e4m3(1.05f) == 0x38);
  // Saturation (cuda_fp8.h's __NV_SATFINITE): 448 and beyond, infinity included.
  CHECK(k::encode_e4m3(448.0f) == 0x7E);
  CHECK(k::encode_e4m3(464.0f) == 0x7E);
  CHECK(k::encode_e4m3(1e6f) == 0x7E);
  CHECK(k::encode_e4m3(-1e6f) == 0xFE);
  CHECK(k::encode_e4m3(INFINITY) == 0x7E);
  CHECK(k::encode_e4m3(NAN) == 0x7F);
  CHECK(k::encode_e4m3(-0.0f) == 0x80);
}

TEST_CASE("encode_int8: round to nearest even, clamped to [-127, 127]", "[quant]") {
  CHECK(k::encode_int8(2.5f) == 2);
  CHECK(k::encode_int8(3.5f) == 4);
  CHECK(k::encode_int8(-2.5f) == -2);
  CHECK(k::encode_int8(2.6f) == 3);
  CHECK(k::encode_int8(127.4f) == 127);
  CHECK(k::encode_int8(200.0f) == 127);
  CHECK(k::encode_int8(-127.5f) == -127);  // -128 is never written: the code is symmetric
  CHECK(k::encode_int8(-1e9f) == -127);
  // The stored byte of a negative code, and back.
  CHECK(k::quantize(KvDType::int8, -0.5f, 0.5f) == 0xFF);
  CHECK(k::dequantize(KvDType::int8, 0xFF, 0.5f) == -0.5f);
  CHECK(k::dequantize(KvDType::int8, 0x81, 1.0f) == -127.0f);
  for (int c = -127; c <= 127; ++c)
    CHECK(k::dequantize(KvDType::int8, k::quantize(KvDType::int8, float(c) * 0.25f, 0.25f), 0.25f) == float(c) * 0.25f);
}

TEST_CASE("scales: static per tensor and head from the inputs' range, per token the row's largest magnitude",
          "[quant]") {
  CHECK(k::kInputAmax == 221.0f / 128.0f);
  CHECK(k::static_scale(KvDType::fp8_e4m3) == k::kInputAmax / 448.0f);
  CHECK(k::static_scale(KvDType::int8) == k::kInputAmax / 127.0f);
  for (KvScale g : {KvScale::tensor, KvScale::head}) CHECK(k::scale_of(KvDType::int8, g, 0.5f) == k::kInputAmax / 127.0f);
  CHECK(k::scale_of(KvDType::fp8_e4m3, KvScale::token, 0.5f) == 0.5f / 448.0f);
  CHECK(k::scale_of(KvDType::int8, KvScale::token, 0.5f) == 0.5f / 127.0f);

  // A row of zeros per token takes the static scale (no division by zero) and stays zeros.
  std::vector<float> zeros(16, 0.0f);
  CHECK(k::row_scale(KvDType::int8, KvScale::token, zeros.data(), 16) == k::static_scale(KvDType::int8));
  CHECK(k::row_scale(KvDType::fp8_e4m3, KvScale::token, zeros.data(), 16) == k::static_scale(KvDType::fp8_e4m3));
  k::quantize_row_in_place(KvDType::fp8_e4m3, KvScale::token, zeros.data(), 16);
  for (float x : zeros) CHECK(x == 0.0f);

  // Per token, the row's largest magnitude lands on the code's largest (448, 127) and comes back within
  // a rounding of the scale; the others within half a step of the code.
  std::vector<float> row = {0.25f, -0.75f, 0.1f, 0.0f, 0.5f, -0.3f};
  for (KvDType t : {KvDType::fp8_e4m3, KvDType::int8}) {
    INFO(attnprof::core::to_string(t));
    const float scale = k::row_scale(t, KvScale::token, row.data(), int64_t(row.size()));
    CHECK(scale == 0.75f / k::quant_max(t));
    CHECK(k::dequantize(t, k::quantize(t, -0.75f, scale), 1.0f) == -k::quant_max(t));
    std::vector<float> stored = row;
    k::quantize_row_in_place(t, KvScale::token, stored.data(), int64_t(stored.size()));
    CHECK(stored[1] == Approx(-0.75f).epsilon(1e-6));
    for (size_t d = 0; d < row.size(); ++d) {
      INFO("element " << d);
      // fp8: 3 mantissa bits, half a step within 2^-4 of the value (subnormals: half of 2^-9 scales);
      // int8: half a step of the scale.
      const double bound = t == KvDType::int8 ? 0.5 * scale : std::fabs(row[d]) / 16 + 0x1p-10 * scale;
      CHECK(std::fabs(stored[d] - row[d]) <= bound * (1 + 1e-6));
    }
  }
}
