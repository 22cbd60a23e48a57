// measure/cpu_backend.cpp end to end: measuring the CPU kernels, refusals, its host, its ceilings.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/sweep_spec.hpp"
#include "kernels/registry.hpp"
#include "measure/backend.hpp"
#include "measure/ceilings_cache.hpp"
#include "measure/cpu_backend.hpp"
#include "measure/measure_test_support.hpp"

using attnprof::core::DType;
using attnprof::core::Shape;
using attnprof::core::Status;
namespace m = attnprof::measure;
namespace fs = std::filesystem;

namespace {

using attnprof::measure_test::scratch_cache_dir;

Shape small_shape(bool causal) { return attnprof::measure_test::bf16_shape(2, 4, 2, 96, 128, causal); }
m::MeasureOptions quick_options() { return attnprof::measure_test::quick_options(30); }

}  // namespace

TEST_CASE("CPU backend measures the reference with verified output and stages", "[cpu-backend]") {
  auto backend = m::make_cpu_backend();
  const auto* kernel = attnprof::kernels::find(attnprof::kernels::Backend::cpu, "reference");
  REQUIRE(kernel);
  const auto rec = backend->measure(small_shape(true), *kernel, quick_options());
  INFO(rec.reason);
  REQUIRE(rec.status == Status::ok);
  CHECK(rec.backend == attnprof::core::BackendKind::cpu);
  CHECK(rec.kernel == "reference");
  CHECK(rec.samples_us.size() >= 5);
  CHECK(rec.latency.n == int64_t(rec.samples_us.size()));
  CHECK(rec.latency.p50_us > 0);
  CHECK(rec.cost.flops > 0);
  CHECK(rec.tflops > 0);
  CHECK(rec.timing_mode == attnprof::core::TimingMode::cold);
  CHECK(rec.verification.checked);
  CHECK(rec.verification.passed);
  CHECK(rec.verification.seed != 0);
  CHECK(rec.verification.rows_total == 2 * 4 * 96);
  CHECK(rec.counters.status == attnprof::core::CounterStatus::unavailable);
  CHECK(rec.wall_s > 0);
  REQUIRE(rec.stages.size() == 3);
  CHECK(rec.stages[0].name == "qk_gemm");
  CHECK(rec.stages[2].name == "pv_gemm");
  double share50 = 0, share99 = 0;
  for (const auto& st : rec.stages) {
    CHECK(st.samples_us.size() == rec.samples_us.size());
    share50 += st.share_of_p50;
    share99 += st.share_of_p99;
  }
  CHECK(share50 == Approx(1.0).epsilon(1e-9));
  CHECK(share99 == Approx(1.0).epsilon(1e-9));
  // Stages partition the call: their P50s add up to about the total's.
  CHECK(rec.stages[0].p50_us + rec.stages[1].p50_us + rec.stages[2].p50_us <= rec.latency.p99_us * 1.5);
}

TEST_CASE("CPU backend measures the fused kernel warm, with a fixed seed", "[cpu-backend]") {
  auto backend = m::make_cpu_backend();
  const auto* kernel = attnprof::kernels::find(attnprof::kernels::Backend::cpu, "fused");
  REQUIRE(kernel);
  auto options = quick_options();
  options.cold_l2 = false;
  options.seed = 1234;
  const auto rec = backend->measure(small_shape(false), *kernel, options);
  INFO(rec.reason);
  REQUIRE(rec.status == Status::ok);
  CHECK(rec.timing_mode == attnprof::core::TimingMode::warm);
  CHECK(rec.verification.seed == 1234);
  CHECK(rec.verification.passed);
  CHECK(rec.stages.empty());
}

TEST_CASE("CPU backend refuses points that do not fit and never throws", "[cpu-backend]") {
  auto backend = m::make_cpu_backend();
  const auto* ref = attnprof::kernels::find(attnprof::kernels::Backend::cpu, "reference");
  Shape huge = small_shape(false);
  huge.batch = 1;
  huge.heads = huge.kv_heads = 1;
  huge.seq_q = huge.seq_k = int64_t{1} << 20;  // S alone would be 4 TiB
  const auto oom = backend->measure(huge, *ref, quick_options());
  CHECK(oom.status == Status::oom);
  CHECK(oom.reason.find("GiB") != std::string::npos);
  CHECK(oom.samples_us.empty());

  Shape bad = small_shape(false);
  bad.kv_heads = 3;  // does not divide heads
  const auto failed = backend->measure(bad, *ref, quick_options());
  CHECK(failed.status == Status::failed);
  CHECK(failed.reason.find("kv_heads") != std::string::npos);
}

