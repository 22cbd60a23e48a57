// kernels/catalogue.cpp: what `attnprof kernels` lists of a kernel, found by asking support_reason over
// the probe grid: the head dims and dtypes it runs, its traits as flags, what it does with causal, GQA,
// seq_q != seq_k, window, packed and hdim_v probes, and one refusal as an example.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/catalogue.hpp"
#include "kernels/kernels_test_support.hpp"

using namespace attnprof::kernels_test;

namespace {

// Runs head dims up to 128 in fp16 and bf16, square non-causal shapes without GQA only; asks for a
// zeroed workspace and writes no LSE.
struct Narrow final : StubKernel {
  Narrow() : StubKernel("narrow") {}
  std::string unsupported_reason(const Shape& s) const override {
    if (s.hdim > 128) return "narrow: hdim " + std::to_string(s.hdim) + " above 128";
    if (s.dtype == DType::fp32) return "narrow: no fp32";
    if (s.causal) return "narrow: no causal mask";
    if (s.kv_heads != s.heads) return "narrow: no GQA";
    if (s.seq_q != s.seq_k) return "narrow: square only";
    return {};
  }
  bool needs_zeroed_workspace() const override { return true; }
  bool writes_lse() const override { return false; }
};

// Runs everything a shape can ask for.
struct Everything final : StubKernel {
  Everything() : StubKernel("everything") {}
  bool masks_window() const override { return true; }
  bool runs_varlen() const override { return true; }
  bool runs_distinct_hdim_v() const override { return true; }
  bool runs_backward() const override { return true; }
};

// The same traits on the CUDA backend.
struct OnGpu final : StubKernel {
  OnGpu() : StubKernel("on-gpu") {}
  k::Backend backend() const override { return k::Backend::cuda; }
};

}  // namespace

TEST_CASE("catalogue: graph capture is a CUDA kernel's flag; a CPU kernel's would say nothing") {
  const Everything cpu;
  const OnGpu gpu;
  REQUIRE(cpu.graph_capturable());
  REQUIRE(gpu.graph_capturable());
  const auto entries = k::catalogue({&cpu, &gpu});
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].flags == std::vector<std::string>{"pure", "lse"});
  CHECK(entries[1].flags == std::vector<std::string>{"pure", "graph", "lse"});
}

TEST_CASE("catalogue: a narrow kernel's head dims, dtypes, flags, refused probes and first refusal") {
  const Narrow narrow;
  const auto entries = k::catalogue({&narrow});
  REQUIRE(entries.size() == 1);
  const k::CatalogueEntry& e = entries[0];
  CHECK(e.name == "narrow");
  CHECK(e.backend == "cpu");
  CHECK(e.origin == "built-in");
  CHECK(e.description == "a test stub");
  CHECK(e.layout == "bhsd");
  CHECK(e.flags == std::vector<std::string>{"pure", "zero-workspace"});  // no "graph": a CPU kernel
  CHECK(e.hdims == std::vector<int>{32, 64, 80, 96, 128});
  CHECK(e.dtypes == std::vector<std::string>{"fp16", "bf16"});
  CHECK_FALSE(e.causal);
  CHECK_FALSE(e.gqa);
  CHECK_FALSE(e.seq_q_ne_seq_k);
  CHECK_FALSE(e.window);  // refused by its traits before its own reason
  CHECK_FALSE(e.varlen);
  CHECK_FALSE(e.hdim_v);
  CHECK_FALSE(e.backward);  // the default: forward only
  CHECK(e.example_refusal == "narrow: no fp32");  // the first probe refused: hdim 32 in fp32
}

TEST_CASE("catalogue: a kernel that runs every probe has no example refusal; the CPU kernels are listed") {
  const Everything everything;
  const auto entries = k::catalogue({&everything});
  REQUIRE(entries.size() == 1);
  const k::CatalogueEntry& e = entries[0];
  CHECK(e.hdims == std::vector<int>{32, 64, 80, 96, 128, 192, 256});
  CHECK(e.dtypes == std::vector<std::string>{"fp16", "bf16", "fp32"});
  CHECK(e.flags == std::vector<std::string>{"pure", "lse"});
  CHECK((e.causal && e.gqa && e.seq_q_ne_seq_k && e.window && e.varlen && e.hdim_v && e.backward));
  CHECK(e.example_refusal.empty());

  const auto all = k::catalogue();
  CHECK(all.size() == k::all_registered().size());
  bool cpu_reference = false;
  for (const auto& entry : all) {
    if (entry.name != "reference" || entry.backend != "cpu") continue;
    cpu_reference = true;
    CHECK((entry.causal && entry.gqa && entry.window && entry.varlen && entry.hdim_v));
    CHECK(entry.backward);
  }
  CHECK(cpu_reference);
  for (const auto& entry : all)
    if (entry.name == "fused" && entry.backend == "cpu") CHECK(entry.backward);
}
