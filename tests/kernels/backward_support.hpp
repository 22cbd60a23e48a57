// What the backward kernels' GPU tests share (tests/kernels/fused/test_fused_bwd_kernel.cpp,
// tests/kernels/fused_sm90/test_fused_sm90_bwd.cpp): the float64 backward computed on the host from the
// kernel's own inputs, the same backward done naively in the dtype, and the check of one kernel's dQ, dK
// and dV against them. Each gradient passes FlashAttention's rule: max error at most 2x that of the naive
// backward (P and dS rounded to the dtype, fp32 sums, the gradient rounded) plus half an ulp of the dtype
// at the gradient's largest magnitude.
#pragma once
#include <catch2/catch.hpp>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/common/random.hpp"
#include "kernels/common/verify.hpp"
#include "kernels/cuda_kernel_check.hpp"

namespace attnprof::gpu_test::backward {

using attnprof::core::DType;
using attnprof::core::Pass;
using attnprof::core::Shape;
namespace kn = attnprof::kernels;

inline constexpr int kDoTensor = 3;  // dO's tensor index in kernels/common/random.hpp

inline void cuda_ok(cudaError_t status, const char* what) {
  INFO(what << ": " << cudaGetErrorString(status));
  REQUIRE(status == cudaSuccess);
}

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { cuda_ok(cudaMalloc(&ptr, bytes > 0 ? bytes : 1), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr(other.ptr) { other.ptr = nullptr; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

inline uint16_t to_bits(DType t, float x) {
  if (t == DType::bf16) {
    const __nv_bfloat16 h = __float2bfloat16_rn(x);
    return *reinterpret_cast<const uint16_t*>(&h);
  }
  const __half h = __float2half_rn(x);
  return *reinterpret_cast<const uint16_t*>(&h);
}

inline float from_bits(DType t, uint16_t bits) {
  if (t == DType::bf16) return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(&bits));
  return __half2float(*reinterpret_cast<const __half*>(&bits));
}

// Tensor `tensor`'s values in the kernels' layout (bhsd, or head-major packed): element e is
// input_value(seed, tensor, e), exact in every dtype.
inline std::vector<float> input(uint64_t seed, int tensor, int64_t elems) {
  std::vector<float> out(static_cast<size_t>(elems));
  for (int64_t e = 0; e < elems; ++e) out[static_cast<size_t>(e)] = kn::input_value(seed, tensor, static_cast<uint64_t>(e));
  return out;
}

inline DeviceBuffer upload(DType t, const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = to_bits(t, values[i]);
  DeviceBuffer buf(bits.size() * 2);
  cuda_ok(cudaMemcpy(buf.ptr, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), "upload");
  return buf;
}

inline std::vector<float> download(DType t, const DeviceBuffer& buf, int64_t elems) {
  std::vector<uint16_t> bits(static_cast<size_t>(elems));
  cuda_ok(cudaMemcpy(bits.data(), buf.ptr, bits.size() * 2, cudaMemcpyDeviceToHost), "download");
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = from_bits(t, bits[i]);
  return out;
}

// dQ, dK and dV of the float64 backward ("exact") and of the naive one in the dtype ("naive").
struct Grads {
  std::vector<double> dq, dk, dv;
};
struct HostBackward {
  Grads exact, naive;
};

// Row indices of a (sequence, head, position) in the bhsd or packed layout.
struct Rows {
  const Shape& s;
  std::vector<int64_t> cu = s.cu_seqlens();
  int64_t q(int64_t b, int64_t h, int64_t i) const {
    return s.varlen() ? h * s.tokens_q() + cu[static_cast<size_t>(b)] + i : (b * s.heads + h) * s.seq_q + i;
  }
  int64_t kv(int64_t b, int64_t g, int64_t j) const {
    return s.varlen() ? g * s.tokens_k() + cu[static_cast<size_t>(b)] + j : (b * s.kv_heads + g) * s.seq_k + j;
  }
};

// FlashAttention's backward in float64 with P = exp(scale q.k - LSE) under the mask, D = rowsum(dO O),
// dS = P (dP - D); and the same with P, O, dS and the gradients rounded to the dtype (fp32-like sums).
inline HostBackward host_backward(const Shape& s, const std::vector<float>& q, const std::vector<float>& k,
                           const std::vector<float>& v, const std::vector<float>& d_o) {
  const int64_t d = s.hdim, group = s.heads / s.kv_heads;
  const double scale = attnprof::core::softmax_scale(s);
  auto round = [&](double x) { return static_cast<double>(kn::round_to(s.dtype, static_cast<float>(x))); };
  HostBackward out;
  for (Grads* g : {&out.exact, &out.naive}) {
    g->dq.assign(q.size(), 0.0);
    g->dk.assign(k.size(), 0.0);
    g->dv.assign(v.size(), 0.0);
  }
  const Rows rows{s};
  std::vector<double> p, p_lp, dp;
  for (int64_t b = 0; b < s.batch; ++b) {
    const Shape seq = s.sequence(b);
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < seq.seq_q; ++i) {
        const attnprof::core::KeyRange keys = seq.keys_of_row(i);
        if (keys.end <= keys.begin) continue;  // no key: dQ = 0, nothing for dK and dV
        const float* qi = &q[static_cast<size_t>(rows.q(b, h, i) * d)];
        const float* doi = &d_o[static_cast<size_t>(rows.q(b, h, i) * d)];
        const int64_t n = keys.end - keys.begin;
        p.assign(static_cast<size_t>(n), 0.0);
        double max = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          const float* kj = &k[static_cast<size_t>(rows.kv(b, g, keys.begin + j) * d)];
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(qi[c]) * kj[c];
          p[static_cast<size_t>(j)] = scale * dot;
          max = std::max(max, scale * dot);
        }
        double sum = 0;
        for (double& x : p) sum += (x = std::exp(x - max));
        for (double& x : p) x /= sum;
        // O (and its rounding, as the forward hands it over), D, dP.
        std::vector<double> o(static_cast<size_t>(d), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          const float* vj = &v[static_cast<size_t>(rows.kv(b, g, keys.begin + j) * d)];
          for (int64_t c = 0; c < d; ++c) o[static_cast<size_t>(c)] += p[static_cast<size_t>(j)] * vj[c];
        }
        double d_exact = 0, d_lp = 0;
        for (int64_t c = 0; c < d; ++c) {
          d_exact += doi[c] * o[static_cast<size_t>(c)];
          d_lp += doi[c] * round(o[static_cast<size_t>(c)]);
        }
        for (int64_t j = 0; j < n; ++j) {
          const int64_t kv_row = rows.kv(b, g, keys.begin + j);
          const float* kj = &k[static_cast<size_t>(kv_row * d)];
          const float* vj = &v[static_cast<size_t>(kv_row * d)];
          double dpj = 0;
          for (int64_t c = 0; c < d; ++c) dpj += static_cast<double>(doi[c]) * vj[c];
          const double pj = p[static_cast<size_t>(j)], pj_lp = round(pj);
          const double ds = pj * (dpj - d_exact), ds_lp = round(pj * (dpj - d_lp));
          const int64_t qrow = rows.q(b, h, i);
          for (int64_t c = 0; c < d; ++c) {
            const size_t qc = static_cast<size_t>(qrow * d + c), kc = static_cast<size_t>(kv_row * d + c);
            out.exact.dq[qc] += scale * ds * kj[c];
            out.naive.dq[qc] += scale * ds_lp * kj[c];
            out.exact.dk[kc] += scale * ds * qi[c];
            out.naive.dk[kc] += scale * ds_lp * qi[c];
            out.exact.dv[kc] += pj * doi[c];
            out.naive.dv[kc] += pj_lp * doi[c];
          }
        }
      }
    }
  }
  for (auto* grad : {&out.naive.dq, &out.naive.dk, &out.naive.dv})
    for (double& x : *grad) x = round(x);
  return out;
}

