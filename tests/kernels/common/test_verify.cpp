// Verification (kernels/common/verify.cpp): the float64 row against an independent brute force over
// whole tensors, masking and GQA, rounding, row sampling, the pass/fail rule, and fp8 prefill's
// per-element bound both ways.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/quant.hpp"
#include "kernels/common/random.hpp"
#include "kernels/common/verify.hpp"
#include "kernels/kernels_test_support.hpp"

using attnprof::core::DType;
using attnprof::core::Shape;
namespace k = attnprof::kernels;

namespace {

// Whole-tensor attention written independently of verify.cpp: explicit 4-d indexing, mask from the
// definition (key j visible iff j <= i + seq_k - seq_q), softmax by sum of exp without max shift; a
// quantized KV cache's K and V rows (and fp8 prefill's Q) each replaced by the values their stored bytes
// stand for.
struct BruteForce {
  std::vector<double> o, lse;
};
BruteForce brute_force(const Shape& s, uint64_t seed) {
  auto q_at = [&](int64_t b, int64_t h, int64_t i, int64_t d) {
    const float x = k::input_value(seed, 0, uint64_t(((b * s.heads + h) * s.seq_q + i) * s.hdim + d));
    return double(s.quantized_q() ? k::quantized_q_value(x, k::q_tensor_scale()) : x);  // fp8 prefill's Q
  };
  // K rows are hdim wide, V rows value_hdim() wide (as O's).
  const int64_t dv = s.value_hdim();
  std::vector<float> kv[3];
  for (int t : {1, 2}) {
    const int64_t width = t == 2 ? dv : s.hdim;
    kv[t].resize(size_t(s.batch * s.kv_heads * s.seq_k * width));
    for (size_t e = 0; e < kv[t].size(); ++e) kv[t][e] = k::input_value(seed, t, e);
    if (s.quantized_kv())
      for (size_t r = 0; r < kv[t].size() / size_t(width); ++r)
        k::quantize_row_in_place(s.kv_dtype, s.kv_scale, kv[t].data() + r * size_t(width), width);
  }
  auto kv_at = [&](int t, int64_t b, int64_t h, int64_t j, int64_t d) {
    const int64_t width = t == 2 ? dv : s.hdim;
    return double(kv[t][size_t(((b * s.kv_heads + h) * s.seq_k + j) * width + d)]);
  };
  BruteForce out;
  out.o.assign(size_t(s.o_elems()), 0.0);
  out.lse.assign(size_t(s.lse_elems()), 0.0);
  const int64_t group = s.heads / s.kv_heads;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.seq_q; ++i) {
        const int64_t row = (b * s.heads + h) * s.seq_q + i;
        double denom = 0;
        std::vector<double> num(size_t(dv), 0.0);
        for (int64_t j = 0; j < s.seq_k; ++j) {
          if (s.causal && j > i + s.seq_k - s.seq_q) continue;
          double dot = 0;
          for (int64_t d = 0; d < s.hdim; ++d) dot += q_at(b, h, i, d) * kv_at(1, b, h / group, j, d);
          const double e = std::exp(dot / std::sqrt(double(s.hdim)));
          denom += e;
          for (int64_t d = 0; d < dv; ++d) num[d] += e * kv_at(2, b, h / group, j, d);
        }
        out.lse[row] = denom > 0 ? std::log(denom) : -std::numeric_limits<double>::infinity();
        for (int64_t d = 0; d < dv; ++d) out.o[row * dv + d] = denom > 0 ? num[d] / denom : 0;
      }
  return out;
}

// O and LSE rows as a kernel would hand them over, taken from the float64 reference.
void reference_outputs(const Shape& s, uint64_t seed, const std::vector<int64_t>& rows,
                       std::vector<float>& o, std::vector<float>& lse) {
  o.clear();
  lse.clear();
  for (int64_t r : rows) {
    const auto ref = k::reference_row(s, seed, r);
    for (double x : ref.o) o.push_back(k::round_to(s.dtype, float(x)));
    lse.push_back(float(ref.lse));
  }
}

}  // namespace

TEST_CASE("reference_row matches an independent brute force", "[verify]") {
  const std::vector<Shape> shapes = {
      Shape{1, 1, 1, 5, 5, 8, false, DType::bf16},
      Shape{2, 4, 2, 7, 7, 16, true, DType::fp16},    // GQA, causal square
      Shape{1, 3, 1, 4, 9, 8, true, DType::fp32},     // MQA, causal seq_k > seq_q
      Shape{2, 2, 2, 9, 4, 8, true, DType::bf16},     // causal seq_k < seq_q: masked rows
      Shape{1, 2, 1, 3, 11, 32, false, DType::bf16},  // seq_k != seq_q, not causal
  };
  const uint64_t seed = 1234;
  for (const Shape& s : shapes) {
    INFO(s.label());
    const BruteForce bf = brute_force(s, seed);
    for (int64_t row = 0; row < s.lse_elems(); ++row) {
      const auto ref = k::reference_row(s, seed, row);
      REQUIRE(ref.o.size() == size_t(s.hdim));
      if (std::isinf(bf.lse[row])) {
        CHECK(std::isinf(ref.lse));
        CHECK(ref.lse < 0);
      } else {
        CHECK(ref.lse == Approx(bf.lse[row]).epsilon(1e-12));
      }
      for (int64_t d = 0; d < s.hdim; ++d) CHECK(ref.o[d] == Approx(bf.o[row * s.hdim + d]).margin(1e-12));
    }
  }
}

