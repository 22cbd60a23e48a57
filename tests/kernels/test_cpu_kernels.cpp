// CPU kernels (kernels/cpu/): both verified against float64 on ragged shapes, and the reference's
// stage hook order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/random.hpp"
#include "kernels/common/verify.hpp"
#include "kernels/cpu/tiles.hpp"
#include "kernels/registry.hpp"

using attnprof::core::DType;
using attnprof::core::Shape;
namespace k = attnprof::kernels;

namespace {

// A CPU kernel that runs nothing and keeps every default trait of k::Kernel: what support_reason
// decides for a kernel that declares nothing. Tests derive from it to override one trait.
struct StubKernel : k::Kernel {
  explicit StubKernel(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  k::Backend backend() const override { return k::Backend::cpu; }
  attnprof::core::KernelKind kind() const override { return attnprof::core::KernelKind::fused; }
  std::string description() const override { return "a test stub"; }
  std::string unsupported_reason(const Shape&) const override { return {}; }
  size_t workspace_bytes(const Shape&) const override { return 0; }
  void launch(const k::AttentionArgs&, k::StageHook*) const override {}
  std::string name_;
};

struct HostProblem {
  std::vector<float> q, k, v, o, lse, workspace;
  std::vector<int32_t> cu_seqlens;
  k::AttentionArgs args;
  HostProblem(const Shape& s, const k::Kernel& kernel, uint64_t seed)
      : q(size_t(s.q_elems())), k(size_t(s.kv_elems())), v(size_t(s.v_elems())), o(size_t(s.o_elems()),
        std::numeric_limits<float>::quiet_NaN()), lse(size_t(s.lse_elems()), std::numeric_limits<float>::quiet_NaN()),
        workspace(kernel.workspace_bytes(s) / sizeof(float)) {
    for (size_t e = 0; e < q.size(); ++e) q[e] = k::input_value(seed, 0, e);
    for (size_t e = 0; e < k.size(); ++e) k[e] = k::input_value(seed, 1, e);
    for (size_t e = 0; e < v.size(); ++e) v[e] = k::input_value(seed, 2, e);
    args.shape = s;
    args.q = q.data();
    args.k = k.data();
    args.v = v.data();
    args.o = o.data();
    args.lse = lse.data();
    args.workspace = workspace.data();
    args.workspace_bytes = workspace.size() * sizeof(float);
    for (int64_t start : s.cu_seqlens()) cu_seqlens.push_back(static_cast<int32_t>(start));
    args.cu_seqlens = cu_seqlens.empty() ? nullptr : cu_seqlens.data();
  }
  attnprof::core::Verification verify(const Shape& s, uint64_t seed) const {
    int64_t unwritten = 0;
    for (float x : o) unwritten += !std::isfinite(x);
    for (float x : lse) unwritten += std::isnan(x);
    const auto rows = k::rows_to_check(s, 400, seed);
    std::vector<float> o_rows, lse_rows;
    const int64_t dv = s.value_hdim();
    for (int64_t r : rows) {
      o_rows.insert(o_rows.end(), o.begin() + r * dv, o.begin() + (r + 1) * dv);
      lse_rows.push_back(lse[size_t(r)]);
    }
    return k::verify_rows(s, seed, rows, o_rows, lse_rows, unwritten);
  }
};

struct RecordingHook : k::StageHook {
  std::vector<int> events;
  void before_stage(int i) override { events.push_back(i); }
  void after_last() override { events.push_back(-1); }
};

}  // namespace

TEST_CASE("CPU kernels are registered", "[cpu-kernels]") {
  const auto kernels = k::registered(k::Backend::cpu);
  REQUIRE(kernels.size() >= 2);
  REQUIRE(k::find(k::Backend::cpu, "reference") != nullptr);
  REQUIRE(k::find(k::Backend::cpu, "fused") != nullptr);
  CHECK(k::find(k::Backend::cpu, "reference")->kind() == attnprof::core::KernelKind::materialized);
  CHECK(k::find(k::Backend::cpu, "fused")->kind() == attnprof::core::KernelKind::fused);
  CHECK(k::find(k::Backend::cpu, "reference")->stage_names(Shape{}).size() == 3);
}

TEST_CASE("CPU kernels match float64 on ragged shapes", "[cpu-kernels]") {
  const std::vector<Shape> shapes = {
      Shape{1, 1, 1, 1, 1, 64, false, DType::fp32},
      Shape{1, 2, 2, 1, 1, 64, true, DType::bf16},
      Shape{3, 7, 1, 17, 17, 32, false, DType::bf16},
      Shape{3, 7, 1, 17, 17, 32, true, DType::fp32},
      Shape{1, 2, 1, 100, 257, 64, true, DType::bf16},   // causal, seq_k > seq_q
      Shape{2, 4, 2, 257, 100, 16, true, DType::fp32},   // causal, seq_k < seq_q: masked rows
      Shape{1, 1, 1, 257, 257, 128, true, DType::fp16},
      Shape{3, 7, 7, 100, 17, 48, false, DType::bf16},
      Shape{1, 3, 3, 17, 100, 40, false, DType::fp32},
  };
  uint64_t seed = 11;
  for (const char* name : {"reference", "fused"}) {
    const k::Kernel* kernel = k::find(k::Backend::cpu, name);
    REQUIRE(kernel);
    for (const Shape& s : shapes) {
      INFO(name << " " << s.label());
      CHECK(kernel->unsupported_reason(s).empty());
      HostProblem p(s, *kernel, ++seed);
      kernel->launch(p.args);
      const auto v = p.verify(s, seed);
      CHECK(v.unwritten == 0);
      CHECK(v.o_max_abs_err <= v.tolerance);
      CHECK(v.lse_max_abs_err < 1e-3);
      CHECK(v.passed);
    }
  }
}

TEST_CASE("CPU reference reports its three stages to the hook in order", "[cpu-kernels]") {
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const k::Kernel* fused = k::find(k::Backend::cpu, "fused");
  const Shape s{1, 2, 1, 33, 33, 32, true, DType::bf16};
  HostProblem p(s, *ref, 3);
  RecordingHook hook;
  ref->launch(p.args, &hook);
  CHECK(hook.events == std::vector<int>{0, 1, 2, -1});
  HostProblem pf(s, *fused, 3);
  RecordingHook fused_hook;
  fused->launch(pf.args, &fused_hook);
  CHECK(fused_hook.events == std::vector<int>{0, -1});
}

TEST_CASE("CPU reference refuses a workspace that is too small", "[cpu-kernels]") {
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const Shape s{1, 1, 1, 8, 8, 16, false, DType::bf16};
  HostProblem p(s, *ref, 4);
  p.args.workspace_bytes = 16;
  CHECK_THROWS(ref->launch(p.args));
}

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

namespace {
Shape with_window(Shape s, int64_t window) {
  s.window = window;
  return s;
}
}  // namespace

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

TEST_CASE("a kernel without a window mask never runs a windowed point", "[cpu-kernels][window]") {
  const StubKernel kernel("no-window");
  Shape s{1, 1, 1, 64, 64, 64, true, DType::bf16};
  CHECK(k::support_reason(kernel, s).empty());
  s.window = 16;
  const std::string why = k::support_reason(kernel, s);
  CHECK(why.find("no-window") != std::string::npos);
  CHECK(why.find("sliding-window") != std::string::npos);
  CHECK(why.find("window 16") != std::string::npos);
}

TEST_CASE("support_reason gives a kernel's own words for a window or packed batch it is not given",
          "[cpu-kernels][window][varlen]") {
  // As a plugin kernel does (kernels/plugin): its ABI version, or the flag it does not declare.
  struct Declares final : StubKernel {
    Declares() : StubKernel("declares-nothing") {}
    std::string no_window_reason() const override { return "no window flag"; }
    std::string no_varlen_reason() const override { return "no varlen flag"; }
  } kernel;
  Shape s{1, 1, 1, 64, 64, 64, true, DType::bf16};
  s.window = 16;
  CHECK(k::support_reason(kernel, s) == "no window flag (window 16)");
  s.window = 0;
  s.seq_lens = {64};
  CHECK(k::support_reason(kernel, s) == "no varlen flag");
}

namespace {
// A packed batch of these lengths (core/shape.hpp), validated.
Shape packed(std::vector<int64_t> lens, int64_t heads, int64_t kv_heads, int64_t hdim, bool causal, DType dtype,
             int64_t window = 0) {
  Shape s{static_cast<int64_t>(lens.size()), heads, kv_heads, 1, 1, hdim, causal, dtype};
  s.seq_q = s.seq_k = *std::max_element(lens.begin(), lens.end());
  s.window = window;
  s.seq_lens = std::move(lens);
  s.lengths = "list:test";
  s.validate();
  return s;
}
}  // namespace

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

TEST_CASE("a kernel that does not run packed batches never gets one", "[cpu-kernels][varlen]") {
  struct DenseOnly final : StubKernel {
    DenseOnly() : StubKernel("dense-only") {}
    std::string unsupported_reason(const Shape& s) const override {
      return s.hdim == 48 ? "dense-only has its own reason" : std::string();
    }
  } kernel;
  const Shape s = packed({4, 8}, 1, 1, 64, true, DType::bf16);
  CHECK(k::support_reason(kernel, s.padded()).empty());
  const std::string why = k::support_reason(kernel, s);
  CHECK(why.find("dense-only") != std::string::npos);
  CHECK(why.find("variable-length") != std::string::npos);
  // The kernel's own reason comes first when it has one.
  CHECK(k::support_reason(kernel, packed({4, 8}, 1, 1, 48, true, DType::bf16)) == "dense-only has its own reason");
}

namespace {
Shape with_hdim_v(Shape s, int64_t hdim_v) {
  s.hdim_v = hdim_v;
  s.validate();
  return s;
}
}  // namespace

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

TEST_CASE("a kernel that does not run a distinct hdim_v never gets one; the built-in CUDA kernels say why",
          "[cpu-kernels][hdim_v]") {
  const StubKernel kernel("one-width");
  Shape s{1, 16, 16, 4096, 4096, 192, true, DType::bf16};
  CHECK(k::support_reason(kernel, s).empty());
  s.hdim_v = 128;
  CHECK(k::support_reason(kernel, s) ==
        "one-width: value head dim 128 differs from the query/key head dim 192 (one tile width for Q, K and V)");
  // Every CUDA kernel but the reference is refused by the one trait, before its own reason is asked (no
  // device needed); fused-auto names each of its choices' refusals.
  for (const char* name : {"fused", "fused-sm90", "decode"}) {
    const k::Kernel* cuda = k::find(k::Backend::cuda, name);
    if (cuda == nullptr) continue;  // not built into this binary
    INFO(name);
    CHECK_FALSE(cuda->runs_distinct_hdim_v());
    CHECK(k::support_reason(*cuda, s) == std::string(name) +
                                              ": value head dim 128 differs from the query/key head dim 192 (one "
                                              "tile width for Q, K and V)");
  }
  if (const k::Kernel* reference = k::find(k::Backend::cuda, "reference")) CHECK(reference->runs_distinct_hdim_v());
  if (const k::Kernel* autok = k::find(k::Backend::cuda, "fused-auto")) {
    const std::string why = k::support_reason(*autok, s);
    CHECK(why.find("no fused kernel runs this shape") != std::string::npos);
    CHECK(why.find("fused-sm90: value head dim 128 differs") != std::string::npos);
    CHECK(why.find("fused: value head dim 128 differs") != std::string::npos);
    for (const char* twice : {"decode: decode:", "fused-sm90: fused-sm90:", "fused: fused:"})
      CHECK(why.find(twice) == std::string::npos);  // each choice named once
  }
}