struct GradError {
  double max_err = 0, naive_max_err = 0, tolerance = 0, max_ref = 0;
  int64_t non_finite = 0;
  bool passed() const { return non_finite == 0 && max_err <= tolerance; }
};

inline GradError compare(DType t, const std::vector<float>& got, const std::vector<double>& exact,
                  const std::vector<double>& naive) {
  GradError e;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++e.non_finite;
      continue;
    }
    e.max_err = std::max(e.max_err, std::abs(got[i] - exact[i]));
    e.naive_max_err = std::max(e.naive_max_err, std::abs(naive[i] - exact[i]));
    e.max_ref = std::max(e.max_ref, std::abs(exact[i]));
  }
  const double half_ulp = t == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  e.tolerance = 2 * e.naive_max_err + half_ulp * std::max(1.0, e.max_ref);
  return e;
}

// Runs the kernel on s with pass fwd_bwd (forward, then backward), then with pass bwd alone on the O
// and LSE the forward left; each time dQ, dK and dV (poisoned first) against host_backward.
inline void check_backward(const char* kernel, const Shape& shape, uint64_t seed) {
  const kn::Kernel& fused = cuda_kernel(kernel);
  Shape s = shape;
  s.pass = Pass::fwd_bwd;
  INFO(s.label() << " seed " << seed);
  REQUIRE(kn::support_reason(fused, s).empty());
  const std::vector<float> q = input(seed, 0, s.q_elems()), k = input(seed, 1, s.kv_elems()),
                           v = input(seed, 2, s.v_elems()), d_o = input(seed, kDoTensor, s.o_elems());
  const HostBackward ref = host_backward(s, q, k, v, d_o);

  DeviceBuffer dq_buf(q.size() * 2), dk_buf(k.size() * 2), dv_buf(v.size() * 2), o_buf(d_o.size() * 2);
  DeviceBuffer lse_buf(static_cast<size_t>(s.lse_elems()) * 4);
  const DeviceBuffer q_buf = upload(s.dtype, q), k_buf = upload(s.dtype, k), v_buf = upload(s.dtype, v),
                     do_buf = upload(s.dtype, d_o);
  const size_t workspace_bytes = fused.workspace_bytes(s);
  REQUIRE(workspace_bytes > 0);
  DeviceBuffer workspace(workspace_bytes);
  const std::vector<int64_t> cu = s.cu_seqlens();
  const std::vector<int32_t> cu32(cu.begin(), cu.end());
  DeviceBuffer cu_buf(cu32.size() * 4);
  if (!cu32.empty()) cuda_ok(cudaMemcpy(cu_buf.ptr, cu32.data(), cu32.size() * 4, cudaMemcpyHostToDevice), "cu_seqlens");

  kn::AttentionArgs a;
  a.q = q_buf.ptr;
  a.k = k_buf.ptr;
  a.v = v_buf.ptr;
  a.o = o_buf.ptr;
  a.lse = static_cast<float*>(lse_buf.ptr);
  a.d_o = do_buf.ptr;
  a.dq = dq_buf.ptr;
  a.dk = dk_buf.ptr;
  a.dv = dv_buf.ptr;
  a.workspace = workspace.ptr;
  a.workspace_bytes = workspace_bytes;
  a.cu_seqlens = s.varlen() ? static_cast<const int32_t*>(cu_buf.ptr) : nullptr;
  for (Pass pass : {Pass::fwd_bwd, Pass::bwd}) {
    s.pass = pass;
    a.shape = s;
    // 0xffff is NaN in fp16 and bf16: an element the call does not write fails.
    cuda_ok(cudaMemset(dq_buf.ptr, 0xff, q.size() * 2), "poison dQ");
    cuda_ok(cudaMemset(dk_buf.ptr, 0xff, k.size() * 2), "poison dK");
    cuda_ok(cudaMemset(dv_buf.ptr, 0xff, v.size() * 2), "poison dV");
    fused.launch(a);
    cuda_ok(cudaDeviceSynchronize(), "backward");
    const GradError dq = compare(s.dtype, download(s.dtype, dq_buf, s.q_elems()), ref.exact.dq, ref.naive.dq);
    const GradError dk = compare(s.dtype, download(s.dtype, dk_buf, s.kv_elems()), ref.exact.dk, ref.naive.dk);
    const GradError dv = compare(s.dtype, download(s.dtype, dv_buf, s.v_elems()), ref.exact.dv, ref.naive.dv);
    std::printf("%-58s dQ %.2e (tol %.2e)  dK %.2e (tol %.2e)  dV %.2e (tol %.2e)%s\n", s.label().c_str(), dq.max_err,
                dq.tolerance, dk.max_err, dk.tolerance, dv.max_err, dv.tolerance,
                dq.passed() && dk.passed() && dv.passed() ? "" : "  FAILED");
    INFO(s.label() << ": dQ max err " << dq.max_err << " (naive " << dq.naive_max_err << ", tolerance " << dq.tolerance
                   << ", non-finite " << dq.non_finite << "); dK " << dk.max_err << " (naive " << dk.naive_max_err
                   << ", tolerance " << dk.tolerance << ", non-finite " << dk.non_finite << "); dV " << dv.max_err
                   << " (naive " << dv.naive_max_err << ", tolerance " << dv.tolerance << ", non-finite "
                   << dv.non_finite << ")");
    CHECK(dq.passed());
    CHECK(dk.passed());
    CHECK(dv.passed());
  }
}