TEST_CASE("CPU backend describes its host", "[cpu-backend]") {
  const auto host = m::read_host_info();
  CHECK(host.threads >= 1);
  CHECK(host.mem_total_bytes > 0);
  CHECK(host.mem_available_bytes > 0);
  auto backend = m::make_cpu_backend();
  const auto info = backend->device_info();
  CHECK(info.name.rfind("CPU: ", 0) == 0);
  CHECK(info.sm_count == host.threads);
  CHECK(backend->kernels().size() >= 2);
}

TEST_CASE("CPU backend ceilings: a corrupt cache is re-measured, then read back", "[ceilings-cache]") {
  const fs::path dir = scratch_cache_dir();
  fs::create_directories(dir);
  const fs::path file = dir / (m::cpu_ceilings_key(m::read_host_info()) + ".json");
  std::ofstream(file) << "garbage";
  auto backend = m::make_cpu_backend();
  const auto measured = backend->ceilings(false);
  CHECK(measured.source == "measured");
  CHECK(measured.peak_bw_bytes_per_s > 1e8);
  CHECK(measured.peak_flops_per_s.at("fp32") > 1e8);
  CHECK(measured.peak_flops_per_s.at("bf16") == measured.peak_flops_per_s.at("fp32"));
  REQUIRE(m::load_ceilings(m::cpu_ceilings_key(m::read_host_info())).has_value());

  auto fresh = m::make_cpu_backend();
  const auto cached = fresh->ceilings(false);
  CHECK(cached.peak_bw_bytes_per_s == measured.peak_bw_bytes_per_s);
  CHECK(cached.peak_flops_per_s == measured.peak_flops_per_s);
  fs::remove_all(dir);
}

// Deliberately wrong kernels: one writes zeros, one writes nothing.
using attnprof::measure_test::WrongKernel;
using attnprof::measure_test::Writes;

TEST_CASE("CPU backend flags wrong and unwritten outputs as incorrect, and still times them", "[cpu-backend]") {
  auto backend = m::make_cpu_backend();
  const WrongKernel zeros("zeros", Writes::zeros), silent("silent", Writes::nothing);
  const auto wrong = backend->measure(small_shape(false), zeros, quick_options());
  CHECK(wrong.status == Status::incorrect);
  CHECK(wrong.reason.find("verification failed") != std::string::npos);
  CHECK_FALSE(wrong.verification.passed);
  CHECK(wrong.verification.unwritten == 0);
  CHECK(wrong.verification.o_max_abs_err > wrong.verification.tolerance);
  CHECK_FALSE(wrong.samples_us.empty());

  const auto unwritten = backend->measure(small_shape(false), silent, quick_options());
  CHECK(unwritten.status == Status::incorrect);
  CHECK(unwritten.verification.unwritten == small_shape(false).q_elems() + small_shape(false).lse_elems());
}

namespace {

// The CPU fused kernel behind the BSHD layout ([batch, seq, heads, hdim]; V and O hdim_v wide): it
// transposes its inputs to BHSD, runs, and transposes O back, so the CPU backend's BSHD maps of V and
// O are what it is checked through.
class BshdFused final : public attnprof::kernels::Kernel {
 public:
  std::string name() const override { return "bshd-fused"; }
  attnprof::kernels::Backend backend() const override { return attnprof::kernels::Backend::cpu; }
  attnprof::core::KernelKind kind() const override { return attnprof::core::KernelKind::fused; }
  std::string description() const override { return "test: the CPU fused kernel behind BSHD"; }
  std::string unsupported_reason(const Shape&) const override { return {}; }
  size_t workspace_bytes(const Shape&) const override { return 0; }
  attnprof::kernels::Layout layout() const override { return attnprof::kernels::Layout::bshd; }
  bool runs_distinct_hdim_v() const override { return true; }
  void launch(const attnprof::kernels::AttentionArgs& a, attnprof::kernels::StageHook*) const override {
    const Shape& s = a.shape;
    // BSHD element (b, j, h, d) of a [batch, seq, heads, width] tensor <-> BHSD (b, h, j, d).
    const auto transpose = [&](const float* in, int64_t heads, int64_t seq, int64_t width, bool to_bhsd) {
      std::vector<float> out(static_cast<size_t>(s.batch * heads * seq * width));
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t j = 0; j < seq; ++j)
            for (int64_t d = 0; d < width; ++d) {
              const int64_t bhsd = ((b * heads + h) * seq + j) * width + d;
              const int64_t bshd = ((b * seq + j) * heads + h) * width + d;
              out[static_cast<size_t>(to_bhsd ? bhsd : bshd)] = in[to_bhsd ? bshd : bhsd];
            }
      return out;
    };
    const int64_t dv = s.value_hdim();
    auto q = transpose(static_cast<const float*>(a.q), s.heads, s.seq_q, s.hdim, true);
    auto k = transpose(static_cast<const float*>(a.k), s.kv_heads, s.seq_k, s.hdim, true);
    auto v = transpose(static_cast<const float*>(a.v), s.kv_heads, s.seq_k, dv, true);
    std::vector<float> o(static_cast<size_t>(s.o_elems()));
    attnprof::kernels::AttentionArgs inner = a;
    inner.layout = attnprof::kernels::Layout::bhsd;
    inner.q = q.data();
    inner.k = k.data();
    inner.v = v.data();
    inner.o = o.data();
    attnprof::kernels::find(attnprof::kernels::Backend::cpu, "fused")->launch(inner);
    const auto back = transpose(o.data(), s.heads, s.seq_q, dv, false);
    std::copy(back.begin(), back.end(), static_cast<float*>(a.o));
  }
};

}  // namespace