TEST_CASE("bottom-right causal mask: fully masked rows give O = 0 and LSE = -inf", "[verify]") {
  const Shape s{1, 1, 1, 6, 3, 8, true, DType::bf16};
  // Rows 0..2 see no key (j <= i - 3), row 3 sees key 0 only: O equals V row 0.
  for (int64_t i = 0; i < 3; ++i) {
    const auto ref = k::reference_row(s, 7, i);
    CHECK(std::isinf(ref.lse));
    for (double x : ref.o) CHECK(x == 0.0);
  }
  const auto ref3 = k::reference_row(s, 7, 3);
  for (int64_t d = 0; d < s.hdim; ++d) CHECK(ref3.o[d] == double(k::input_value(7, 2, uint64_t(d))));
}

TEST_CASE("naive low-precision row is close to float64 but not equal in bf16", "[verify]") {
  const Shape s{1, 1, 1, 4, 64, 32, false, DType::bf16};
  double max_err = 0;
  for (int64_t r = 0; r < 4; ++r) {
    const auto ref = k::reference_row(s, 3, r);
    const auto naive = k::naive_lowp_row(s, 3, r);
    for (int64_t d = 0; d < s.hdim; ++d) max_err = std::max(max_err, std::fabs(naive[d] - ref.o[d]));
  }
  CHECK(max_err > 0);
  CHECK(max_err < 0x1p-6);
  Shape f = s;
  f.dtype = DType::fp32;
  const auto ref = k::reference_row(f, 3, 1);
  const auto naive = k::naive_lowp_row(f, 3, 1);
  for (int64_t d = 0; d < f.hdim; ++d) CHECK(std::fabs(naive[d] - ref.o[d]) < 1e-5);
}