inline Shape with_window(Shape s, int64_t window) {
  s.window = window;
  s.validate();
  return s;
}

// The dense problems every backward kernel is checked on, from seed + 1 on: hdim 64 and 128, bf16 and
// fp16, causal or not; grouped-query heads, seq_k above and below seq_q (rows that see no key), whole
// tiles, one row, and tails.
inline void check_dense_backward_suite(const char* kernel, uint64_t seed) {
  for (int64_t hdim : {64, 128})
    for (DType dtype : {DType::bf16, DType::fp16})
      for (bool causal : {false, true}) {
        check_backward(kernel, make_shape(2, 4, 1, 130, 130, hdim, causal, dtype), ++seed);   // GQA group 4, tails
        check_backward(kernel, make_shape(1, 4, 2, 77, 300, hdim, causal, dtype), ++seed);    // seq_k > seq_q
        check_backward(kernel, make_shape(1, 2, 2, 300, 77, hdim, causal, dtype), ++seed);    // rows that see no key
        check_backward(kernel, make_shape(1, 2, 1, 256, 256, hdim, causal, dtype), ++seed);   // whole tiles
        check_backward(kernel, make_shape(1, 1, 1, 1, 1, hdim, causal, dtype), ++seed);
        check_backward(kernel, make_shape(1, 4, 1, 3, 257, hdim, causal, dtype), ++seed);
      }
}

}  // namespace attnprof::gpu_test::backward