TEST_CASE("CPU backend: a value head dim of its own, verified in both layouts; undeclared kernels refused",
          "[cpu-backend][hdim_v]") {
  auto backend = m::make_cpu_backend();
  Shape s = attnprof::measure_test::bf16_shape(2, 4, 2, 70, 90, true);
  const int64_t hdim = s.hdim;
  for (const int64_t dv : {hdim / 2, hdim * 2}) {
    s.hdim_v = dv;
    const BshdFused bshd;
    for (const attnprof::kernels::Kernel* kernel :
         {attnprof::kernels::find(attnprof::kernels::Backend::cpu, "reference"),
          attnprof::kernels::find(attnprof::kernels::Backend::cpu, "fused"),
          static_cast<const attnprof::kernels::Kernel*>(&bshd)}) {
      REQUIRE(kernel);
      const auto rec = backend->measure(s, *kernel, quick_options());
      INFO(kernel->name() << " " << s.label() << ": " << rec.reason);
      REQUIRE(rec.status == Status::ok);
      CHECK(rec.verification.passed);
      CHECK(rec.verification.unwritten == 0);
      CHECK(rec.shape.value_hdim() == dv);
      CHECK(rec.cost.flops == attnprof::core::cost_of(s, kernel->kind()).flops);
      CHECK(rec.cost.flops == 2.0 * 2 * 4 * attnprof::core::unmasked_scores(s) * static_cast<double>(hdim + dv));
    }
    const WrongKernel plain("one-width", Writes::zeros);
    const auto refused = backend->measure(s, plain, quick_options());
    CHECK(refused.status == Status::unsupported);
    CHECK(refused.reason.find("value head dim " + std::to_string(dv) + " differs") != std::string::npos);
  }
}

namespace {

// The CPU reference with one fault in its backward: dK's first element off by `dk_offset`, or dV
// never written; its forward (pass fwd) untouched. Counts the forward calls it gets.
class FaultyBackward final : public attnprof::kernels::Kernel {
 public:
  FaultyBackward(std::string name, float dk_offset, bool skip_dv)
      : name_(std::move(name)), dk_offset_(dk_offset), skip_dv_(skip_dv) {}
  std::string name() const override { return name_; }
  attnprof::kernels::Backend backend() const override { return attnprof::kernels::Backend::cpu; }
  attnprof::core::KernelKind kind() const override { return attnprof::core::KernelKind::materialized; }
  std::string description() const override { return "test: the CPU reference with a faulty backward"; }
  std::string unsupported_reason(const Shape&) const override { return {}; }
  size_t workspace_bytes(const Shape& s) const override { return reference().workspace_bytes(s); }
  std::vector<std::string> stage_names(const Shape& s) const override { return reference().stage_names(s); }
  bool runs_backward() const override { return true; }
  void launch(const attnprof::kernels::AttentionArgs& a, attnprof::kernels::StageHook* hook) const override {
    if (!a.shape.backward()) ++forward_calls;
    std::vector<float> dv_kept;
    if (a.shape.backward() && skip_dv_) {
      const auto* dv = static_cast<const float*>(a.dv);
      dv_kept.assign(dv, dv + a.shape.v_elems());
    }
    reference().launch(a, hook);
    if (!a.shape.backward()) return;
    static_cast<float*>(a.dk)[0] += dk_offset_;
    if (skip_dv_) std::copy(dv_kept.begin(), dv_kept.end(), static_cast<float*>(a.dv));
  }
  mutable int forward_calls = 0;

