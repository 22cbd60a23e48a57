// kernels/cpu/reference.cpp: the materialised CPU reference (and the fused kernel beside it) against
// float64 on ragged shapes; its three stages reported to the hook in order; a short workspace refused;
// a paged and a quantized KV cache read through a first stage (gather_kv, dequant_kv), verified with
// what the quantization costs beside the kernel's own error; fp8 prefill (dequant_qkv) within its bound.
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

TEST_CASE("CPU reference and fused backward match float64: masks, windows, GQA, packed, hdim_v, every dtype",
          "[cpu-kernels][bwd]") {
  using attnprof::core::Pass;
  const std::vector<Shape> shapes = {
      Shape{1, 2, 2, 1, 1, 32, true, DType::bf16},
      Shape{2, 4, 2, 65, 65, 32, true, DType::bf16},      // GQA, row and key blocks with a tail
      Shape{1, 2, 1, 40, 130, 16, true, DType::fp16},     // causal, seq_k > seq_q
      Shape{1, 3, 1, 100, 37, 16, true, DType::fp32},     // causal, seq_k < seq_q: rows that see no key
      Shape{1, 2, 2, 70, 70, 64, false, DType::bf16},
      with_window(Shape{1, 2, 1, 90, 90, 32, true, DType::bf16}, 20),
      with_window(Shape{1, 2, 2, 50, 80, 32, false, DType::fp16}, 9),
      with_hdim_v(Shape{1, 4, 2, 48, 48, 32, true, DType::bf16}, 16),
      packed({33, 1, 70, 5}, 4, 2, 32, true, DType::bf16),
      packed({20, 64}, 2, 1, 16, false, DType::fp32, 7),
  };
  for (const char* name : {"reference", "fused"}) {
    const k::Kernel* kernel = k::find(k::Backend::cpu, name);
    REQUIRE(kernel);
    CHECK(kernel->runs_backward());
    uint64_t seed = 40;
    for (Pass pass : {Pass::bwd, Pass::fwd_bwd})
      for (const Shape& base : shapes) {
        const Shape s = with_pass(base, pass);
        INFO(name << " " << s.label());
        CHECK(k::support_reason(*kernel, s).empty());
        BackwardProblem b(s, *kernel, ++seed);
        b.run(*kernel);
        const auto v = b.verify(s, seed);
        CHECK(v.unwritten == 0);
        REQUIRE(v.grads.size() == 3);
        for (const auto& [grad, g] : v.grads) {
          INFO(grad << " err " << g.max_abs_err << " naive " << g.naive_max_abs_err << " tolerance " << g.tolerance);
          CHECK(g.rows_checked > 0);
          CHECK(g.passed);
          // Both round P and dS to the dtype as the naive low-precision backward does: its error, up to
          // fp32 summation order.
          if (s.dtype != DType::fp32) CHECK(g.max_abs_err <= 1.5 * g.naive_max_abs_err + g.tolerance / 100);
        }
        CHECK(v.passed);
      }
  }
}

TEST_CASE("CPU reference backward: its stages in order, the forward's first for fwd_bwd; a bwd call keeps O",
          "[cpu-kernels][bwd]") {
  using attnprof::core::Pass;
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const Shape s{1, 2, 1, 33, 33, 32, true, DType::bf16};
  CHECK(ref->stage_names(with_pass(s, Pass::bwd)) ==
        std::vector<std::string>{"bwd_qk_gemm", "bwd_softmax", "bwd_dv_gemm", "bwd_dp_gemm", "bwd_ds", "bwd_dq_gemm",
                                 "bwd_dk_gemm"});
  CHECK(ref->stage_names(with_pass(s, Pass::fwd_bwd)).size() == 10);
  CHECK(ref->stage_names(with_pass(s, Pass::fwd_bwd)).front() == "qk_gemm");
  CHECK(ref->workspace_bytes(with_pass(s, Pass::bwd)) == 2 * ref->workspace_bytes(s));

  BackwardProblem b(with_pass(s, Pass::bwd), *ref, 8);
  RecordingHook hook;
  b.run(*ref, &hook);
  CHECK(hook.events == std::vector<int>{0, 1, 2, 3, 4, 5, 6, -1});
  const std::vector<float> o_after_forward = b.p.o;
  b.run(*ref);  // forward again, then the backward: O unchanged by the backward
  CHECK(std::memcmp(o_after_forward.data(), b.p.o.data(), o_after_forward.size() * sizeof(float)) == 0);

  BackwardProblem fb(with_pass(s, Pass::fwd_bwd), *ref, 8);
  RecordingHook fb_hook;
  fb.run(*ref, &fb_hook);
  CHECK(fb_hook.events == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1});
  CHECK(fb.verify(with_pass(s, Pass::fwd_bwd), 8).passed);

}