TEST_CASE("round_to: round to nearest even in bf16 and fp16", "[verify]") {
  // bf16: 8 significant bits. 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  CHECK(k::round_to(DType::bf16, 1.0f + 0x1p-8f) == 1.0f);
  CHECK(k::round_to(DType::bf16, 1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);  // tie, odd -> up to even
  CHECK(k::round_to(DType::bf16, 1.0f + 0x1p-8f + 0x1p-12f) == 1.0f + 0x1p-7f);
  CHECK(k::round_to(DType::bf16, -3.14159265f) == -3.140625f);
  CHECK(k::round_to(DType::bf16, 0.0f) == 0.0f);
  CHECK(std::isinf(k::round_to(DType::bf16, 3.4e38f)));
  // fp16: 11 significant bits.
  CHECK(k::round_to(DType::fp16, 1.0f + 0x1p-11f) == 1.0f);                 // tie -> even
  CHECK(k::round_to(DType::fp16, 1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);   // tie -> even (up)
  CHECK(k::round_to(DType::fp16, 3.14159265f) == 3.140625f);
  CHECK(k::round_to(DType::fp16, 65504.0f) == 65504.0f);
  CHECK(k::round_to(DType::fp16, 65519.0f) == 65504.0f);
  CHECK(std::isinf(k::round_to(DType::fp16, 65520.0f)));
  CHECK(k::round_to(DType::fp16, 0x1p-14f) == 0x1p-14f);                    // smallest normal
  CHECK(k::round_to(DType::fp16, 0x1p-24f) == 0x1p-24f);                    // smallest subnormal
  CHECK(k::round_to(DType::fp16, 0x1p-25f) == 0.0f);                        // tie -> even (0)
  CHECK(k::round_to(DType::fp16, 3 * 0x1p-25f) == 0x1p-23f);                // tie -> even (2^-23)
  CHECK(k::round_to(DType::fp16, 5 * 0x1p-24f + 0x1p-27f) == 5 * 0x1p-24f);
  CHECK(k::round_to(DType::fp32, 1.0f + 0x1p-20f) == 1.0f + 0x1p-20f);
  CHECK(std::isnan(k::round_to(DType::bf16, std::numeric_limits<float>::quiet_NaN())));
  // Inputs (k / 128, |k| <= 221) are exact in every dtype.
  for (int kk = -221; kk <= 221; ++kk) {
    const float x = float(kk) / 128.0f;
    CHECK(k::round_to(DType::bf16, x) == x);
    CHECK(k::round_to(DType::fp16, x) == x);
  }
}

TEST_CASE("rows_to_check: all rows when few, seeded sample with the corners when many", "[verify]") {
  const Shape small{2, 3, 3, 5, 5, 8, false, DType::bf16};
  const auto all = k::rows_to_check(small, 256, 1);
  REQUIRE(all.size() == 30);
  for (int64_t r = 0; r < 30; ++r) CHECK(all[r] == r);

  const Shape big{4, 16, 4, 1000, 1000, 64, true, DType::bf16};
  const auto rows = k::rows_to_check(big, 256, 99);
  CHECK(rows.size() >= 256);
  CHECK(rows.size() <= 260);
  const std::set<int64_t> set(rows.begin(), rows.end());
  CHECK(set.size() == rows.size());
  const int64_t last_head = big.batch * big.heads - 1;
  CHECK(set.count(0));
  CHECK(set.count(big.seq_q - 1));
  CHECK(set.count(last_head * big.seq_q));
  CHECK(set.count(last_head * big.seq_q + big.seq_q - 1));
  for (int64_t r : rows) CHECK((r >= 0 && r < big.lse_elems()));
  CHECK(rows == k::rows_to_check(big, 256, 99));
  CHECK(rows != k::rows_to_check(big, 256, 100));

  // seq_q = 1: the quota needs many heads.
  const Shape tall{64, 16, 16, 1, 300, 64, false, DType::bf16};
  CHECK(k::rows_to_check(tall, 256, 5).size() == 256);
  // ... unless each head's K and V are too long to regenerate for hundreds of heads: fewer rows, over
  // at least 8 heads, corners included.
  const Shape decode{8, 128, 1, 1, 1 << 20, 128, false, DType::bf16};
  const auto few = k::rows_to_check(decode, 256, 5);
  CHECK(few.size() >= 8);
  CHECK(few.size() < 256);
  CHECK(few.front() == 0);
  CHECK(few.back() == decode.lse_elems() - 1);
}

TEST_CASE("verify_rows: correct outputs pass, wrong or unwritten ones fail", "[verify]") {
  for (DType t : {DType::bf16, DType::fp16, DType::fp32}) {
    const Shape s{2, 4, 2, 33, 40, 16, true, t};
    INFO(s.label());
    const uint64_t seed = 42;
    const auto rows = k::rows_to_check(s, 64, seed);
    std::vector<float> o, lse;
    reference_outputs(s, seed, rows, o, lse);

    const auto good = k::verify_rows(s, seed, rows, o, lse, 0);
    CHECK(good.checked);
    CHECK(good.passed);
    CHECK(good.seed == seed);
    CHECK(good.rows_checked == int64_t(rows.size()));
    CHECK(good.rows_total == s.batch * s.heads * s.seq_q);
    CHECK(good.o_max_abs_err <= good.tolerance);
    CHECK(good.lse_max_abs_err < 1e-5);
    if (t != DType::fp32) CHECK(good.naive_o_max_abs_err > 0);

    // The naive computation itself passes (it is the baseline).
    std::vector<float> naive_o;
    for (int64_t r : rows)
      for (double x : k::naive_lowp_row(s, seed, r)) naive_o.push_back(float(x));
    CHECK(k::verify_rows(s, seed, rows, naive_o, lse, 0).passed);

    auto wrong = o;
    wrong[5] += 0.05f;  // one element off by far more than any rounding
    const auto bad = k::verify_rows(s, seed, rows, wrong, lse, 0);
    CHECK_FALSE(bad.passed);
    CHECK(bad.o_max_abs_err > 0.04);

    auto nan_o = o;
    nan_o[3] = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(k::verify_rows(s, seed, rows, nan_o, lse, 0).passed);

    auto bad_lse = lse;
    bad_lse[1] += 0.1f;
    CHECK_FALSE(k::verify_rows(s, seed, rows, o, bad_lse, 0).passed);
    auto nan_lse = lse;
    nan_lse[0] = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(k::verify_rows(s, seed, rows, o, nan_lse, 0).passed);

    const auto unwritten = k::verify_rows(s, seed, rows, o, lse, 3);
    CHECK_FALSE(unwritten.passed);
    CHECK(unwritten.unwritten == 3);
  }
}

TEST_CASE("quantized KV cache: reference_row is the brute force of the dequantized inputs; the quantization's cost "
          "is reported, and the unquantized attention as a kernel's output fails", "[verify][quant]") {
  using attnprof::core::KvDType;
  using attnprof::core::KvScale;
  struct Case {
    KvDType t;
    KvScale g;
    DType dtype;
  };
  // A short seq_k: O is close to a few V rows, so the quantization of each shows in it.
  for (const Case c : {Case{KvDType::fp8_e4m3, KvScale::tensor, DType::bf16}, Case{KvDType::fp8_e4m3, KvScale::token, DType::bf16},
                       Case{KvDType::int8, KvScale::head, DType::fp16}, Case{KvDType::int8, KvScale::token, DType::fp16}}) {
    Shape s{2, 4, 2, 3, 5, 32, true, c.dtype};
    s.kv_dtype = c.t;
    s.kv_scale = c.g;
    s.validate();
    Shape plain = s;
    plain.kv_dtype = KvDType::none;
    plain.kv_scale = KvScale::tensor;
    INFO(s.label());
    const uint64_t seed = 61;
    const BruteForce bf = brute_force(s, seed), bf_plain = brute_force(plain, seed);
    double quant_max = 0;
    for (int64_t r = 0; r < s.lse_elems(); ++r) {
      const auto ref = k::reference_row(s, seed, r);
      CHECK(ref.lse == Approx(bf.lse[size_t(r)]).margin(1e-12));
      for (int64_t d = 0; d < s.hdim; ++d) {
        CHECK(ref.o[d] == Approx(bf.o[size_t(r * s.hdim + d)]).margin(1e-12));
        quant_max = std::max(quant_max, std::fabs(bf.o[size_t(r * s.hdim + d)] - bf_plain.o[size_t(r * s.hdim + d)]));
      }
    }

    const auto rows = k::rows_to_check(s, 400, seed);
    REQUIRE(rows.size() == size_t(s.lse_elems()));  // every row: quant_max above is over the same rows
    std::vector<float> o, lse;
    reference_outputs(s, seed, rows, o, lse);
    const auto good = k::verify_rows(s, seed, rows, o, lse, 0);
    CHECK(good.passed);
    REQUIRE(good.quant.checked);
    CHECK(good.quant.o_max_abs_err == Approx(quant_max).margin(1e-12));
    CHECK(good.quant.o_mean_abs_err > 0);
    CHECK(good.quant.o_mean_abs_err < good.quant.o_max_abs_err);
    CHECK(good.quant.o_max_rel_err > 0);

    // A kernel that ignored the quantization (the attention of the unquantized inputs, rounded to the
    // dtype) is off by what the quantization costs, beyond the tolerance.
    std::vector<float> plain_o, plain_lse;
    reference_outputs(plain, seed, rows, plain_o, plain_lse);
    const auto wrong = k::verify_rows(s, seed, rows, plain_o, lse, 0);
    INFO("err " << wrong.o_max_abs_err << " tolerance " << wrong.tolerance << " quant " << wrong.quant.o_max_abs_err);
    CHECK_FALSE(wrong.passed);
    CHECK(wrong.o_max_abs_err > wrong.tolerance);
    CHECK(wrong.o_max_abs_err == Approx(wrong.quant.o_max_abs_err).margin(0x1p-8));

    // An unquantized shape has no quantization to report.
    CHECK_FALSE(k::verify_rows(plain, seed, rows, plain_o, plain_lse, 0).quant.checked);
  }
}

TEST_CASE("verify_rows: a masked row must report LSE -inf and O 0", "[verify]") {
  const Shape s{1, 1, 1, 4, 2, 8, true, DType::bf16};  // rows 0 and 1 see no key
  const std::vector<int64_t> rows = {0, 1, 2, 3};
  std::vector<float> o, lse;
  reference_outputs(s, 5, rows, o, lse);
  CHECK(std::isinf(lse[0]));
  CHECK(k::verify_rows(s, 5, rows, o, lse, 0).passed);
  auto finite_lse = lse;
  finite_lse[0] = 0.0f;
  CHECK_FALSE(k::verify_rows(s, 5, rows, o, finite_lse, 0).passed);
  auto nonzero_o = o;
  nonzero_o[1] = 0.5f;  // row 0, element 1
  CHECK_FALSE(k::verify_rows(s, 5, rows, nonzero_o, lse, 0).passed);
}

TEST_CASE("hdim_v: reference_row matches the brute force; verify_rows checks every O column", "[verify][hdim_v]") {
  for (const int64_t dv : {int64_t{16}, int64_t{48}}) {
    Shape s{2, 4, 2, 9, 13, 32, true, DType::bf16};
    s.hdim_v = dv;
    INFO(s.label());
    const uint64_t seed = 77;
    const BruteForce bf = brute_force(s, seed);
    for (int64_t row = 0; row < s.lse_elems(); ++row) {
      const auto ref = k::reference_row(s, seed, row);
      REQUIRE(static_cast<int64_t>(ref.o.size()) == dv);
      for (int64_t d = 0; d < dv; ++d) CHECK(ref.o[d] == Approx(bf.o[row * dv + d]).margin(1e-12));
      if (std::isfinite(bf.lse[row])) CHECK(ref.lse == Approx(bf.lse[row]).margin(1e-12));
      CHECK(static_cast<int64_t>(k::naive_lowp_row(s, seed, row).size()) == dv);
    }
    const auto rows = k::rows_to_check(s, 1000, seed);
    std::vector<float> o, lse;
    reference_outputs(s, seed, rows, o, lse);
    REQUIRE(o.size() == rows.size() * dv);
    CHECK(k::verify_rows(s, seed, rows, o, lse, 0).passed);
    // A wrong last column fails; O rows as wide as hdim are refused.
    std::vector<float> wrong = o;
    wrong[dv - 1] += 0.5f;
    CHECK_FALSE(k::verify_rows(s, seed, rows, wrong, lse, 0).passed);
    std::vector<float> hdim_wide(rows.size() * 32, 0.0f);
    CHECK_THROWS_AS(k::verify_rows(s, seed, rows, hdim_wide, lse, 0), std::invalid_argument);
  }
}

using attnprof::kernels_test::packed;
using attnprof::kernels_test::with_hdim_v;
using attnprof::kernels_test::with_window;

TEST_CASE("packed batches: the sampled check covers every sequence's first and last row", "[cpu-kernels][varlen]") {
  const Shape s = packed({300, 1, 77, 512, 2, 129}, 8, 2, 64, true, DType::bf16);
  const auto rows = k::rows_to_check(s, 60, 9);
  CHECK(rows == k::rows_to_check(s, 60, 9));
  CHECK(static_cast<int64_t>(rows.size()) < s.lse_elems());
  const std::vector<int64_t> cu = s.cu_seqlens();
  for (int64_t h : {int64_t{0}, s.heads - 1})
    for (size_t b = 0; b < s.seq_lens.size(); ++b) {
      const int64_t first = h * s.tokens_q() + cu[b], last = first + s.seq_lens[b] - 1;
      CHECK(std::binary_search(rows.begin(), rows.end(), first));
      CHECK(std::binary_search(rows.begin(), rows.end(), last));
    }
  for (int64_t r : rows) CHECK(r < s.lse_elems());
}

// ---------------------------------------------------------------------------------------------------
// The float64 backward (verify_grads) against finite differences of an independent float64 forward.

namespace {

// Whole-tensor inputs in the canonical layout (dense bhsd, or packed [heads, tokens, d]), doubles.
struct Inputs {
  std::vector<double> q, k, v, d_o;
};
Inputs inputs_of(const Shape& s, uint64_t seed) {
  Inputs in;
  auto fill = [&](std::vector<double>& t, int tensor, int64_t n) {
    for (int64_t e = 0; e < n; ++e) t.push_back(double(k::input_value(seed, tensor, uint64_t(e))));
  };
  fill(in.q, 0, s.q_elems());
  fill(in.k, 1, s.kv_elems());
  fill(in.v, 2, s.v_elems());
  fill(in.d_o, 3, s.o_elems());
  return in;
}

// Flat rows of Q (and O, LSE) and of K (and V) of sequence b: dense ((b, h), i), packed (h, cu[b] + i).
struct Rows {
  const Shape& s;
  std::vector<int64_t> cu = s.cu_seqlens();
  int64_t q(int64_t b, int64_t h, int64_t i) const {
    return s.varlen() ? h * s.tokens_q() + cu[size_t(b)] + i : (b * s.heads + h) * s.seq_q + i;
  }
  int64_t kv(int64_t b, int64_t g, int64_t j) const {
    return s.varlen() ? g * s.tokens_k() + cu[size_t(b)] + j : (b * s.kv_heads + g) * s.seq_k + j;
  }
};

// The forward from the definition (softmax of scale * q.k over the keys each row sees), O and LSE.
void forward(const Shape& s, const Inputs& in, std::vector<double>& o, std::vector<double>& lse) {
  const Rows rows{s};
  const int64_t dv = s.value_hdim(), group = s.heads / s.kv_heads;
  o.assign(size_t(s.o_elems()), 0.0);
  lse.assign(size_t(s.lse_elems()), -std::numeric_limits<double>::infinity());
  for (int64_t b = 0; b < s.batch; ++b) {
    const Shape seq = s.sequence(b);
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < seq.seq_q; ++i) {
        const int64_t r = rows.q(b, h, i);
        double denom = 0;
        for (int64_t j = 0; j < seq.seq_k; ++j) {
          const attnprof::core::KeyRange keys = seq.keys_of_row(i);
          if (j < keys.begin || j >= keys.end) continue;
          const int64_t kr = rows.kv(b, h / group, j);
          double dot = 0;
          for (int64_t d = 0; d < s.hdim; ++d) dot += in.q[size_t(r * s.hdim + d)] * in.k[size_t(kr * s.hdim + d)];
          const double e = std::exp(dot / std::sqrt(double(s.hdim)));
          denom += e;
          for (int64_t d = 0; d < dv; ++d) o[size_t(r * dv + d)] += e * in.v[size_t(kr * dv + d)];
        }
        if (denom == 0) continue;
        for (int64_t d = 0; d < dv; ++d) o[size_t(r * dv + d)] /= denom;
        lse[size_t(r)] = std::log(denom);
      }
  }
}

double loss(const Shape& s, const Inputs& in) {
  std::vector<double> o, lse;
  forward(s, in, o, lse);
  double l = 0;
  for (size_t e = 0; e < o.size(); ++e) l += in.d_o[e] * o[e];
  return l;
}

// d loss / d x for every element of Q, K and V by central differences, loss = sum(dO * O).
struct Grads {
  std::vector<double> dq, dk, dv;
};
Grads finite_differences(const Shape& s, uint64_t seed) {
  constexpr double kStep = 1e-4;
  Inputs in = inputs_of(s, seed);
  Grads g;
  auto diff = [&](std::vector<double>& x, std::vector<double>& out) {
    for (size_t e = 0; e < x.size(); ++e) {
      const double keep = x[e];
      x[e] = keep + kStep;
      const double up = loss(s, in);
      x[e] = keep - kStep;
      const double down = loss(s, in);
      x[e] = keep;
      out.push_back((up - down) / (2 * kStep));
    }
  };
  diff(in.q, g.dq);
  diff(in.k, g.dk);
  diff(in.v, g.dv);
  return g;
}

struct GradInputs {
  k::GradRows rows;
  std::vector<float> o, lse, dq, dk, dv;
};
// What a kernel would hand verify_grads: O and LSE from the float64 forward (in fp32: the gradients
// below are those of the exact forward, and the check takes D = dO.O from the O it is given), the
// sampled rows of `g` rounded to the dtype.
GradInputs grad_inputs(const Shape& s, uint64_t seed, const Grads& g, int max_rows = 400) {
  GradInputs out;
  out.rows = k::grad_rows_to_check(s, max_rows, seed);
  std::vector<double> o, lse;
  forward(s, inputs_of(s, seed), o, lse);
  for (double x : o) out.o.push_back(float(x));
  for (double x : lse) out.lse.push_back(float(x));
  const int64_t dv = s.value_hdim();
  for (int64_t r : out.rows.q_rows)
    for (int64_t d = 0; d < s.hdim; ++d) out.dq.push_back(k::round_to(s.dtype, float(g.dq[size_t(r * s.hdim + d)])));
  for (int64_t r : out.rows.kv_rows) {
    for (int64_t d = 0; d < s.hdim; ++d) out.dk.push_back(k::round_to(s.dtype, float(g.dk[size_t(r * s.hdim + d)])));
    for (int64_t d = 0; d < dv; ++d) out.dv.push_back(k::round_to(s.dtype, float(g.dv[size_t(r * dv + d)])));
  }
  return out;
}

attnprof::core::Verification check(const Shape& s, uint64_t seed, const GradInputs& in, int64_t unwritten = 0) {
  return k::verify_grads(s, seed, in.rows, in.o, in.lse, in.dq, in.dk, in.dv, unwritten);
}

Shape backward(Shape s) {
  s.pass = attnprof::core::Pass::bwd;
  s.validate();
  return s;
}

}  // namespace

TEST_CASE("verify_grads: the float64 backward agrees with finite differences of the forward", "[verify][bwd]") {
  const std::vector<Shape> shapes = {
      backward(Shape{1, 2, 2, 5, 5, 8, false, DType::fp32}),
      backward(Shape{2, 2, 1, 4, 6, 8, true, DType::fp32}),     // causal, seq_q < seq_k, GQA
      backward(Shape{1, 3, 1, 6, 3, 8, true, DType::fp32}),     // rows that see no key, GQA 3
      backward(with_window(Shape{1, 2, 2, 7, 7, 8, false, DType::fp32}, 2)),
      backward(with_window(Shape{1, 2, 1, 6, 6, 8, true, DType::fp32}, 3)),
      backward(with_hdim_v(Shape{1, 2, 1, 4, 5, 16, true, DType::fp32}, 8)),
      backward(packed({3, 1, 5}, 2, 1, 8, true, DType::fp32)),
      backward(packed({4, 2}, 2, 2, 8, false, DType::fp32, 2)),
  };
  for (const Shape& s : shapes) {
    INFO(s.label());
    const uint64_t seed = 17;
    const Grads g = finite_differences(s, seed);
    const GradInputs in = grad_inputs(s, seed, g);
    // Small: every row checked.
    CHECK(int64_t(in.rows.q_rows.size()) == s.lse_elems());
    CHECK(int64_t(in.rows.kv_rows.size()) == s.kv_heads * s.tokens_k());
    const auto v = check(s, seed, in);
    REQUIRE(v.grads.size() == 3);
    for (const auto& [name, gc] : v.grads) {
      INFO(name << " max err " << gc.max_abs_err << " tolerance " << gc.tolerance);
      // Finite differences (step 1e-4: truncation ~1e-8) and O handed over in fp32 (D off by ~1e-7).
      CHECK(gc.max_abs_err < 1e-6);
      CHECK(gc.passed);
    }
    CHECK(v.passed);
  }
}

TEST_CASE("verify_grads: rounded correct gradients pass in bf16 and fp16; a corrupted or unwritten element fails",
          "[verify][bwd]") {
  for (DType t : {DType::bf16, DType::fp16}) {
    const Shape s = backward(Shape{1, 4, 2, 12, 16, 16, true, t});
    INFO(s.label());
    const uint64_t seed = 5;
    const Grads g = finite_differences(s, seed);
    GradInputs in = grad_inputs(s, seed, g);
    const auto good = check(s, seed, in);
    CHECK(good.passed);
    for (const auto& [name, gc] : good.grads) {
      INFO(name);
      CHECK(gc.naive_max_abs_err > 0);  // the naive backward rounds P, dS and the outputs
      CHECK(gc.max_abs_err <= gc.tolerance);
    }
    // One dK element off by its tolerance and a bit: dK fails, the others still pass.
    GradInputs bad = in;
    bad.dk[3] += float(2 * good.grads.at("dk").tolerance);
    const auto corrupted = check(s, seed, bad);
    CHECK_FALSE(corrupted.passed);
    CHECK_FALSE(corrupted.grads.at("dk").passed);
    CHECK(corrupted.grads.at("dq").passed);
    CHECK(corrupted.grads.at("dv").passed);
    // dQ scaled as a kernel forgetting the softmax scale would: fails.
    GradInputs unscaled = in;
    for (float& x : unscaled.dq) x *= 4.0f;  // 1 / scale at hdim 16
    CHECK_FALSE(check(s, seed, unscaled).grads.at("dq").passed);
    // An unwritten (poisoned) dV element: not finite, and counted by the caller.
    GradInputs poisoned = in;
    poisoned.dv[0] = std::numeric_limits<float>::quiet_NaN();
    const auto unwritten = check(s, seed, poisoned, 1);
    CHECK_FALSE(unwritten.passed);
    CHECK_FALSE(unwritten.grads.at("dv").passed);
    CHECK(unwritten.unwritten == 1);
    // An unwritten element outside the sampled rows: only the count says so, and it fails the point.
    CHECK_FALSE(check(s, seed, in, 1).passed);
  }
}

TEST_CASE("merge_grad_checks: a backward point passes only when its forward and gradient checks both pass",
          "[verify][bwd]") {
  attnprof::core::Verification fwd;
  fwd.passed = true;
  fwd.unwritten = 0;
  attnprof::core::Verification grads;
  grads.passed = false;
  grads.unwritten = 2;
  grads.grads["dq"].passed = false;
  k::merge_grad_checks(fwd, grads);
  CHECK_FALSE(fwd.passed);
  CHECK(fwd.unwritten == 2);
  CHECK(fwd.grads.size() == 1);
}

TEST_CASE("grad_rows_to_check: edges of Q's rows and K's, every sequence, a cap on the key rows' work",
          "[verify][bwd]") {
  const Shape s = backward(Shape{2, 8, 2, 1024, 512, 64, true, DType::bf16});
  const k::GradRows rows = k::grad_rows_to_check(s, 64, 3);
  CHECK(rows.q_rows == k::rows_to_check(s, 64, 3));
  CHECK(rows.kv_rows.size() <= 64 + 4);
  const int64_t kv_total = s.batch * s.kv_heads * s.seq_k;
  for (int64_t r : {int64_t{0}, s.seq_k - 1, kv_total - s.seq_k, kv_total - 1})
    CHECK(std::binary_search(rows.kv_rows.begin(), rows.kv_rows.end(), r));
  for (int64_t r : rows.kv_rows) CHECK(r < kv_total);

  // A packed batch: the first and last key of every sequence at the first and last kv head.
  const Shape p = backward(packed({300, 1, 77, 512}, 8, 2, 64, true, DType::bf16));
  const k::GradRows prow = k::grad_rows_to_check(p, 40, 9);
  const std::vector<int64_t> cu = p.cu_seqlens();
  for (int64_t g : {int64_t{0}, p.kv_heads - 1})
    for (size_t b = 0; b < p.seq_lens.size(); ++b) {
      const int64_t first = g * p.tokens_k() + cu[b];
      CHECK(std::binary_search(prow.kv_rows.begin(), prow.kv_rows.end(), first));
      CHECK(std::binary_search(prow.kv_rows.begin(), prow.kv_rows.end(), first + p.seq_lens[b] - 1));
    }

  // A key row of a long seq_q with a large group costs group * seq_q * (D + Dv) per row: fewer rows.
  const Shape tall = backward(Shape{1, 32, 1, 65536, 65536, 128, true, DType::bf16});
  const k::GradRows trows = k::grad_rows_to_check(tall, 256, 1);
  CHECK(trows.q_rows.size() >= 256);
  CHECK(trows.kv_rows.size() < 32);
  CHECK(trows.kv_rows.size() >= 4);
}

namespace {

// The fp8 prefill point of `s` (dtype fp8_e4m3 with its implied K and V format), validated.
Shape fp8_point(Shape s) {
  s.dtype = DType::fp8_e4m3;
  attnprof::core::imply_fp8_kv_format(s);
  s.validate();
  return s;
}

// O and LSE rows as an exact kernel would write them: the float64 reference in float, O in bf16.
void fp8_reference_outputs(const Shape& s, uint64_t seed, const std::vector<int64_t>& rows, std::vector<float>& o,
                           std::vector<float>& lse) {
  o.clear();
  lse.clear();
  for (int64_t r : rows) {
    const auto ref = k::reference_row(s, seed, r);
    for (double x : ref.o) o.push_back(k::round_to(s.out_dtype(), float(x)));
    lse.push_back(float(ref.lse));
  }
}

}  // namespace

TEST_CASE("round_to fp8_e4m3: E4M3 at scale 1, ties to even, subnormals in steps of 2^-9, saturating", "[verify][fp8]") {
  CHECK(k::round_to(DType::fp8_e4m3, 0.3f) == 0.3125f);       // 0.25 * (1 + 2/8)
  CHECK(k::round_to(DType::fp8_e4m3, 1.0625f) == 1.0f);       // halfway between 1 and 1.125: to even
  CHECK(k::round_to(DType::fp8_e4m3, 1.1875f) == 1.25f);      // halfway between 1.125 and 1.25: to even
  CHECK(k::round_to(DType::fp8_e4m3, 0x1p-10f) == 0.0f);      // half a subnormal step: to even (0)
  CHECK(k::round_to(DType::fp8_e4m3, 0x3p-10f) == 0x1p-8f);   // 1.5 steps: to 2 steps
  CHECK(k::round_to(DType::fp8_e4m3, -0x1p-9f) == -0x1p-9f);  // the smallest subnormal, exact
  CHECK(k::round_to(DType::fp8_e4m3, 1000.0f) == 448.0f);
  CHECK(k::round_to(DType::fp8_e4m3, 256.0f) == 256.0f);      // a lazily rescaled P's largest fits
}

TEST_CASE("fp8 prefill: reference_row is the brute force of the dequantized Q, K and V", "[verify][fp8]") {
  for (const Shape& base : {Shape{1, 2, 2, 6, 6, 16, false, DType::bf16}, Shape{2, 4, 2, 7, 9, 32, true, DType::bf16}}) {
    const Shape s = fp8_point(base);
    INFO(s.label());
    const uint64_t seed = 77;
    const BruteForce bf = brute_force(s, seed);
    for (int64_t r = 0; r < s.lse_elems(); ++r) {
      const auto ref = k::reference_row(s, seed, r);
      CHECK(ref.lse == Approx(bf.lse[size_t(r)]).margin(1e-12));
      for (int64_t d = 0; d < s.hdim; ++d) CHECK(ref.o[d] == Approx(bf.o[size_t(r * s.hdim + d)]).margin(1e-12));
    }
  }
}

TEST_CASE("fp8 prefill: an emulated fp8 tensor-core kernel passes its per-element bound on random inputs; the "
          "quantization of Q, K and V is reported against the bf16 inputs", "[verify][fp8]") {
  // Short and long rows, GQA, causal and not, a packed batch.
  std::vector<Shape> shapes = {fp8_point(Shape{2, 4, 2, 33, 40, 64, true, DType::bf16}),
                               fp8_point(Shape{1, 4, 4, 16, 1024, 128, false, DType::bf16}),
                               fp8_point(Shape{1, 8, 2, 256, 256, 128, true, DType::bf16}),
                               fp8_point(attnprof::kernels_test::packed({3, 70, 200}, 4, 2, 64, true, DType::bf16))};
  for (const Shape& s : shapes) {
    INFO(s.label());
    const uint64_t seed = 2024;
    const auto rows = k::rows_to_check(s, 300, seed);
    std::vector<float> o, lse;
    fp8_reference_outputs(s, seed, rows, o, lse);
    std::vector<float> emulated;
    for (int64_t r : rows)
      for (double x : k::naive_lowp_row(s, seed, r)) emulated.push_back(float(x));
    const auto v = k::verify_rows(s, seed, rows, emulated, lse, 0);
    INFO("err " << v.o_max_abs_err << " largest bound " << v.tolerance << " ratio " << v.o_max_bound_ratio.value_or(-1));
    CHECK(v.passed);
    REQUIRE(v.o_max_bound_ratio.has_value());
    CHECK(*v.o_max_bound_ratio > 0);  // P's rounding shows
    CHECK(*v.o_max_bound_ratio <= 1);
    CHECK(v.o_max_abs_err == Approx(v.naive_o_max_abs_err).margin(1e-12));  // it is the naive baseline
    CHECK(v.o_max_abs_err <= v.tolerance);
    // The exact result in bf16 passes too, with room to spare.
    const auto exact = k::verify_rows(s, seed, rows, o, lse, 0);
    CHECK(exact.passed);
    CHECK(*exact.o_max_bound_ratio < *v.o_max_bound_ratio);
    // What quantizing Q, K and V costs, against the bf16 point's attention.
    REQUIRE(v.quant.checked);
    CHECK(v.quant.o_max_abs_err > 0);
    CHECK(v.quant.o_max_rel_err > 0);
    CHECK(v.quant.o_max_rel_err < 0.5);
  }
}

TEST_CASE("fp8 prefill: one element beyond its own bound fails, even under the largest; within it passes; "
          "unwritten, NaN, a forgotten scale and a wrong LSE fail", "[verify][fp8]") {
  const Shape s = fp8_point(Shape{1, 2, 1, 64, 64, 64, true, DType::bf16});
  const uint64_t seed = 9;
  const auto rows = k::rows_to_check(s, 400, seed);
  REQUIRE(rows.size() == size_t(s.lse_elems()));
  std::vector<float> o, lse;
  fp8_reference_outputs(s, seed, rows, o, lse);
  std::vector<double> bounds, ref;
  for (int64_t r : rows) {
    const auto b = k::fp8_o_bounds_row(s, seed, r);
    bounds.insert(bounds.end(), b.begin(), b.end());
    const auto x = k::reference_row(s, seed, r).o;
    ref.insert(ref.end(), x.begin(), x.end());
  }
  const double largest = *std::max_element(bounds.begin(), bounds.end());
  const auto good = k::verify_rows(s, seed, rows, o, lse, 0);
  REQUIRE(good.passed);
  CHECK(good.tolerance == Approx(largest).epsilon(1e-12));
  // The element with the smallest bound: exact values but it.
  const size_t e = size_t(std::min_element(bounds.begin(), bounds.end()) - bounds.begin());
  REQUIRE(bounds[e] > 0);
  REQUIRE(1.5 * bounds[e] < largest);  // its bound is far from the largest: a per-element check
  std::vector<float> exact(ref.begin(), ref.end());
  auto off = exact;
  off[e] = float(ref[e] + 1.5 * bounds[e]);
  const auto bad = k::verify_rows(s, seed, rows, off, lse, 0);
  CHECK_FALSE(bad.passed);
  CHECK(bad.o_max_abs_err < bad.tolerance);  // under the largest bound, over its own
  CHECK(*bad.o_max_bound_ratio == Approx(1.5).epsilon(1e-3));
  auto near = exact;
  near[e] = float(ref[e] + 0.9 * bounds[e]);
  const auto inside = k::verify_rows(s, seed, rows, near, lse, 0);
  CHECK(inside.passed);
  CHECK(*inside.o_max_bound_ratio == Approx(0.9).epsilon(1e-3));
  // Any element off by more than the largest bound fails.
  auto far = o;
  far[17] = float(ref[17] + 2 * largest + 1e-3);
  CHECK_FALSE(k::verify_rows(s, seed, rows, far, lse, 0).passed);

  auto nan_o = o;
  nan_o[3] = std::numeric_limits<float>::quiet_NaN();
  const auto poisoned = k::verify_rows(s, seed, rows, nan_o, lse, 0);
  CHECK_FALSE(poisoned.passed);
  CHECK_FALSE(k::verify_rows(s, seed, rows, o, lse, 5).passed);  // unwritten elements elsewhere in O
  // V's scale forgotten: O in units of the stored codes, 448 / (221/128) times too large.
  auto unscaled = o;
  for (float& x : unscaled) x /= k::static_scale(attnprof::core::KvDType::fp8_e4m3);
  CHECK_FALSE(k::verify_rows(s, seed, rows, unscaled, lse, 0).passed);
  auto bad_lse = lse;
  bad_lse[10] += 0.1f;
  CHECK_FALSE(k::verify_rows(s, seed, rows, o, bad_lse, 0).passed);
}
