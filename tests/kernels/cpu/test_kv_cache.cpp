// kernels/cpu/kv_cache.cpp: K and V written as a shape stores them (contiguous or paged, fp32 or
// quantized at each granularity) read back contiguous hold exactly what the float64 reference uses
// (kernels/common/quant.hpp's quantize_row_in_place of the canonical rows); a page pool's pad stays
// poisoned; scales sit where core/shape.hpp says; missing tables and scales are refused; fp8 prefill's
// Q (fill_q, read_q_contiguous) likewise, in either layout.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/quant.hpp"
#include "kernels/kernels_test_support.hpp"

using namespace attnprof::kernels_test;
using attnprof::core::KvDType;
using attnprof::core::KvScale;
using k::cpu::KvTensor;

namespace {

// Row r of K or V (canonical order) as the float64 reference sees it: the inputs, quantized and
// dequantized when the shape says so.
std::vector<float> expected_row(const Shape& s, uint64_t seed, KvTensor which, int64_t r) {
  const int64_t width = which == KvTensor::k ? s.hdim : s.value_hdim();
  std::vector<float> row(static_cast<size_t>(width));
  for (int64_t d = 0; d < width; ++d) row[d] = k::input_value(seed, int(which), uint64_t(r * width + d));
  if (s.quantized_kv()) k::quantize_row_in_place(s.kv_dtype, s.kv_scale, row.data(), width);
  return row;
}

}  // namespace

