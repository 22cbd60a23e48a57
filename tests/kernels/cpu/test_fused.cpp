// kernels/cpu/fused.cpp: the CPU fused kernel (and the reference beside it) against float64 with a
// sliding window, on packed variable-length batches and with a value head dim of its own; kernels that
// ignore the window, the packing or hdim_v fail the check.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/kernels_test_support.hpp"

using namespace attnprof::kernels_test;


TEST_CASE("CPU kernels with a sliding window match float64 on odd shapes", "[cpu-kernels][window]") {
  const std::vector<Shape> shapes = {
      with_window(Shape{1, 1, 1, 1, 1, 64, false, DType::fp32}, 1),
      with_window(Shape{2, 3, 1, 17, 17, 32, true, DType::bf16}, 1),      // the diagonal only
      with_window(Shape{2, 3, 1, 17, 17, 32, false, DType::bf16}, 1),
      with_window(Shape{1, 2, 2, 100, 257, 64, true, DType::fp32}, 33),   // seq_k > seq_q
      with_window(Shape{1, 2, 2, 100, 257, 64, false, DType::bf16}, 70),
      with_window(Shape{2, 4, 2, 257, 100, 16, true, DType::fp16}, 5),    // seq_k < seq_q: masked rows
      with_window(Shape{2, 4, 2, 257, 100, 16, false, DType::fp32}, 20),  // rows before the window see nothing
      with_window(Shape{1, 1, 1, 300, 300, 48, true, DType::bf16}, 64),   // exactly one key block wide
      with_window(Shape{1, 1, 1, 300, 300, 48, false, DType::fp32}, 65),
      with_window(Shape{1, 3, 3, 3, 1000, 40, true, DType::bf16}, 100),   // decode-like
      with_window(Shape{1, 2, 1, 50, 70, 64, true, DType::fp32}, 120),    // wider than seq_k
  };
  uint64_t seed = 101;
  for (const char* name : {"reference", "fused"}) {
    const k::Kernel* kernel = k::find(k::Backend::cpu, name);
    REQUIRE(kernel);
    CHECK(kernel->masks_window());
    for (const Shape& s : shapes) {
      INFO(name << " " << s.label());
      CHECK(k::support_reason(*kernel, s).empty());
      HostProblem p(s, *kernel, ++seed);
      kernel->launch(p.args);
      const auto v = p.verify(s, seed);
      CHECK(v.unwritten == 0);
      CHECK(v.o_max_abs_err <= v.tolerance);
      CHECK(v.lse_max_abs_err < 1e-3);
      CHECK(v.passed);
      // Rows that see no key: O = 0 and LSE = -inf.
      for (int64_t row = 0; row < s.lse_elems(); ++row) {
        if (s.keys_of_row(row % s.seq_q).size() > 0) continue;
        CHECK(p.lse[size_t(row)] == -std::numeric_limits<float>::infinity());
        CHECK(std::all_of(p.o.begin() + row * s.hdim, p.o.begin() + (row + 1) * s.hdim, [](float x) { return x == 0.0f; }));
      }
    }
  }
}

TEST_CASE("CPU kernels: a window of seq_q + seq_k or more is no window; a narrow one changes O", "[cpu-kernels][window]") {
  for (const char* name : {"reference", "fused"}) {
    const k::Kernel* kernel = k::find(k::Backend::cpu, name);
    for (bool causal : {false, true}) {
      const Shape plain{1, 2, 1, 37, 90, 32, causal, DType::bf16};
      INFO(name << " " << plain.label());
      HostProblem none(plain, *kernel, 7);
      kernel->launch(none.args);
      for (int64_t w : {int64_t{127}, int64_t{128}, int64_t{1} << 40}) {
        const Shape wide = with_window(plain, w);
        HostProblem p(wide, *kernel, 7);
        kernel->launch(p.args);
        CHECK(p.o == none.o);
        CHECK(p.lse == none.lse);
      }
      // A window of 8: every row's output moves (its softmax runs over at most 15 keys, not 54+).
      const Shape narrow = with_window(plain, 8);
      HostProblem p(narrow, *kernel, 7);
      kernel->launch(p.args);
      CHECK(p.verify(narrow, 7).passed);
      CHECK_FALSE(none.verify(narrow, 7).passed);  // full attention fails a window's check
      int64_t rows_moved = 0;
      for (int64_t row = 0; row < narrow.lse_elems(); ++row) rows_moved += p.lse[size_t(row)] != none.lse[size_t(row)];
      CHECK(rows_moved == narrow.lse_elems());
    }
  }
}

TEST_CASE("CPU kernels on packed variable-length batches match float64", "[cpu-kernels][varlen]") {
  const std::vector<Shape> shapes = {
      packed({1}, 1, 1, 64, false, DType::fp32),
      packed({1, 1, 1}, 2, 1, 32, true, DType::bf16),                   // length-1 sequences only
      packed({17, 1, 5, 64, 1, 33}, 4, 2, 32, false, DType::bf16),      // GQA, odd lengths
      packed({17, 1, 5, 64, 1, 33}, 4, 2, 32, true, DType::fp32),
      packed({100, 3, 257, 31}, 2, 2, 16, true, DType::fp16),           // several key blocks
      packed({40, 1, 90, 7}, 3, 1, 48, true, DType::bf16, 9),           // a causal window
      packed({40, 1, 90, 7}, 3, 3, 48, false, DType::fp32, 20),         // a window without the mask
  };
  uint64_t seed = 301;
  for (const char* name : {"reference", "fused"}) {
    const k::Kernel* kernel = k::find(k::Backend::cpu, name);
    REQUIRE(kernel);
    CHECK(kernel->runs_varlen());
    for (const Shape& s : shapes) {
      INFO(name << " " << s.label());
      CHECK(k::support_reason(*kernel, s).empty());
      HostProblem p(s, *kernel, ++seed);
      kernel->launch(p.args);
      const auto v = p.verify(s, seed);
      CHECK(v.unwritten == 0);  // over the whole packed O and LSE
      CHECK(v.o_max_abs_err <= v.tolerance);
      CHECK(v.lse_max_abs_err < 1e-3);
      CHECK(v.passed);
    }
  }
}

