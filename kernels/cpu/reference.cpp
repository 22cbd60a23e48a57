// CPU "reference": the unfused attention forward in three stages, each a parallel pass over the whole
// problem, with S and P materialised in the workspace like the GPU reference keeps them in HBM:
//   qk_gemm  S = scale * Q K^T            (fp32, [batch*heads, seq_q, seq_k])
//   softmax  P = softmax(S) rounded to the dtype, LSE = row_max + log(row_sum)
//   pv_gemm  O = P V rounded to the dtype (V and O value_hdim() wide)
// and the backward (Shape::pass bwd; fwd_bwd runs the forward's stages first) in seven, S, P, dP and
// dS materialised:
//   bwd_qk_gemm  S = scale * Q K^T recomputed (fp32)
//   bwd_softmax  P = exp(S - LSE) with the forward's LSE, rounded to the dtype, zero where masked
//   bwd_dv_gemm  dV = P^T dO (summed over each kv head's group of query heads: GQA)
//   bwd_dp_gemm  dP = dO V^T (fp32)
//   bwd_ds       dS = P (dP - D), D = rowsum(dO * O), rounded to the dtype
//   bwd_dq_gemm  dQ = scale * dS K
//   bwd_dk_gemm  dK = scale * dS^T Q (summed over the group)
// The gradients are accumulated in fp32 and rounded to the dtype once.
// Computation is fp32; rounding P and O to shape.out_dtype() (the dtype, bf16 for fp8 prefill) emulates
// the GPU reference's storage precision
// (docs/cpu-backend.md). Masked rows (causal, sliding window) touch only their visible keys. A packed
// variable-length batch runs sequence by sequence, each with its own masks and (len, len) S block.
// A paged or quantized KV cache (core/shape.hpp; forward only) first becomes contiguous fp32 K and V in
// the workspace, after S and P, which the three stages then read:
//   gather_kv    a page pool's rows in sequence order (kernels/common/paged.hpp)
//   dequant_kv   each stored byte as the value it stands for, dequantize(code, scale) in fp32
//                (kernels/common/quant.hpp), from contiguous bytes or a page pool
//   dequant_qkv  fp8 prefill (dtype fp8_e4m3): Q's bytes too, before K's and V's; P and O are then
//                rounded to bf16 (Shape::out_dtype), as the CUDA reference computes such a point
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/kv_cache.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/tiles.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels::cpu {
namespace {

// Stage names: the forward's three, the backward's seven (mirroring the GPU reference's passes,
// docs/cost-model.md), fwd_bwd the forward's then the backward's.
const std::vector<std::string> kForwardStages = {"qk_gemm", "softmax", "pv_gemm"};
const std::vector<std::string> kBackwardStages = {"bwd_qk_gemm", "bwd_softmax", "bwd_dv_gemm", "bwd_dp_gemm",
                                                  "bwd_ds",      "bwd_dq_gemm", "bwd_dk_gemm"};

// Score-sized fp32 buffers of the workspace: S and P for the forward; S, P, dP and dS for a backward.
int64_t score_buffers(const core::Shape& s) { return s.backward() ? 4 : 2; }

// The first stage of a paged or quantized KV cache (and fp8 prefill's Q), which makes K and V (and Q)
// contiguous fp32 copies; none when the call's tensors are contiguous fp32 already.
std::optional<std::string> copy_stage(const core::Shape& s) {
  if (s.quantized_q()) return "dequant_qkv";
  if (s.quantized_kv()) return "dequant_kv";
  if (s.paged()) return "gather_kv";
  return std::nullopt;
}
// Elements of those copies (K's, then V's, then Q's), after the score buffers.
int64_t copy_elems(const core::Shape& s) {
  return copy_stage(s) ? s.kv_elems() + s.v_elems() + (s.quantized_q() ? s.q_elems() : 0) : 0;
}

// Tells the hook stage `index` starts (the stages of a fwd_bwd call are numbered on from the forward's).
void stage(StageHook* hook, int index) {
  if (hook) hook->before_stage(index);
}

// S = scale * Q K^T over the keys each row block sees (both passes' first stage).
void qk_stage(const core::Shape& s, const RowBlocks& work, const float* q, const float* k, float* scores) {
  const auto scale = static_cast<float>(core::softmax_scale(s));
  parallel_for(static_cast<int64_t>(work.blocks.size()), 1, [&](int64_t lo, int64_t hi) {
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
}

// out rows (rows x width, row stride width) = scale * sum_j a[r, j] b[j] over the row block's keys:
// O = P V (scale 1), dQ = scale dS K. `a` is a score-sized buffer, b's rows `width` wide.
void rows_times_keys(const core::Shape& s, const RowBlocks& work, const float* a, const float* b,
                     int64_t width, bool b_is_v, float scale, float* out, bool out_is_q) {
  parallel_for(static_cast<int64_t>(work.blocks.size()), 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> acc(static_cast<size_t>(kBlockRows * width));  // (kBlockRows, width)
    for (int64_t t = lo; t < hi; ++t) {
      const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
      const core::Shape& seq = *blk.shape;
      std::fill(acc.begin(), acc.end(), 0.0f);
      const core::KeyRange needed = block_keys(seq, blk.i0, blk.rows);
      const float* a_rows = a + blk.score_offset;
      const float* b_key0 = b + (b_is_v ? blk.view.v_offset : blk.view.kv_offset);
      for (int64_t j0 = needed.begin; j0 < needed.end; j0 += kBlockKeys) {
        const int64_t keys = std::min(kBlockKeys, needed.end - j0);
        pv_tile(a_rows + j0, seq.seq_k, blk.rows, b_key0 + j0 * width, keys, width, acc.data());
      }
      write_accumulator(s.out_dtype(), acc.data(), blk.rows * width, scale,
                        out + (out_is_q ? blk.view.q_offset : blk.view.o_offset) + blk.i0 * width);
    }
  });
}

// out key rows = scale * sum over the group's rows i of a[i, j] b[i] (a score-sized, zero where
// masked): dV = P^T dO (b = dO, O's rows), dK = scale dS^T Q (b = Q). Summed in fp32, rounded once.
void keys_times_rows(const core::Shape& s, const std::vector<KeyBlock>& tasks, const float* a, const float* b,
                     int64_t width, bool b_is_o, float scale, float* out, bool out_is_v) {
  parallel_for(static_cast<int64_t>(tasks.size()), 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> acc(static_cast<size_t>(kBlockKeys * width));  // (kBlockKeys, width)
    for (int64_t t = lo; t < hi; ++t) {
      const KeyBlock& kb = tasks[static_cast<size_t>(t)];
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (const RowBlock* blk : kb.rows) {
        const float* b_rows = b + (b_is_o ? blk->view.o_offset : blk->view.q_offset) + blk->i0 * width;
        for (int64_t r = 0; r < blk->rows; ++r) {
          const float* a_row = a + blk->score_offset + r * kb.shape->seq_k + kb.j0;
          const float* b_row = b_rows + r * width;
          for (int64_t j = 0; j < kb.keys; ++j) {
            const float x = a_row[j];
            if (x == 0.0f) continue;  // masked (or exactly zero): adds nothing
            float* acc_row = acc.data() + j * width;
            for (int64_t d = 0; d < width; ++d) acc_row[d] += x * b_row[d];
          }
        }
      }
      write_accumulator(s.dtype, acc.data(), kb.keys * width, scale,
                        out + (out_is_v ? kb.v_offset : kb.kv_offset) + kb.j0 * width);
    }
  });
}

class CpuReference final : public Kernel {
 public:
  std::string name() const override { return "reference"; }
  Backend backend() const override { return Backend::cpu; }
  core::KernelKind kind() const override { return core::KernelKind::materialized; }
  std::string description() const override {
    return "unfused: S = QK^T, softmax, O = PV as three passes with S and P (fp32) in memory; the backward "
           "as seven (S, P, dV, dP, dS, dQ, dK); fp32 compute, P, dS and the outputs rounded to the dtype; a paged "
           "or quantized KV cache first copied to contiguous fp32 K and V (gather_kv, dequant_kv), fp8 prefill's "
           "Q, K and V likewise (dequant_qkv; P and O in bf16)";
  }
  std::string unsupported_reason(const core::Shape&) const override { return {}; }
  bool masks_window() const override { return true; }
  bool runs_varlen() const override { return true; }
  bool runs_distinct_hdim_v() const override { return true; }
  bool runs_backward() const override { return true; }
  bool reads_paged_kv() const override { return true; }
  bool reads_quantized_kv() const override { return true; }
  bool runs_fp8() const override { return true; }
  size_t workspace_bytes(const core::Shape& s) const override {
    // S and P (and a backward's dP and dS) of every (sequence, head): seq_q * seq_k each dense, len^2
    // per sequence packed; then the contiguous K and V of a paged or quantized cache (and fp8's Q).
    return sizeof(float) * static_cast<size_t>(score_buffers(s) * score_elems(s) + copy_elems(s));
  }
  std::vector<std::string> stage_names(const core::Shape& s) const override {
    std::vector<std::string> names;
    if (const auto copy = copy_stage(s)) names.push_back(*copy);
    if (s.pass != core::Pass::bwd) names.insert(names.end(), kForwardStages.begin(), kForwardStages.end());
    if (s.backward()) names.insert(names.end(), kBackwardStages.begin(), kBackwardStages.end());
    return names;
  }

  void launch(const AttentionArgs& a, StageHook* hook) const override {
    const core::Shape& s = a.shape;
    if (a.workspace_bytes < workspace_bytes(s) || (workspace_bytes(s) > 0 && a.workspace == nullptr))
      throw std::runtime_error("cpu reference: workspace too small");
    if (s.backward() && (!a.d_o || !a.dq || !a.dk || !a.dv))
      throw std::runtime_error("cpu reference: a backward call needs dO, dQ, dK and dV");
    const RowBlocks work = row_blocks(s);
    AttentionArgs call = a;  // Q, K and V as the stages read them: contiguous fp32
    int stage_index = 0;
    if (copy_stage(s)) {
      float* k_copy = static_cast<float*>(a.workspace) + score_buffers(s) * work.score_elems;
      float* v_copy = k_copy + s.kv_elems();
      stage(hook, stage_index++);
      if (s.quantized_q()) {
        float* q_copy = v_copy + s.v_elems();
        read_q_contiguous(a, q_copy);
        call.q = q_copy;
      }
      read_kv_contiguous(a, KvTensor::k, k_copy);
      read_kv_contiguous(a, KvTensor::v, v_copy);
      call.k = k_copy;
      call.v = v_copy;
      call.block_table = nullptr;
    }
    if (s.pass != core::Pass::bwd) {
      forward(call, work, hook, stage_index);
      stage_index += static_cast<int>(kForwardStages.size());
    }
    if (s.backward()) backward(call, work, hook, stage_index);
    if (hook) hook->after_last();
  }

 private:
  // O and LSE; S and P in the workspace's first two score buffers. first_stage: the hook's index of
  // the first.
  static void forward(const AttentionArgs& a, const RowBlocks& work, StageHook* hook, int first_stage) {
    const core::Shape& s = a.shape;
    const auto* q = static_cast<const float*>(a.q);
    const auto* k = static_cast<const float*>(a.k);
    const auto* v = static_cast<const float*>(a.v);
    auto* o = static_cast<float*>(a.o);
    float* scores = static_cast<float*>(a.workspace);  // S: each (sequence, head)'s (seq_q, seq_k)
    float* probs = scores + work.score_elems;          // P: likewise
    const auto tasks = static_cast<int64_t>(work.blocks.size());

    stage(hook, first_stage + 0);
    qk_stage(s, work, q, k, scores);

    stage(hook, first_stage + 1);
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
          round_in_place(s.out_dtype(), p_row, keys);
          lse = row_max + std::log(row_sum);
        }
      }
    });

    stage(hook, first_stage + 2);
    rows_times_keys(s, work, probs, v, s.value_hdim(), true, 1.0f, o, false);
  }

  // dQ, dK, dV from Q, K, V, O, dO and LSE; S, P, dP and dS in the workspace's four score buffers,
  // P and dS written whole (zero where masked). first_stage: the hook's index of the first.
  static void backward(const AttentionArgs& a, const RowBlocks& work, StageHook* hook, int first_stage) {
    const core::Shape& s = a.shape;
    const int64_t dv = s.value_hdim();
    const auto* q = static_cast<const float*>(a.q);
    const auto* k = static_cast<const float*>(a.k);
    const auto* v = static_cast<const float*>(a.v);
    const auto* o = static_cast<const float*>(a.o);
    const auto* d_o = static_cast<const float*>(a.d_o);
    float* scores = static_cast<float*>(a.workspace);  // S (fp32)
    float* probs = scores + work.score_elems;          // P (rounded to the dtype)
    float* d_probs = probs + work.score_elems;         // dP (fp32)
    float* d_scores = d_probs + work.score_elems;      // dS (rounded to the dtype)
    const auto tasks = static_cast<int64_t>(work.blocks.size());
    const auto scale = static_cast<float>(core::softmax_scale(s));

    stage(hook, first_stage + 0);  // S = scale Q K^T, recomputed
    qk_stage(s, work, q, k, scores);

    stage(hook, first_stage + 1);  // P = exp(S - LSE) with the forward's LSE, whole rows
    parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        const core::Shape& seq = *blk.shape;
        for (int64_t r = 0; r < blk.rows; ++r) {
          const core::KeyRange visible = seq.keys_of_row(blk.i0 + r);
          float* p_row = probs + blk.score_offset + r * seq.seq_k;
          std::fill(p_row, p_row + visible.begin, 0.0f);
          std::fill(p_row + visible.end, p_row + seq.seq_k, 0.0f);
          if (visible.size() == 0) continue;
          const float* s_row = scores + blk.score_offset + r * seq.seq_k;
          std::copy(s_row + visible.begin, s_row + visible.end, p_row + visible.begin);
          exp_shifted_sum(p_row + visible.begin, visible.size(), a.lse[blk.view.lse_offset + blk.i0 + r]);
          round_in_place(s.dtype, p_row + visible.begin, visible.size());
        }
      }
    });

    const std::vector<KeyBlock> key_tasks = key_blocks(work);
    stage(hook, first_stage + 2);  // dV = P^T dO, summed over the group's heads
    keys_times_rows(s, key_tasks, probs, d_o, dv, true, 1.0f, static_cast<float*>(a.dv), true);

    stage(hook, first_stage + 3);  // dP = dO V^T over the keys each row block sees
    parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
      std::vector<float> vt(static_cast<size_t>(dv * kBlockKeys));  // (Dv, kBlockKeys)
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        const core::Shape& seq = *blk.shape;
        const core::KeyRange needed = block_keys(seq, blk.i0, blk.rows);
        for (int64_t j0 = needed.begin; j0 < needed.end; j0 += kBlockKeys) {
          const int64_t keys = std::min(kBlockKeys, needed.end - j0);
          pack_keys_transposed(v + blk.view.v_offset + j0 * dv, keys, dv, vt.data());
          qk_tile(d_o + blk.view.o_offset + blk.i0 * dv, blk.rows, vt.data(), keys, dv, 1.0f,
                  d_probs + blk.score_offset + j0, seq.seq_k);
        }
      }
    });

    stage(hook, first_stage + 4);  // dS = P (dP - D), D = rowsum(dO O), whole rows
    parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        const core::Shape& seq = *blk.shape;
        for (int64_t r = 0; r < blk.rows; ++r) {
          const core::KeyRange visible = seq.keys_of_row(blk.i0 + r);
          const int64_t row = blk.i0 + r;
          const int64_t o_at = blk.view.o_offset + row * dv;
          const float delta = row_delta(d_o + o_at, o + o_at, dv);
          const int64_t at = blk.score_offset + r * seq.seq_k;
          float* ds_row = d_scores + at;
          std::fill(ds_row, ds_row + visible.begin, 0.0f);
          std::fill(ds_row + visible.end, ds_row + seq.seq_k, 0.0f);
          for (int64_t j = visible.begin; j < visible.end; ++j) ds_row[j] = probs[at + j] * (d_probs[at + j] - delta);
          round_in_place(s.dtype, ds_row + visible.begin, visible.size());
        }
      }
    });

    stage(hook, first_stage + 5);  // dQ = scale dS K
    rows_times_keys(s, work, d_scores, k, s.hdim, false, scale, static_cast<float*>(a.dq), true);

    stage(hook, first_stage + 6);  // dK = scale dS^T Q, summed over the group's heads
    keys_times_rows(s, key_tasks, d_scores, q, s.hdim, false, scale, static_cast<float*>(a.dk), false);
  }
};

const CpuReference kCpuReference;
const Registrar kCpuReferenceRegistrar{&kCpuReference};

}  // namespace
}  // namespace attnprof::kernels::cpu