TEST_CASE("CPU fused backward: its three stages, the forward's first for fwd_bwd; D in its workspace; a bwd call "
          "keeps O",
          "[cpu-kernels][bwd]") {
  using attnprof::core::Pass;
  const k::Kernel* fused = k::find(k::Backend::cpu, "fused");
  const Shape s{1, 2, 1, 70, 70, 32, true, DType::bf16};
  CHECK(fused->stage_names(s) == std::vector<std::string>{"fused"});
  CHECK(fused->stage_names(with_pass(s, Pass::bwd)) ==
        std::vector<std::string>{"bwd_preprocess", "bwd_dk_dv", "bwd_dq"});
  CHECK(fused->stage_names(with_pass(s, Pass::fwd_bwd)) ==
        std::vector<std::string>{"fwd", "bwd_preprocess", "bwd_dk_dv", "bwd_dq"});
  CHECK(fused->workspace_bytes(s) == 0);
  CHECK(fused->workspace_bytes(with_pass(s, Pass::bwd)) == sizeof(float) * 2 * 70);
  CHECK(fused->plan(with_pass(s, Pass::bwd)).at("dq_atomic") == 0);

  BackwardProblem b(with_pass(s, Pass::bwd), *fused, 9);
  RecordingHook hook;
  b.run(*fused, &hook);
  CHECK(hook.events == std::vector<int>{0, 1, 2, -1});
  const std::vector<float> o_after_forward = b.p.o;
  b.run(*fused);
  CHECK(std::memcmp(o_after_forward.data(), b.p.o.data(), o_after_forward.size() * sizeof(float)) == 0);
  CHECK(b.verify(with_pass(s, Pass::bwd), 9).passed);

  BackwardProblem fb(with_pass(s, Pass::fwd_bwd), *fused, 9);
  RecordingHook fb_hook;
  fb.run(*fused, &fb_hook);
  CHECK(fb_hook.events == std::vector<int>{0, 1, 2, 3, -1});
  CHECK(fb.verify(with_pass(s, Pass::fwd_bwd), 9).passed);

  // Without its workspace the call is refused rather than writing through a null D.
  k::AttentionArgs no_workspace = b.p.args;
  no_workspace.workspace = nullptr;
  no_workspace.workspace_bytes = 0;
  CHECK_THROWS_WITH(fused->launch(no_workspace), "cpu fused: workspace too small");
}

TEST_CASE("CPU reference backward: a gradient left unwritten or a wrong LSE fails the check", "[cpu-kernels][bwd]") {
  using attnprof::core::Pass;
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const Shape s = with_pass(Shape{1, 2, 1, 40, 40, 32, true, DType::bf16}, Pass::bwd);
  BackwardProblem b(s, *ref, 21);
  b.run(*ref);
  BackwardProblem skipped = b;
  skipped.dk.back() = std::numeric_limits<float>::quiet_NaN();  // the last key row never written
  const auto v = skipped.verify(s, 21);
  CHECK(v.unwritten == 1);
  CHECK_FALSE(v.passed);
  // A backward that read an LSE off by 0.1 (its forward's bug) computes P off by 10%: dV fails.
  BackwardProblem shifted(s, *ref, 21);
  k::AttentionArgs forward = shifted.p.args;
  forward.shape.pass = Pass::fwd;
  ref->launch(forward);
  for (float& x : shifted.p.lse) x += 0.1f;
  ref->launch(shifted.p.args);
  for (float& x : shifted.p.lse) x -= 0.1f;  // the check is handed the LSE the forward wrote
  CHECK_FALSE(shifted.verify(s, 21).grads.at("dv").passed);
}

