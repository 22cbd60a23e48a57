// kernels/cpu/reference.cpp: the materialised CPU reference (and the fused kernel beside it) against
// float64 on ragged shapes; its three stages reported to the hook in order; a short workspace refused.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/kernels_test_support.hpp"

using namespace attnprof::kernels_test;


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