TEST_CASE("packed batches: sequences do not see each other; the check knows where each one ends", "[cpu-kernels][varlen]") {
  const k::Kernel* kernel = k::find(k::Backend::cpu, "fused");
  REQUIRE(kernel);
  for (bool causal : {false, true}) {
    const Shape s = packed({9, 5, 12}, 2, 1, 32, causal, DType::bf16);
    INFO(s.label());
    HostProblem p(s, *kernel, 11);
    kernel->launch(p.args);
    CHECK(p.verify(s, 11).passed);
    // The same tokens cut at other boundaries (or not at all): the check fails.
    CHECK_FALSE(p.verify(packed({5, 9, 12}, 2, 1, 32, causal, DType::bf16), 11).passed);
    CHECK_FALSE(p.verify(packed({26}, 2, 1, 32, causal, DType::bf16), 11).passed);
  }
  // A length-1 sequence's row sees its one key: O is exactly that key's V row, rounded.
  const Shape one = packed({3, 1, 4}, 1, 1, 32, false, DType::fp32);
  HostProblem p(one, *kernel, 5);
  kernel->launch(p.args);
  for (int64_t d = 0; d < 32; ++d) CHECK(p.o[size_t(3 * 32 + d)] == Approx(p.v[size_t(3 * 32 + d)]).epsilon(1e-6));
}

TEST_CASE("CPU kernels with a value head dim of its own match float64", "[cpu-kernels][hdim_v]") {
  const std::vector<Shape> shapes = {
      with_hdim_v(Shape{1, 2, 2, 17, 17, 64, false, DType::fp32}, 32),
      with_hdim_v(Shape{2, 4, 2, 33, 70, 48, true, DType::bf16}, 128),   // wider than Q/K, GQA, causal
      with_hdim_v(Shape{1, 16, 16, 65, 65, 192, true, DType::bf16}, 128),  // MLA prefill's dims
      with_hdim_v(Shape{2, 3, 1, 70, 33, 32, true, DType::fp16}, 72),    // masked rows, ragged PV columns
      with_hdim_v(Shape{1, 2, 1, 1, 300, 128, false, DType::bf16}, 64),  // one query row
      [] {
        Shape s = with_hdim_v(Shape{1, 4, 2, 90, 90, 64, true, DType::bf16}, 16);
        s.window = 7;
        return s;
      }(),
      with_hdim_v(packed({5, 40, 17}, 4, 2, 64, true, DType::bf16), 24),
  };
  uint64_t seed = 40;
  for (const char* name : {"reference", "fused"}) {
    const k::Kernel* kernel = k::find(k::Backend::cpu, name);
    REQUIRE(kernel);
    CHECK(kernel->runs_distinct_hdim_v());
    for (const Shape& s : shapes) {
      INFO(name << " " << s.label());
      REQUIRE(s.distinct_hdim_v());
      CHECK(k::support_reason(*kernel, s).empty());
      HostProblem p(s, *kernel, ++seed);
      kernel->launch(p.args);
      const auto v = p.verify(s, seed);
      CHECK(v.unwritten == 0);  // every element of the hdim_v-wide O written
      CHECK(v.o_max_abs_err <= v.tolerance);
      CHECK(v.lse_max_abs_err < 1e-3);
      CHECK(v.passed);
    }
  }
}

TEST_CASE("hdim_v: a kernel that reads V as wide as K fails verification", "[cpu-kernels][hdim_v]") {
  // The CPU fused kernel run on a shape that claims V is hdim wide, over buffers filled for hdim_v:
  // what a kernel that ignores hdim_v computes. Its O must fail against the true reference.
  const Shape s = with_hdim_v(Shape{1, 2, 2, 40, 40, 64, false, DType::fp32}, 32);
  const k::Kernel* fused = k::find(k::Backend::cpu, "fused");
  HostProblem p(s, *fused, 5);
  Shape as_if_equal = s;
  as_if_equal.hdim_v = 0;
  std::vector<float> wide_o(size_t(as_if_equal.o_elems()), 0.0f), wide_v(size_t(as_if_equal.v_elems()), 0.0f);
  std::copy(p.v.begin(), p.v.end(), wide_v.begin());
  k::AttentionArgs a = p.args;
  a.shape = as_if_equal;
  a.v = wide_v.data();
  a.o = wide_o.data();
  fused->launch(a);
  // Its first hdim_v columns of each row, where O would be.
  for (int64_t r = 0; r < s.lse_elems(); ++r)
    std::copy_n(wide_o.begin() + r * 64, 32, p.o.begin() + r * 32);
  CHECK_FALSE(p.verify(s, 5).passed);
}