using attnprof::core::KvDType;
using attnprof::core::KvScale;

TEST_CASE("CPU reference reads a paged or quantized KV cache: its first stage, workspace and traits",
          "[cpu-kernels][kv-cache]") {
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const k::Kernel* fused = k::find(k::Backend::cpu, "fused");
  CHECK(ref->reads_paged_kv());
  CHECK(ref->reads_quantized_kv());
  const Shape plain{2, 4, 2, 3, 70, 32, true, DType::bf16};
  const Shape paged = with_kv_cache(plain, KvDType::none, KvScale::tensor, 16);
  const Shape quantized = with_kv_cache(plain, KvDType::int8, KvScale::token, 16);
  const std::vector<std::string> forward = {"qk_gemm", "softmax", "pv_gemm"};
  CHECK(ref->stage_names(plain) == forward);
  CHECK(ref->stage_names(paged) == std::vector<std::string>{"gather_kv", "qk_gemm", "softmax", "pv_gemm"});
  CHECK(ref->stage_names(quantized) == std::vector<std::string>{"dequant_kv", "qk_gemm", "softmax", "pv_gemm"});
  CHECK(ref->stage_names(with_kv_cache(plain, KvDType::fp8_e4m3, KvScale::head, 0)).front() == "dequant_kv");
  // The contiguous fp32 K and V after S and P.
  const size_t copies = sizeof(float) * size_t(plain.kv_elems() + plain.v_elems());
  CHECK(ref->workspace_bytes(paged) == ref->workspace_bytes(plain) + copies);
  CHECK(ref->workspace_bytes(quantized) == ref->workspace_bytes(plain) + copies);

  for (const Shape& s : {paged, quantized}) {
    INFO(s.label());
    CHECK(k::support_reason(*ref, s).empty());
    HostProblem p(s, *ref, 17);
    RecordingHook hook;
    ref->launch(p.args, &hook);
    CHECK(hook.events == std::vector<int>{0, 1, 2, 3, -1});
    CHECK(p.verify(s, 17).passed);
    // A short workspace (without the copies) is refused, as are a missing table or missing scales.
    k::AttentionArgs short_ws = p.args;
    short_ws.workspace_bytes = ref->workspace_bytes(plain);
    CHECK_THROWS(ref->launch(short_ws));
    k::AttentionArgs no_table = p.args;
    no_table.block_table = nullptr;
    CHECK_THROWS_WITH(ref->launch(no_table), Catch::Contains("block table"));
  }
  HostProblem q(quantized, *ref, 18);
  q.args.v_scale = nullptr;
  CHECK_THROWS_WITH(ref->launch(q.args), Catch::Contains("scales"));

  // The fused CPU kernel reads contiguous K and V in the dtype only: the default traits say why.
  CHECK(k::support_reason(*fused, paged).find("no paged KV cache") != std::string::npos);
  CHECK(k::support_reason(*fused, with_kv_cache(plain, KvDType::fp8_e4m3, KvScale::head, 0)) ==
        "fused reads K and V in the dtype only (no quantized KV cache) (kv_dtype fp8_e4m3)");
}

TEST_CASE("CPU reference on a paged cache computes what it computes on the contiguous one, bit for bit",
          "[cpu-kernels][kv-cache]") {
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  for (const Shape& plain : {Shape{2, 4, 2, 5, 100, 32, true, DType::bf16}, Shape{1, 8, 1, 1, 257, 64, false, DType::fp16},
                             with_window(Shape{2, 2, 2, 4, 90, 16, true, DType::fp32}, 20)})
    for (int64_t page : {1, 16, 64, 300}) {
      const Shape paged = with_kv_cache(plain, KvDType::none, KvScale::tensor, page);
      INFO(paged.label());
      HostProblem contiguous(plain, *ref, 31), pages(paged, *ref, 31);
      ref->launch(contiguous.args);
      ref->launch(pages.args);
      CHECK(pages.o == contiguous.o);
      CHECK(pages.lse == contiguous.lse);
      const auto v = pages.verify(paged, 31);
      CHECK(v.passed);
      CHECK_FALSE(v.quant.checked);
    }
}

