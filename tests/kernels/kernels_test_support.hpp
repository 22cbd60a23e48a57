// Shared by the host tests of kernels/: a stub kernel that keeps every default trait, a host problem
// (inputs from kernels/common/random.hpp, K and V as the shape stores them: contiguous or paged, fp32 or
// quantized; fp8 prefill's Q as bytes; NaN-filled outputs) with its float64 check, a stage-hook recorder, and the shape builders
// the CPU kernels' tests use.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/layout.hpp"
#include "kernels/common/paged.hpp"
#include "kernels/common/random.hpp"
#include "kernels/common/verify.hpp"
#include "kernels/cpu/kv_cache.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels_test {

using attnprof::core::DType;
using attnprof::core::Shape;
namespace k = attnprof::kernels;

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
  std::vector<float> q, k, v, o, lse, workspace;  // k and v: an unquantized cache (its pools when paged)
  std::vector<uint8_t> k_bytes, v_bytes;           // a quantized cache's K and V (core/shape.hpp),
  std::vector<float> k_scale, v_scale;             // and their scales
  std::vector<uint8_t> q_bytes;                    // fp8 prefill's Q (core/shape.hpp),
  float q_scale = 0;                               // and its scale
  std::vector<int32_t> block_table;                // a paged cache's (kernels/common/paged.hpp)
  std::vector<int32_t> cu_seqlens;
  k::AttentionArgs args;
  HostProblem(const Shape& s, const k::Kernel& kernel, uint64_t seed)
      : q(size_t(s.q_elems())), o(size_t(s.o_elems()), std::numeric_limits<float>::quiet_NaN()),
        lse(size_t(s.lse_elems()), std::numeric_limits<float>::quiet_NaN()),
        workspace(kernel.workspace_bytes(s) / sizeof(float)), block_table(k::shuffled_block_table(s, seed)) {
    args.shape = s;
    if (s.quantized_q()) {
      q.clear();
      q_bytes.resize(size_t(s.q_elems()));
      k::cpu::fill_q(s, seed, k::q_tensor_map(s, false), q_bytes.data(), &q_scale);
      args.q = q_bytes.data();
      args.q_scale = &q_scale;
    } else {
      for (size_t e = 0; e < q.size(); ++e) q[e] = k::input_value(seed, 0, e);
      args.q = q.data();
    }
    const int32_t* table = block_table.empty() ? nullptr : block_table.data();
    using k::cpu::KvTensor;
    if (s.quantized_kv()) {
      k_bytes.resize(size_t(s.kv_buffer_elems()));
      v_bytes.resize(size_t(s.v_buffer_elems()));
      k_scale.resize(size_t(s.kv_scale_elems()));
      v_scale.resize(size_t(s.kv_scale_elems()));
      k::cpu::fill_kv(s, seed, KvTensor::k, k::kv_tensor_map(s, false), table, k_bytes.data(), k_scale.data());
      k::cpu::fill_kv(s, seed, KvTensor::v, k::v_tensor_map(s, false), table, v_bytes.data(), v_scale.data());
      args.k = k_bytes.data();
      args.v = v_bytes.data();
      args.k_scale = k_scale.data();
      args.v_scale = v_scale.data();
    } else {
      k.resize(size_t(s.kv_buffer_elems()));
      v.resize(size_t(s.v_buffer_elems()));
      k::cpu::fill_kv(s, seed, KvTensor::k, k::kv_tensor_map(s, false), table, k.data(), nullptr);
      k::cpu::fill_kv(s, seed, KvTensor::v, k::v_tensor_map(s, false), table, v.data(), nullptr);
      args.k = k.data();
      args.v = v.data();
    }
    args.block_table = table;
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

// A backward problem (Shape::pass bwd or fwd_bwd): HostProblem's buffers (workspace sized for the
// backward), dO from tensor 3 and poisoned gradients. run() does what the measurement does: for bwd,
// the kernel's own forward first (untimed there) to fill O and LSE, then the call.
struct BackwardProblem {
  HostProblem p;
  std::vector<float> d_o, dq, dk, dv;
  BackwardProblem(const Shape& s, const k::Kernel& kernel, uint64_t seed)
      : p(s, kernel, seed), d_o(size_t(s.o_elems())), dq(size_t(s.q_elems()), std::numeric_limits<float>::quiet_NaN()),
        dk(size_t(s.kv_elems()), std::numeric_limits<float>::quiet_NaN()),
        dv(size_t(s.v_elems()), std::numeric_limits<float>::quiet_NaN()) {
    for (size_t e = 0; e < d_o.size(); ++e) d_o[e] = k::input_value(seed, 3, e);
    p.args.d_o = d_o.data();
    p.args.dq = dq.data();
    p.args.dk = dk.data();
    p.args.dv = dv.data();
  }
  void run(const k::Kernel& kernel, k::StageHook* hook = nullptr) {
    if (p.args.shape.pass == attnprof::core::Pass::bwd) {
      k::AttentionArgs forward = p.args;
      forward.shape.pass = attnprof::core::Pass::fwd;
      forward.d_o = nullptr;
      forward.dq = forward.dk = forward.dv = nullptr;
      kernel.launch(forward);
    }
    kernel.launch(p.args, hook);
  }
  // The forward check of O and LSE merged with the gradients' (as the CPU backend does).
  attnprof::core::Verification verify(const Shape& s, uint64_t seed, int max_rows = 400) const {
    attnprof::core::Verification v = p.verify(s, seed);
    int64_t unwritten = 0;
    for (const auto* t : {&dq, &dk, &dv})
      for (float x : *t) unwritten += !std::isfinite(x);
    const k::GradRows rows = k::grad_rows_to_check(s, max_rows, seed);
    auto gather = [](const std::vector<float>& t, const std::vector<int64_t>& rs, int64_t width) {
      std::vector<float> out;
      for (int64_t r : rs) out.insert(out.end(), t.begin() + r * width, t.begin() + (r + 1) * width);
      return out;
    };
    k::merge_grad_checks(v, k::verify_grads(s, seed, rows, p.o, p.lse, gather(dq, rows.q_rows, s.hdim),
                                            gather(dk, rows.kv_rows, s.hdim),
                                            gather(dv, rows.kv_rows, s.value_hdim()), unwritten));
    return v;
  }
};

inline Shape with_pass(Shape s, attnprof::core::Pass pass) {
  s.pass = pass;
  return s;
}

struct RecordingHook : k::StageHook {
  std::vector<int> events;
  void before_stage(int i) override { events.push_back(i); }
  void after_last() override { events.push_back(-1); }
};

inline Shape with_window(Shape s, int64_t window) {
  s.window = window;
  return s;
}

// A packed batch of these lengths (core/shape.hpp), validated.
inline Shape packed(std::vector<int64_t> lens, int64_t heads, int64_t kv_heads, int64_t hdim, bool causal, DType dtype,
                    int64_t window = 0) {
  Shape s{static_cast<int64_t>(lens.size()), heads, kv_heads, 1, 1, hdim, causal, dtype};
  s.seq_q = s.seq_k = *std::max_element(lens.begin(), lens.end());
  s.window = window;
  s.seq_lens = std::move(lens);
  s.lengths = "list:test";
  s.validate();
  return s;
}

inline Shape with_hdim_v(Shape s, int64_t hdim_v) {
  s.hdim_v = hdim_v;
  s.validate();
  return s;
}

// The KV cache stored as `t` with scales `g` (core/shape.hpp), in pages of `page_size` keys (0:
// contiguous), validated.
inline Shape with_kv_cache(Shape s, attnprof::core::KvDType t, attnprof::core::KvScale g, int64_t page_size) {
  s.kv_dtype = t;
  s.kv_scale = g;
  s.page_size = page_size;
  s.validate();
  return s;
}

// The fp8 prefill point of `s` (dtype fp8_e4m3, its K and V format implied: core/shape.hpp), validated.
inline Shape fp8_prefill(Shape s) {
  s.dtype = DType::fp8_e4m3;
  attnprof::core::imply_fp8_kv_format(s);
  s.validate();
  return s;
}

}  // namespace attnprof::kernels_test
