// The host side both kernels that run FlashAttention-2's backward share (fused.cu, and fused_sm90.cu,
// whose main stage is its own and whose preprocess and dQ conversion are the fused kernel's): the
// stages' names, the launch record of a fused stage, and the launch parameters from a call's arguments.
#pragma once
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "core/shape.hpp"
#include "kernels/common/cuda_errors.hpp"
#include "kernels/common/launch_params.hpp"
#include "kernels/fused/fused_launch.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels::fused {

// Rows of Q (and O, LSE, dO, dQ): the backward's per-row work and its workspace.
inline int64_t bwd_q_rows(const core::Shape& s) { return s.heads * s.tokens_q(); }

// The stages of a backward call (BwdStage's order) as stage_names() gives them: a fwd_bwd call's
// forward first ("fwd"), then preprocess, main and dQ conversion.
inline std::vector<std::string> bwd_stage_names(const core::Shape& s) {
  static constexpr const char* kNames[] = {"bwd_preprocess", "bwd_main", "bwd_dq_convert"};
  std::vector<std::string> names;
  if (s.pass == core::Pass::fwd_bwd) names.emplace_back("fwd");
  names.insert(names.end(), std::begin(kNames), std::end(kNames));
  return names;
}

// The launch of the fused kernel's backward stage `stage` for s (main_ctas: the main stage's grid).
inline LaunchInfo bwd_stage_launch_info(const core::Shape& s, BwdStage stage, int64_t main_ctas) {
  static constexpr const char* kKernels[] = {"fused_bwd_preprocess_kernel", "fused_bwd_main_kernel",
                                             "fused_bwd_dq_convert_kernel"};
  const int hdim = static_cast<int>(s.hdim);
  LaunchInfo info;
  info.kernel_name = std::string(kKernels[static_cast<int>(stage)]) + "<" + std::string(core::to_string(s.dtype)) +
                     ", d" + std::to_string(hdim) + ">";
  dispatch_bwd_hdim(hdim, [&](auto d) {
    info.func = bwd_kernel_func<d.value>(s.dtype, stage);
    const BwdLaunchDims dims = bwd_launch_dims<d.value>(s.dtype, stage, bwd_q_rows(s), main_ctas);
    info.grid_blocks = dims.grid_blocks;
    info.block_threads = dims.block_threads;
    info.dynamic_smem_bytes = dims.dynamic_smem_bytes;
  });
  return info;
}

// Q, K, V, O, dO, LSE and the gradients of the call, its workspace cut into dq_accum, LSE * log2(e) and
// D (BwdWorkspace), the shape's fields, and num_n_blocks key blocks per (batch, kv head). Throws
// CudaError naming `kernel` when a gradient or the workspace is missing.
inline FusedBwdParams bwd_params(const AttentionArgs& a, int num_n_blocks, const std::string& kernel) {
  const core::Shape& s = a.shape;
  if (a.d_o == nullptr || a.dq == nullptr || a.dk == nullptr || a.dv == nullptr)
    throw CudaError(kernel + ": a backward pass without dO, dQ, dK or dV");
  const BwdWorkspace ws = bwd_workspace(bwd_q_rows(s), static_cast<int>(s.hdim));
  if (a.workspace == nullptr || a.workspace_bytes < static_cast<size_t>(ws.bytes()))
    throw CudaError(kernel + ": the backward needs " + std::to_string(ws.bytes()) + " bytes of workspace, got " +
                    std::to_string(a.workspace == nullptr ? 0 : a.workspace_bytes));
  FusedBwdParams p{};
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.o = a.o;
  p.d_o = a.d_o;
  p.lse = a.lse;
  p.dq = a.dq;
  p.dk = a.dk;
  p.dv = a.dv;
  p.dq_accum = static_cast<float*>(a.workspace);
  p.lse_log2 = p.dq_accum + ws.dq_accum_floats;
  p.d_sum = p.lse_log2 + ws.lse_log2_floats;
  fill_shape_fields(p, s);
  p.scale = static_cast<float>(core::softmax_scale(s));
  p.num_n_blocks = num_n_blocks;
  p.cu_seqlens = s.varlen() ? a.cu_seqlens : nullptr;
  p.tokens = static_cast<int>(s.tokens_q());
  p.q_rows = bwd_q_rows(s);
  return p;
}

}  // namespace attnprof::kernels::fused