 private:
  static const attnprof::kernels::Kernel& reference() {
    return *attnprof::kernels::find(attnprof::kernels::Backend::cpu, "reference");
  }
  std::string name_;
  float dk_offset_;
  bool skip_dv_;
};

// The CPU reference as a kernel that writes no LSE (as a Python callable): its LSE stays in a buffer of
// its own, and attnprof's LSE buffer keeps its NaN poison.
class NoLseBackward final : public attnprof::kernels::Kernel {
 public:
  std::string name() const override { return "bwd-no-lse"; }
  attnprof::kernels::Backend backend() const override { return attnprof::kernels::Backend::cpu; }
  attnprof::core::KernelKind kind() const override { return attnprof::core::KernelKind::materialized; }
  std::string description() const override { return "test: the CPU reference keeping its LSE to itself"; }
  std::string unsupported_reason(const Shape&) const override { return {}; }
  size_t workspace_bytes(const Shape& s) const override { return reference().workspace_bytes(s); }
  bool runs_backward() const override { return true; }
  bool writes_lse() const override { return false; }
  void launch(const attnprof::kernels::AttentionArgs& a, attnprof::kernels::StageHook* hook) const override {
    // A bwd call reads the LSE its own forward kept; a forward or fwd_bwd call writes it there.
    attnprof::kernels::AttentionArgs own = a;
    lse_.resize(static_cast<size_t>(a.shape.lse_elems()));
    own.lse = lse_.data();
    reference().launch(own, hook);
  }

 private:
  static const attnprof::kernels::Kernel& reference() {
    return *attnprof::kernels::find(attnprof::kernels::Backend::cpu, "reference");
  }
  mutable std::vector<float> lse_;
};

Shape with_pass(Shape s, attnprof::core::Pass pass) {
  s.pass = pass;
  return s;
}

}  // namespace

TEST_CASE("CPU backend: a kernel that writes no LSE has its gradients checked against the float64 forward's LSE",
          "[cpu-backend][bwd]") {
  using attnprof::core::Pass;
  auto backend = m::make_cpu_backend();
  const NoLseBackward kernel;
  for (Pass pass : {Pass::bwd, Pass::fwd_bwd}) {
    const Shape s = with_pass(small_shape(true), pass);
    INFO(s.label());
    const auto rec = backend->measure(s, kernel, quick_options());
    INFO(rec.reason);
    CHECK(rec.status == Status::ok);
    CHECK_FALSE(rec.verification.lse_checked);
    REQUIRE(rec.verification.grads.size() == 3);
    for (const auto& [name, g] : rec.verification.grads) {
      INFO(name << " err " << g.max_abs_err << " tolerance " << g.tolerance);
      CHECK(g.passed);
    }
  }
}

TEST_CASE("CPU backend: backward points run the forward once untimed, verify the gradients, time the backward",
          "[cpu-backend][bwd]") {
  using attnprof::core::Pass;
  auto backend = m::make_cpu_backend();
  const FaultyBackward correct("bwd-ok", 0.0f, false);
  for (Pass pass : {Pass::bwd, Pass::fwd_bwd}) {
    const Shape s = with_pass(small_shape(true), pass);
    INFO(s.label());
    correct.forward_calls = 0;
    const auto rec = backend->measure(s, correct, quick_options());
    INFO(rec.reason);
    REQUIRE(rec.status == Status::ok);
    // bwd: the one untimed forward fills O and LSE; every timed call is a backward alone.
    CHECK(correct.forward_calls == (pass == Pass::bwd ? 1 : 0));
    CHECK(rec.verification.passed);
    REQUIRE(rec.verification.grads.size() == 3);
    for (const auto& [name, g] : rec.verification.grads) {
      INFO(name);
      CHECK(g.passed);
      CHECK(g.rows_checked > 0);
      CHECK(g.max_abs_err <= g.tolerance);
    }
    CHECK(rec.verification.grads.at("dk").rows_total == 2 * 2 * 128);  // key rows: batch x kv_heads x seq_k
    CHECK(rec.cost.flops == attnprof::core::cost_of(s, attnprof::core::KernelKind::materialized).flops);
    CHECK(rec.tflops == Approx(rec.cost.flops / (rec.latency.p50_us * 1e-6) / 1e12));
    REQUIRE(rec.stages.size() == (pass == Pass::bwd ? 7u : 10u));
    CHECK(rec.stages.back().name == "bwd_dk_gemm");
  }

  const FaultyBackward off("bwd-dk-off", 0.5f, false), silent("bwd-dv-unwritten", 0.0f, true);
  const Shape s = with_pass(small_shape(false), Pass::bwd);
  const auto wrong = backend->measure(s, off, quick_options());
  CHECK(wrong.status == Status::incorrect);
  CHECK_FALSE(wrong.verification.grads.at("dk").passed);
  CHECK(wrong.verification.grads.at("dq").passed);
  CHECK(wrong.reason.find("max |dk - dk_f64|") != std::string::npos);
  CHECK_FALSE(wrong.samples_us.empty());
  const auto unwritten = backend->measure(s, silent, quick_options());
  CHECK(unwritten.status == Status::incorrect);
  CHECK(unwritten.verification.unwritten == s.v_elems());

  // The fused CPU kernel's backward, through the same steps: verified, timed, its three stages.
  const auto* fused = attnprof::kernels::find(attnprof::kernels::Backend::cpu, "fused");
  const auto tiled = backend->measure(s, *fused, quick_options());
  CHECK(tiled.status == Status::ok);
  CHECK(tiled.verification.passed);
  CHECK(tiled.verification.grads.size() == 3);
  CHECK(tiled.stages.size() == 3);
  CHECK_FALSE(tiled.samples_us.empty());
}

