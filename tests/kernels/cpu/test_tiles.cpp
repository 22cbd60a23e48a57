// kernels/cpu/tiles.cpp: the vectorised building blocks against their scalar definitions: rounding to
// bf16/fp16 as kernels::round_to does it, exp within 2 ulps of std::exp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/cpu/tiles.hpp"
#include "kernels/kernels_test_support.hpp"

using namespace attnprof::kernels_test;


TEST_CASE("CPU tiles: vectorised rounding equals kernels::round_to", "[cpu-kernels]") {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 1.0f + 0x1p-8f, 1.0f + 0x1p-11f, 65504.0f, 65519.0f,
                               65520.0f, -70000.0f, 0x1p-14f, 0x1p-25f, 3 * 0x1p-25f, 1e-30f, 3.4e38f,
                               std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  uint64_t state = 5;
  for (int i = 0; i < 200000; ++i) {
    state = k::splitmix64(state);
    float x;
    const auto bits = static_cast<uint32_t>(state);
    std::memcpy(&x, &bits, sizeof(x));
    if (std::isfinite(x)) values.push_back(x);
    // Values in the range attention actually produces.
    values.push_back(static_cast<float>(static_cast<int64_t>(state >> 40) - (int64_t{1} << 23)) * 0x1p-20f);
  }
  for (DType t : {DType::bf16, DType::fp16, DType::fp32}) {
    std::vector<float> vec = values;
    attnprof::kernels::cpu::round_in_place(t, vec.data(), static_cast<int64_t>(vec.size()));
    int64_t mismatches = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const float want = k::round_to(t, values[i]);
      mismatches += std::memcmp(&want, &vec[i], sizeof(float)) != 0;
    }
    INFO(attnprof::core::to_string(t));
    CHECK(mismatches == 0);
  }
}

TEST_CASE("CPU tiles: vectorised exp is within 2 ulps of std::exp", "[cpu-kernels]") {
  std::vector<float> x;
  for (float v = -100.0f; v <= 0.0f; v += 0.000731f) x.push_back(v);
  x.push_back(0.0f);
  std::vector<float> e = x;
  const float sum = attnprof::kernels::cpu::exp_shifted_sum(e.data(), static_cast<int64_t>(e.size()), 0.0f);
  double want_sum = 0;
  double worst_rel = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(double(x[i]));
    want_sum += want;
    if (want < 0x1p-125) {
      CHECK(e[i] < 1e-37f);  // flushed or tiny
      continue;
    }
    worst_rel = std::max(worst_rel, std::fabs(e[i] - want) / want);
  }
  CHECK(worst_rel < 2.5e-7);  // 2 ulps of fp32 are 2.4e-7 relative at most
  CHECK(e.back() == 1.0f);
  CHECK(sum == Approx(want_sum).epsilon(1e-5));
}