TEST_CASE("CPU reference on quantized KV caches passes float64 of the dequantized inputs; the quantization's cost "
          "beside it", "[cpu-kernels][kv-cache]") {
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const std::vector<Shape> bases = {
      Shape{2, 8, 2, 1, 300, 64, false, DType::bf16},  // decode, GQA 8/2
      Shape{1, 4, 1, 4, 200, 32, true, DType::fp16},   // speculative decode, causal, GQA 4/1
      Shape{1, 2, 2, 65, 65, 32, true, DType::bf16},   // prefill, causal
  };
  uint64_t seed = 70;
  for (const Shape& base : bases)
    for (KvDType t : {KvDType::fp8_e4m3, KvDType::int8})
      for (KvScale g : {KvScale::tensor, KvScale::head, KvScale::token})
        for (int64_t page : {0, 16}) {
          const Shape s = with_kv_cache(base, t, g, page);
          INFO(s.label());
          HostProblem p(s, *ref, ++seed);
          ref->launch(p.args);
          const auto v = p.verify(s, seed);
          INFO("err " << v.o_max_abs_err << " tolerance " << v.tolerance << " quant " << v.quant.o_max_abs_err);
          CHECK(v.unwritten == 0);
          CHECK(v.passed);
          CHECK(v.o_max_abs_err <= v.tolerance);
          REQUIRE(v.quant.checked);
          CHECK(v.quant.o_max_abs_err > 0);
          CHECK(v.quant.o_mean_abs_err > 0);
          CHECK(v.quant.o_mean_abs_err <= v.quant.o_max_abs_err);
          CHECK(v.quant.o_max_rel_err > 0);
          CHECK(v.quant.o_max_rel_err < 0.1);
        }
  // A packed batch's cache, contiguous (a paged packed batch is impossible), with a window.
  for (KvScale g : {KvScale::head, KvScale::token}) {
    const Shape s = with_kv_cache(packed({33, 1, 70}, 4, 2, 32, true, DType::bf16, 20), KvDType::fp8_e4m3, g, 0);
    INFO(s.label());
    HostProblem p(s, *ref, ++seed);
    ref->launch(p.args);
    const auto v = p.verify(s, seed);
    CHECK(v.passed);
    CHECK(v.quant.checked);
    CHECK(v.quant.o_max_abs_err > 0);
  }
}

TEST_CASE("what quantization costs: fp8 E4M3 per tensor several times int8 per token, both a few percent at most",
          "[cpu-kernels][kv-cache]") {
  // Here (seed 77) 6.0e-3 against 1.4e-3 (max), 1.5e-3 against 2.3e-4 (mean): fp8 keeps 3 mantissa bits,
  // int8 about 7 at the scale of a row's largest element (docs/verification.md#quantized-kv-cache).
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const Shape base{2, 8, 2, 1, 1024, 128, false, DType::bf16};
  auto cost = [&](KvDType t, KvScale g) {
    const Shape s = with_kv_cache(base, t, g, 0);
    HostProblem p(s, *ref, 77);
    ref->launch(p.args);
    const auto v = p.verify(s, 77);
    CHECK(v.passed);
    return v.quant;
  };
  const auto fp8 = cost(KvDType::fp8_e4m3, KvScale::tensor), int8 = cost(KvDType::int8, KvScale::token);
  INFO("fp8/tensor " << fp8.o_max_abs_err << " / " << fp8.o_mean_abs_err << ", int8/token " << int8.o_max_abs_err
                     << " / " << int8.o_mean_abs_err);
  CHECK(fp8.o_mean_abs_err > 3 * int8.o_mean_abs_err);
  CHECK(fp8.o_max_abs_err > 2 * int8.o_max_abs_err);
  CHECK(fp8.o_max_rel_err > 0.01);
  CHECK(fp8.o_max_rel_err < 0.1);
  CHECK(int8.o_max_rel_err > 0.001);
  CHECK(int8.o_max_rel_err < 0.02);
}