TEST_CASE("CPU backend: paged and quantized KV caches through the reference, verified with the quantization's cost",
          "[cpu-backend][kv-cache]") {
  auto backend = m::make_cpu_backend();
  const auto* ref = attnprof::kernels::find(attnprof::kernels::Backend::cpu, "reference");
  const auto* fused = attnprof::kernels::find(attnprof::kernels::Backend::cpu, "fused");
  // Decode-like: 4 query rows against 300 keys in 64-key pages (the last page of each sequence padded).
  const std::string base = "batch=2,heads=4,kv_heads=2,seq_q=4,seq_k=300,hdim=64,causal=1,dtype=bf16";
  struct Case {
    std::string cache;
    const char* first_stage;
  };
  for (const Case& c : {Case{"page_size=64", "gather_kv"}, Case{"kv_dtype=fp8_e4m3,kv_scale=head", "dequant_kv"},
                        Case{"page_size=64,kv_dtype=int8,kv_scale=token", "dequant_kv"}}) {
    const Shape s = attnprof::core::parse_shape(base + "," + c.cache);
    const auto rec = backend->measure(s, *ref, quick_options());
    INFO(s.label() << ": " << rec.reason);
    REQUIRE(rec.status == Status::ok);
    CHECK(rec.verification.passed);
    CHECK(rec.verification.unwritten == 0);
    CHECK(rec.verification.quant.checked == s.quantized_kv());
    if (s.quantized_kv()) CHECK(rec.verification.quant.o_max_abs_err > 0);
    REQUIRE(rec.stages.size() == 4);
    CHECK(rec.stages[0].name == c.first_stage);
    CHECK(rec.cost.min_bytes_read == attnprof::core::cost_of(s, attnprof::core::KernelKind::materialized).min_bytes_read);
    // The fused CPU kernel reads contiguous K and V in the dtype only: refused before anything runs.
    const auto refused = backend->measure(s, *fused, quick_options());
    CHECK(refused.status == Status::unsupported);
    CHECK(refused.reason.find(s.quantized_kv() ? "no quantized KV cache" : "no paged KV cache") != std::string::npos);
    CHECK(refused.samples_us.empty());
  }

  // A point too large for the host is refused by what the CPU backend would allocate: K and V one byte an
  // element with their scales, Q, O and LSE in fp32, and the reference's workspace (S, P and the
  // contiguous fp32 copies of K and V).
  const Shape huge = attnprof::core::parse_shape("seq_q=1,seq_k=2147483648,hdim=128,kv_dtype=int8,kv_scale=token");
  const double kv = 2.0 * double(huge.kv_elems()), rows = double(huge.kv_elems() / 128);
  const double need = kv + 2 * 4 * rows + 4.0 * double(huge.q_elems() + huge.o_elems() + huge.lse_elems()) +
                      double(ref->workspace_bytes(huge));
  REQUIRE(need >= attnprof::core::footprint_bytes(huge, attnprof::core::KernelKind::materialized));
  const auto oom = backend->measure(huge, *ref, quick_options());
  REQUIRE(oom.status == Status::oom);
  CHECK(oom.reason.find(fmt::format("needs {:.2f} GiB", need / 1073741824.0)) != std::string::npos);
}
