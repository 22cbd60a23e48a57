// CPU "reference": the unfused attention forward in three stages, each a parallel pass over the whole
// problem, with S and P materialised in the workspace like the GPU reference keeps them in HBM:
//   qk_gemm  S = scale * Q K^T            (fp32, [batch*heads, seq_q, seq_k])
//   softmax  P = softmax(S) rounded to the dtype, LSE = row_max + log(row_sum)
//   pv_gemm  O = P V rounded to the dtype (V and O value_hdim() wide)
// Computation is fp32; rounding P and O to shape.dtype emulates the GPU's storage precision
// (docs/cpu-backend.md). Masked rows (causal, sliding window) touch only their visible keys. A packed
// variable-length batch runs sequence by sequence, each with its own masks and (len, len) S block.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/tiles.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels::cpu {
namespace {

class CpuReference final : public Kernel {
 public:
  std::string name() const override { return "reference"; }
  Backend backend() const override { return Backend::cpu; }
  core::KernelKind kind() const override { return core::KernelKind::materialized; }
  std::string description() const override {
    return "unfused: S = QK^T, softmax, O = PV as three passes with S and P (fp32) in memory; "
           "fp32 compute, P and O rounded to the dtype";
  }
  std::string unsupported_reason(const core::Shape&) const override { return {}; }
  bool masks_window() const override { return true; }
  bool runs_varlen() const override { return true; }
  bool runs_distinct_hdim_v() const override { return true; }
  size_t workspace_bytes(const core::Shape& s) const override {
    // S and P of every (sequence, head): seq_q * seq_k each dense, len^2 per sequence packed.
    return 2 * sizeof(float) * static_cast<size_t>(score_elems(s));
  }
  std::vector<std::string> stage_names(const core::Shape&) const override { return {"qk_gemm", "softmax", "pv_gemm"}; }

  void launch(const AttentionArgs& a, StageHook* hook) const override {
    const core::Shape& s = a.shape;
    if (a.workspace_bytes < workspace_bytes(s) || (workspace_bytes(s) > 0 && a.workspace == nullptr))
      throw std::runtime_error("cpu reference: workspace too small");
    const auto* q = static_cast<const float*>(a.q);
    const auto* k = static_cast<const float*>(a.k);
    const auto* v = static_cast<const float*>(a.v);
    auto* o = static_cast<float*>(a.o);
    const RowBlocks work = row_blocks(s);
    float* scores = static_cast<float*>(a.workspace);  // S: each (sequence, head)'s (seq_q, seq_k)
    float* probs = scores + work.score_elems;          // P: likewise
    const auto tasks = static_cast<int64_t>(work.blocks.size());
    const auto scale = static_cast<float>(core::softmax_scale(s));

    if (hook) hook->before_stage(0);
    parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
      std::vector<float> kt(static_cast<size_t>(s.hdim * kBlockKeys));  // (D, kBlockKeys)
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        const core::Shape& seq = *blk.shape;
        const core::KeyRange needed = block_keys(seq, blk.i0, blk.rows);
        float* s_rows = scores + blk.score_offset;
        for (int64_t j0 = needed.begin; j0 < needed.end; j0 += kBlockKeys) {
          const int64_t keys = std::min(kBlockKeys, needed.end - j0);
          pack_keys_transposed(k + blk.view.kv_offset + j0 * s.hdim, keys, s.hdim, kt.data());
          qk_tile(q + blk.view.q_offset + blk.i0 * s.hdim, blk.rows, kt.data(), keys, s.hdim, scale, s_rows + j0,
                  seq.seq_k);
        }
      }
    });

    if (hook) hook->before_stage(1);
    parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        const core::Shape& seq = *blk.shape;
        // Zeros around each row's visible keys, as far as the block reaches, so pv_gemm can run the
        // whole block over one key range.
        const core::KeyRange block = block_keys(seq, blk.i0, blk.rows);
        for (int64_t r = 0; r < blk.rows; ++r) {
          const core::KeyRange visible = seq.keys_of_row(blk.i0 + r);
          const int64_t keys = visible.size();
          const float* s_row = scores + blk.score_offset + r * seq.seq_k + visible.begin;
          float* p_row = probs + blk.score_offset + r * seq.seq_k;
          float& lse = a.lse[blk.view.lse_offset + blk.i0 + r];
          std::fill(p_row + block.begin, p_row + visible.begin, 0.0f);
          std::fill(p_row + visible.end, p_row + block.end, 0.0f);
          if (keys == 0) {
            lse = -std::numeric_limits<float>::infinity();
            continue;
          }
          p_row += visible.begin;
          const float row_max = *std::max_element(s_row, s_row + keys);
          std::copy(s_row, s_row + keys, p_row);
          const float row_sum = exp_shifted_sum(p_row, keys, row_max);
          const float inv_sum = 1.0f / row_sum;
          for (int64_t j = 0; j < keys; ++j) p_row[j] *= inv_sum;
          round_in_place(s.dtype, p_row, keys);
          lse = row_max + std::log(row_sum);
        }
      }
    });

    if (hook) hook->before_stage(2);
    const int64_t dv = s.value_hdim();
    parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
      std::vector<float> acc(static_cast<size_t>(kBlockRows * dv));  // (kBlockRows, Dv)
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        const core::Shape& seq = *blk.shape;
        std::fill(acc.begin(), acc.end(), 0.0f);
        const core::KeyRange needed = block_keys(seq, blk.i0, blk.rows);
        const float* p_rows = probs + blk.score_offset;
        for (int64_t j0 = needed.begin; j0 < needed.end; j0 += kBlockKeys) {
          const int64_t keys = std::min(kBlockKeys, needed.end - j0);
          pv_tile(p_rows + j0, seq.seq_k, blk.rows, v + blk.view.v_offset + j0 * dv, keys, dv, acc.data());
        }
        float* o_rows = o + blk.view.o_offset + blk.i0 * dv;
        round_in_place(s.dtype, acc.data(), blk.rows * dv);
        std::copy(acc.begin(), acc.begin() + blk.rows * dv, o_rows);
      }
    });
    if (hook) hook->after_last();
  }
};

const CpuReference kInstance;
const Registrar kReg{&kInstance};

}  // namespace
}  // namespace attnprof::kernels::cpu