TEST_CASE("fill_kv then read_kv_contiguous: the float64 reference's values, bit for bit", "[cpu-kernels][kv-cache]") {
  const k::Kernel& kernel = *k::find(k::Backend::cpu, "reference");
  std::vector<Shape> shapes;
  for (int64_t page : {0, 16, 7})
    for (KvDType t : {KvDType::none, KvDType::fp8_e4m3, KvDType::int8})
      for (KvScale g : {KvScale::tensor, KvScale::head, KvScale::token}) {
        if (t == KvDType::none && g != KvScale::tensor) continue;
        shapes.push_back(with_kv_cache(Shape{2, 4, 2, 3, 37, 16, true, DType::bf16}, t, g, page));
      }
  shapes.push_back(with_kv_cache(with_hdim_v(Shape{1, 2, 1, 1, 20, 32, false, DType::fp16}, 16), KvDType::int8, KvScale::token, 8));
  Shape varlen = packed({5, 1, 12}, 2, 1, 16, true, DType::bf16);
  shapes.push_back(with_kv_cache(varlen, KvDType::fp8_e4m3, KvScale::token, 0));
  shapes.push_back(with_kv_cache(varlen, KvDType::int8, KvScale::head, 0));
  uint64_t seed = 500;
  for (const Shape& s : shapes) {
    INFO(s.label());
    HostProblem p(s, kernel, ++seed);
    for (KvTensor which : {KvTensor::k, KvTensor::v}) {
      const int64_t width = which == KvTensor::k ? s.hdim : s.value_hdim();
      std::vector<float> out(size_t(which == KvTensor::k ? s.kv_elems() : s.v_elems()), -1.0f);
      k::cpu::read_kv_contiguous(p.args, which, out.data());
      int64_t mismatches = 0;
      for (int64_t r = 0; r < s.kv_heads * s.tokens_k(); ++r) {
        const std::vector<float> want = expected_row(s, seed, which, r);
        for (int64_t d = 0; d < width; ++d) mismatches += out[size_t(r * width + d)] != want[d];
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("fill_kv: scales where core/shape.hpp puts them; a page pool's pad poisoned", "[cpu-kernels][kv-cache]") {
  const k::Kernel& kernel = *k::find(k::Backend::cpu, "reference");
  const uint64_t seed = 9;
  // 37 keys in pages of 16: each sequence's third page holds 5 keys and 11 pad slots.
  const Shape base{2, 4, 2, 3, 37, 16, false, DType::bf16};
  const int64_t pad_rows = base.batch * base.kv_heads * (3 * 16 - 37);

  SECTION("per tensor and per head: the static scale, one or kv_heads of them") {
    for (KvScale g : {KvScale::tensor, KvScale::head}) {
      const Shape s = with_kv_cache(base, KvDType::fp8_e4m3, g, 0);
      HostProblem p(s, kernel, seed);
      CHECK(p.k_scale.size() == (g == KvScale::tensor ? 1u : 2u));
      for (float x : p.k_scale) CHECK(x == k::static_scale(KvDType::fp8_e4m3));
      for (float x : p.v_scale) CHECK(x == k::static_scale(KvDType::fp8_e4m3));
    }
  }
  SECTION("per token, contiguous: row r's scale at r, its largest magnitude over 127") {
    const Shape s = with_kv_cache(base, KvDType::int8, KvScale::token, 0);
    HostProblem p(s, kernel, seed);
    REQUIRE(p.k_scale.size() == size_t(2 * 2 * 37));
    for (int64_t r = 0; r < 2 * 2 * 37; ++r) {
      float amax = 0;
      for (int64_t d = 0; d < 16; ++d) amax = std::max(amax, std::fabs(k::input_value(seed, 1, uint64_t(r * 16 + d))));
      CHECK(p.k_scale[size_t(r)] == amax / 127.0f);
    }
  }
  SECTION("paged fp32: NaN in every pad slot, nowhere else") {
    const Shape s = with_kv_cache(base, KvDType::none, KvScale::tensor, 16);
    HostProblem p(s, kernel, seed);
    REQUIRE(p.k.size() == size_t(s.kv_buffer_elems()));
    int64_t nan_k = 0, nan_v = 0;
    for (float x : p.k) nan_k += std::isnan(x);
    for (float x : p.v) nan_v += std::isnan(x);
    CHECK(nan_k == pad_rows * s.hdim);
    CHECK(nan_v == pad_rows * s.value_hdim());
  }
  SECTION("paged, quantized per token: 0xFF in the pad, a NaN scale beside each pad row") {
    const Shape s = with_kv_cache(base, KvDType::fp8_e4m3, KvScale::token, 16);
    HostProblem p(s, kernel, seed);
    REQUIRE(p.k_scale.size() == size_t(s.kv_buffer_elems() / s.hdim));
    int64_t nan_scales = 0, nan_codes = 0;
    for (float x : p.k_scale) nan_scales += std::isnan(x);
    for (uint8_t c : p.k_bytes) nan_codes += std::isnan(k::decode_e4m3(c));
    CHECK(nan_scales == pad_rows);
    CHECK(nan_codes == pad_rows * s.hdim);  // the inputs' codes are finite: only the pad decodes to NaN
    // The pages are shuffled: the table is a permutation of the pool, not the identity.
    std::vector<int32_t> sorted = p.block_table;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) CHECK(sorted[i] == int32_t(i));
    CHECK(sorted != p.block_table);
  }
}

TEST_CASE("fill_kv in the BSHD layout reads back through the same map", "[cpu-kernels][kv-cache]") {
  const Shape s = with_kv_cache(Shape{2, 4, 2, 3, 11, 16, false, DType::bf16}, KvDType::int8, KvScale::token, 0);
  std::vector<uint8_t> bytes(size_t(s.kv_elems()));
  std::vector<float> scales(size_t(s.kv_scale_elems()));
  k::cpu::fill_kv(s, 3, KvTensor::k, k::kv_tensor_map(s, true), nullptr, bytes.data(), scales.data());
  k::AttentionArgs a;
  a.shape = s;
  a.layout = k::Layout::bshd;
  a.k = bytes.data();
  a.k_scale = scales.data();
  std::vector<float> out(size_t(s.kv_elems()));
  k::cpu::read_kv_contiguous(a, KvTensor::k, out.data());
  for (int64_t r = 0; r < s.kv_heads * s.tokens_k(); ++r) {
    const std::vector<float> want = expected_row(s, 3, KvTensor::k, r);
    for (int64_t d = 0; d < s.hdim; ++d) CHECK(out[size_t(r * s.hdim + d)] == want[d]);
  }
}

TEST_CASE("fill_kv and read_kv_contiguous refuse a paged shape without a table, a quantized one without scales",
          "[cpu-kernels][kv-cache]") {
  const Shape paged = with_kv_cache(Shape{1, 1, 1, 1, 20, 16, false, DType::bf16}, KvDType::none, KvScale::tensor, 8);
  std::vector<float> pool(size_t(paged.kv_buffer_elems()));
  CHECK_THROWS_AS(k::cpu::fill_kv(paged, 1, KvTensor::k, k::kv_tensor_map(paged, false), nullptr, pool.data(), nullptr),
                  std::runtime_error);
  const Shape quantized = with_kv_cache(Shape{1, 1, 1, 1, 20, 16, false, DType::bf16}, KvDType::int8, KvScale::head, 0);
  std::vector<uint8_t> bytes(size_t(quantized.kv_elems()));
  CHECK_THROWS_AS(
      k::cpu::fill_kv(quantized, 1, KvTensor::k, k::kv_tensor_map(quantized, false), nullptr, bytes.data(), nullptr),
      std::runtime_error);
  std::vector<float> out(size_t(quantized.kv_elems()));
  k::AttentionArgs a;
  a.shape = quantized;
  a.k = bytes.data();
  CHECK_THROWS_WITH(k::cpu::read_kv_contiguous(a, KvTensor::k, out.data()), Catch::Contains("without scales"));
  a.shape = paged;
  a.k = pool.data();
  CHECK_THROWS_WITH(k::cpu::read_kv_contiguous(a, KvTensor::k, out.data()), Catch::Contains("without a block table"));
}

TEST_CASE("fill_q then read_q_contiguous: fp8 prefill's Q as the float64 reference sees it, in either layout",
          "[cpu-kernels][kv-cache][fp8]") {
  for (const Shape& s : {fp8_prefill(Shape{2, 4, 2, 9, 9, 32, true, DType::bf16}),
                         fp8_prefill(packed({5, 1, 12}, 4, 2, 16, true, DType::bf16))})
    for (bool bshd : {false, true}) {
      INFO(s.label() << (bshd ? " bshd" : " bhsd"));
      const uint64_t seed = 321;
      std::vector<uint8_t> bytes(size_t(s.q_elems()));
      float scale = 0;
      k::cpu::fill_q(s, seed, k::q_tensor_map(s, bshd), bytes.data(), &scale);
      CHECK(scale == k::q_tensor_scale());
      k::AttentionArgs a;
      a.shape = s;
      a.q = bytes.data();
      a.q_scale = &scale;
      a.layout = bshd ? k::Layout::bshd : k::Layout::bhsd;
      std::vector<float> out(size_t(s.q_elems()), -1.0f);
      k::cpu::read_q_contiguous(a, out.data());
      int64_t mismatches = 0, changed = 0;
      for (int64_t e = 0; e < s.q_elems(); ++e) {
        const float x = k::input_value(seed, 0, uint64_t(e));
        const float want = k::quantized_q_value(x, scale);
        mismatches += out[size_t(e)] != want;
        changed += want != x;  // E4M3 keeps 4 significant bits of the inputs' 8
      }
      CHECK(mismatches == 0);
      CHECK(changed > 0);
      a.q_scale = nullptr;
      CHECK_THROWS_AS(k::cpu::read_q_contiguous(a, out.data()), std::runtime_error);
    }
  const Shape bf16{1, 2, 2, 4, 4, 16, false, DType::bf16};
  std::vector<uint8_t> bytes(size_t(bf16.q_elems()));
  float scale = 0;
  CHECK_THROWS_AS(k::cpu::fill_q(bf16, 1, k::q_tensor_map(bf16, false), bytes.data(), &scale), std::runtime_error);
}
