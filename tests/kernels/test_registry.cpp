// kernels/registry.cpp: the CPU kernels are registered under their names, and support_reason refuses
// a window, a packed batch, a distinct value head dim or fp8 prefill to a kernel that does not declare
// it, in that kernel's own words when it has them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/kernels_test_support.hpp"

using namespace attnprof::kernels_test;


TEST_CASE("CPU kernels are registered", "[cpu-kernels]") {
  const auto kernels = k::registered(k::Backend::cpu);
  REQUIRE(kernels.size() >= 2);
  REQUIRE(k::find(k::Backend::cpu, "reference") != nullptr);
  REQUIRE(k::find(k::Backend::cpu, "fused") != nullptr);
  CHECK(k::find(k::Backend::cpu, "reference")->kind() == attnprof::core::KernelKind::materialized);
  CHECK(k::find(k::Backend::cpu, "fused")->kind() == attnprof::core::KernelKind::fused);
  CHECK(k::find(k::Backend::cpu, "reference")->stage_names(Shape{}).size() == 3);
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

TEST_CASE("fp8 prefill runs only on a kernel that says so, which needs no quantized-KV trait for it; the "
          "built-in kernels but the references refuse it", "[cpu-kernels][fp8]") {
  const StubKernel plain("plain");
  const Shape s = fp8_prefill(Shape{1, 8, 8, 256, 256, 128, true, DType::bf16});
  CHECK(k::support_reason(plain, s) == "plain runs fp16, bf16 and fp32 inputs only (no fp8 Q, K and V)");
  struct Fp8Only : StubKernel {
    using StubKernel::StubKernel;
    bool runs_fp8() const override { return true; }
  };
  const Fp8Only fp8("fp8-only");
  CHECK_FALSE(fp8.reads_quantized_kv());
  CHECK(k::support_reason(fp8, s).empty());
  // A quantized KV cache of a bf16 point still needs the quantized-KV trait.
  const Shape kv = with_kv_cache(Shape{1, 8, 8, 1, 256, 128, false, DType::bf16}, attnprof::core::KvDType::fp8_e4m3,
                                 attnprof::core::KvScale::tensor, 0);
  CHECK_THAT(k::support_reason(fp8, kv), Catch::Contains("no quantized KV cache"));
  for (const k::Kernel* kernel : k::all_registered()) {
    INFO(kernel->name() << " (" << to_string(kernel->backend()) << ")");
    if (kernel->name() == "reference") CHECK(kernel->runs_fp8());
    if (kernel->name() == "fused" || kernel->name() == "decode") CHECK_FALSE(kernel->runs_fp8());
    if (!kernel->runs_fp8()) CHECK_THAT(k::support_reason(*kernel, s), Catch::Contains("no fp8 Q, K and V"));
  }
}