TEST_CASE("CPU reference runs fp8 prefill: dequant_qkv first, Q, K and V copies in its workspace; the CPU fused "
          "kernel says why not", "[cpu-kernels][fp8]") {
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const k::Kernel* fused = k::find(k::Backend::cpu, "fused");
  CHECK(ref->runs_fp8());
  CHECK_FALSE(fused->runs_fp8());
  const Shape plain{2, 4, 2, 30, 70, 32, true, DType::bf16};
  const Shape s = fp8_prefill(plain);
  CHECK(k::support_reason(*ref, s).empty());
  CHECK_THAT(k::support_reason(*fused, s), Catch::Contains("no fp8 Q, K and V"));
  CHECK(ref->stage_names(s) == std::vector<std::string>{"dequant_qkv", "qk_gemm", "softmax", "pv_gemm"});
  const size_t copies = sizeof(float) * size_t(s.q_elems() + s.kv_elems() + s.v_elems());
  CHECK(ref->workspace_bytes(s) == ref->workspace_bytes(plain) + copies);

  HostProblem p(s, *ref, 5);
  CHECK(p.args.q_scale != nullptr);
  CHECK(p.args.k_scale != nullptr);
  RecordingHook hook;
  ref->launch(p.args, &hook);
  CHECK(hook.events == std::vector<int>{0, 1, 2, 3, -1});
  const auto v = p.verify(s, 5);
  CHECK(v.passed);
  // O is rounded to bf16 (Shape::out_dtype), as the CUDA reference writes it.
  for (float x : p.o) CHECK(k::round_to(DType::bf16, x) == x);
  // Without Q's scale, or a workspace without its copies, the call is refused.
  k::AttentionArgs no_scale = p.args;
  no_scale.q_scale = nullptr;
  CHECK_THROWS(ref->launch(no_scale));
  k::AttentionArgs short_ws = p.args;
  short_ws.workspace_bytes = ref->workspace_bytes(plain);
  CHECK_THROWS(ref->launch(short_ws));
}

TEST_CASE("CPU reference on fp8 prefill passes each O element's bound, dense, GQA, causal and packed; "
          "what quantizing costs against the bf16 twin beside it", "[cpu-kernels][fp8]") {
  const k::Kernel* ref = k::find(k::Backend::cpu, "reference");
  const std::vector<Shape> shapes = {
      fp8_prefill(Shape{2, 4, 4, 64, 64, 64, false, DType::bf16}),    // dense, not causal
      fp8_prefill(Shape{1, 8, 2, 200, 200, 128, true, DType::bf16}),  // GQA 8/2, causal
      fp8_prefill(Shape{1, 4, 1, 33, 300, 64, true, DType::bf16}),    // seq_q < seq_k, MQA
      fp8_prefill(Shape{1, 2, 2, 40, 40, 128, true, DType::fp16}),    // the dtype's twin is bf16 whatever
      fp8_prefill(packed({33, 1, 70, 128}, 4, 2, 64, true, DType::bf16)),
      fp8_prefill(packed({50, 90}, 4, 4, 32, false, DType::bf16, 24)),  // packed, windowed
      fp8_prefill(with_hdim_v(Shape{1, 2, 2, 48, 48, 64, true, DType::bf16}, 32)),
  };
  uint64_t seed = 300;
  for (const Shape& s : shapes) {
    INFO(s.label());
    HostProblem p(s, *ref, ++seed);
    ref->launch(p.args);
    const auto v = p.verify(s, seed);
    INFO("err " << v.o_max_abs_err << " largest bound " << v.tolerance << " ratio " << v.o_max_bound_ratio.value_or(-1)
                << " quant " << v.quant.o_max_abs_err);
    CHECK(v.unwritten == 0);
    CHECK(v.passed);
    REQUIRE(v.o_max_bound_ratio.has_value());
    CHECK(*v.o_max_bound_ratio < 0.5);  // P and O in bf16: well inside a bound made for P in E4M3
    CHECK(v.lse_max_abs_err < 1e-3);
    REQUIRE(v.quant.checked);
    CHECK(v.quant.o_max_abs_err > 0);
    CHECK(v.quant.o_mean_abs_err <= v.quant.o_max_abs_err);
    CHECK(v.quant.o_max_rel_err > 0);
    CHECK(v.quant.o_max_rel_err < 0.2);
  }
}
