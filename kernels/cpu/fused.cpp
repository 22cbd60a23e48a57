// CPU "fused": FlashAttention-2's forward and backward on the CPU. Each forward task owns kBlockRows query rows of one
// (batch, head) and streams K/V in blocks of kBlockKeys keys; per block it forms the S tile, updates
// the running row max and row sum (online softmax), rescales the accumulator and adds P V. S and P
// exist only as one (kBlockRows, kBlockKeys) tile; O and LSE are written once at the end.
// Like the GPU kernel, P is rounded to the dtype (unnormalised) before the PV product and the row sum
// is accumulated from the unrounded fp32 values; O is rounded to the dtype after the final division.
// A packed variable-length batch's tasks are its sequences' row blocks, each with its sequence's masks.
//
// The backward (Shape::pass bwd; fwd_bwd runs the forward first) is FlashAttention-2's with dQ in a
// pass of its own, so that no two tasks write one row:
//   bwd_preprocess  D = rowsum(dO * O) of every query row, into the workspace
//   bwd_dk_dv       a task per block of kBlockKeys keys of one kv head (KeyBlock): for each row block
//                   of its group's heads that sees them, the S, P, dP and dS tiles (P = exp(S - LSE) and
//                   dS = P (dP - D), each rounded to the dtype as a tensor-core kernel stores them for its
//                   GEMMs), then dV += P^T dO and dK += dS^T Q; dK (times scale) and dV written once
//   bwd_dq          a task per row block: the same tiles over the keys it sees, dQ += dS K; written once
// S, P, dP and dS exist only as (kBlockRows, kBlockKeys) tiles; the dQ pass recomputes them (seven tile
// products per score where FlashAttention-2, summing dQ with atomics, has five: plan dq_atomic 0).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/tiles.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The backward's tiles of one row block against one block of keys: K and V transposed into panels,
// then P and dS (kBlockRows x kBlockKeys, zero where masked) and their transposes.
struct GradTiles {
  std::vector<float> kt, vt, p, ds, pt, dst;
  GradTiles(int64_t hdim, int64_t dv)
      : kt(static_cast<size_t>(hdim * kBlockKeys)), vt(static_cast<size_t>(dv * kBlockKeys)),
        p(static_cast<size_t>(kBlockRows * kBlockKeys)), ds(p.size()), pt(p.size()), dst(p.size()) {}
  void pack(const core::Shape& s, const float* k_rows, const float* v_rows, int64_t keys) {
    pack_keys_transposed(k_rows, keys, s.hdim, kt.data());
    pack_keys_transposed(v_rows, keys, s.value_hdim(), vt.data());
  }
};

// P = exp(scale Q K^T - LSE) and dS = P (dO V^T - D) of row block `blk` against keys [j0, j0 + keys)
// (packed into t), each rounded to the dtype, zero where a row does not see a key.
void score_grads(const AttentionArgs& a, const RowBlock& blk, const float* delta, int64_t j0, int64_t keys,
                 GradTiles& t) {
  const core::Shape& s = a.shape;
  const core::Shape& seq = *blk.shape;
  const int64_t dv = s.value_hdim();
  const auto scale = static_cast<float>(core::softmax_scale(s));
  qk_tile(static_cast<const float*>(a.q) + blk.view.q_offset + blk.i0 * s.hdim, blk.rows, t.kt.data(), keys, s.hdim,
          scale, t.p.data(), kBlockKeys);
  qk_tile(static_cast<const float*>(a.d_o) + blk.view.o_offset + blk.i0 * dv, blk.rows, t.vt.data(), keys, dv, 1.0f,
          t.ds.data(), kBlockKeys);
  for (int64_t r = 0; r < blk.rows; ++r) {
    float* p = t.p.data() + r * kBlockKeys;
    float* ds = t.ds.data() + r * kBlockKeys;
    const core::KeyRange row_keys = seq.keys_of_row(blk.i0 + r);
    const int64_t lo = std::clamp<int64_t>(row_keys.begin - j0, 0, keys);
    const int64_t hi = std::clamp<int64_t>(row_keys.end - j0, lo, keys);
    std::fill(p, p + lo, 0.0f);
    std::fill(p + hi, p + keys, 0.0f);
    std::fill(ds, ds + lo, 0.0f);
    std::fill(ds + hi, ds + keys, 0.0f);
    if (hi == lo) continue;
    const int64_t row = blk.view.lse_offset + blk.i0 + r;
    exp_shifted_sum(p + lo, hi - lo, a.lse[row]);
    round_in_place(s.dtype, p + lo, hi - lo);
    for (int64_t j = lo; j < hi; ++j) ds[j] = p[j] * (ds[j] - delta[row]);
    round_in_place(s.dtype, ds + lo, hi - lo);
  }
}

// at (keys x rows, row stride kBlockRows) = the transpose of a's rows x keys (row stride kBlockKeys).
void transpose_tile(const float* a, int64_t rows, int64_t keys, float* at) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < keys; ++j) at[j * kBlockRows + r] = a[r * kBlockKeys + j];
}

class CpuFused final : public Kernel {
 public:
  std::string name() const override { return "fused"; }
  Backend backend() const override { return Backend::cpu; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override {
    return "fused: K/V streamed in blocks with an online softmax, S and P only as a tile in cache; the backward "
           "as tiles too (dK and dV per key block, dQ in a pass of its own); fp32 compute, P, dS and the outputs "
           "rounded to the dtype";
  }
  std::string unsupported_reason(const core::Shape&) const override { return {}; }
  // A backward's D, one float per query row.
  size_t workspace_bytes(const core::Shape& s) const override {
    return s.backward() ? sizeof(float) * static_cast<size_t>(s.lse_elems()) : 0;
  }
  bool masks_window() const override { return true; }
  bool runs_varlen() const override { return true; }
  bool runs_distinct_hdim_v() const override { return true; }
  bool runs_backward() const override { return true; }
  std::vector<std::string> stage_names(const core::Shape& s) const override {
    if (!s.backward()) return {name()};
    std::vector<std::string> names;
    if (s.pass == core::Pass::fwd_bwd) names.emplace_back("fwd");
    for (const char* stage : {"bwd_preprocess", "bwd_dk_dv", "bwd_dq"}) names.emplace_back(stage);
    return names;
  }
  std::map<std::string, int64_t> plan(const core::Shape& s) const override {
    if (!s.backward()) return {};
    return {{"bwd_block_rows", kBlockRows}, {"bwd_block_keys", kBlockKeys}, {"dq_atomic", 0}};
  }

  void launch(const AttentionArgs& a, StageHook* hook) const override {
    if (a.shape.backward()) {
      if (!a.d_o || !a.dq || !a.dk || !a.dv)
        throw std::runtime_error("cpu fused: a backward call needs dO, dQ, dK and dV");
      if (a.workspace == nullptr || a.workspace_bytes < workspace_bytes(a.shape))
        throw std::runtime_error("cpu fused: workspace too small");
    }
    int stage = 0;
    if (a.shape.pass != core::Pass::bwd) {
      if (hook) hook->before_stage(stage++);
      forward(a);
    }
    if (a.shape.backward()) backward(a, hook, stage);
    if (hook) hook->after_last();
  }

 private:
  static void forward(const AttentionArgs& a) {
    const core::Shape& s = a.shape;
    const auto* q = static_cast<const float*>(a.q);
    const auto* k = static_cast<const float*>(a.k);
    const auto* v = static_cast<const float*>(a.v);
    auto* o = static_cast<float*>(a.o);
    const RowBlocks work = row_blocks(s);
    const auto scale = static_cast<float>(core::softmax_scale(s));
    const int64_t dv = s.value_hdim();  // V's and O's row width

    parallel_for(static_cast<int64_t>(work.blocks.size()), 1, [&](int64_t lo, int64_t hi) {
      std::vector<float> kt(static_cast<size_t>(s.hdim * kBlockKeys));      // (D, kBlockKeys)
      std::vector<float> tile(static_cast<size_t>(kBlockRows * kBlockKeys)); // S, then P
      std::vector<float> acc(static_cast<size_t>(kBlockRows * dv));          // (kBlockRows, Dv)
      float row_max[kBlockRows], row_sum[kBlockRows];
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        const core::Shape& seq = *blk.shape;  // its own masks (a packed batch's sequence)
        const int64_t i0 = blk.i0, rows = blk.rows;
        const HeadView& hv = blk.view;
        std::fill(acc.begin(), acc.end(), 0.0f);
        std::fill(row_max, row_max + kBlockRows, kNegInf);
        std::fill(row_sum, row_sum + kBlockRows, 0.0f);
        // Only the key blocks some row of the task sees (causal mask, sliding window).
        const core::KeyRange needed = block_keys(seq, i0, rows);
        for (int64_t j0 = needed.begin; j0 < needed.end; j0 += kBlockKeys) {
          const int64_t keys = std::min(kBlockKeys, needed.end - j0);
          pack_keys_transposed(k + hv.kv_offset + j0 * s.hdim, keys, s.hdim, kt.data());
          qk_tile(q + hv.q_offset + i0 * s.hdim, rows, kt.data(), keys, s.hdim, scale, tile.data(),
                  kBlockKeys);
          for (int64_t r = 0; r < rows; ++r) {
            float* p = tile.data() + r * kBlockKeys;
            // This row's keys inside the block: [lo, hi) of its `keys` columns.
            const core::KeyRange row_keys = seq.keys_of_row(i0 + r);
            const int64_t lo = std::clamp<int64_t>(row_keys.begin - j0, 0, keys);
            const int64_t hi = std::clamp<int64_t>(row_keys.end - j0, lo, keys);
            std::fill(p, p + lo, 0.0f);
            std::fill(p + hi, p + keys, 0.0f);
            if (hi == lo) continue;
            const float block_max = *std::max_element(p + lo, p + hi);
            const float new_max = std::max(row_max[r], block_max);
            const float correction = std::exp(row_max[r] - new_max);  // 0 on the first block
            const float block_sum = exp_shifted_sum(p + lo, hi - lo, new_max);
            round_in_place(s.dtype, p + lo, hi - lo);
            row_sum[r] = row_sum[r] * correction + block_sum;
            row_max[r] = new_max;
            if (correction != 1.0f)
              for (int64_t d = 0; d < dv; ++d) acc[r * dv + d] *= correction;
          }
          pv_tile(tile.data(), kBlockKeys, rows, v + hv.v_offset + j0 * dv, keys, dv, acc.data());
        }
        float* o_rows = o + hv.o_offset + i0 * dv;
        for (int64_t r = 0; r < rows; ++r) {
          const float inv_sum = row_sum[r] > 0 ? 1.0f / row_sum[r] : 0.0f;  // no key: O = 0
          float* out = o_rows + r * dv;
          for (int64_t d = 0; d < dv; ++d) out[d] = acc[r * dv + d] * inv_sum;
          round_in_place(s.dtype, out, dv);
          a.lse[hv.lse_offset + i0 + r] = row_sum[r] > 0 ? row_max[r] + std::log(row_sum[r]) : kNegInf;
        }
      }
    });
  }

  // dQ, dK and dV from Q, K, V, O, dO and LSE; first_stage: the hook's index of bwd_preprocess.
  static void backward(const AttentionArgs& a, StageHook* hook, int first_stage) {
    const core::Shape& s = a.shape;
    const int64_t dv = s.value_hdim();
    const auto* k = static_cast<const float*>(a.k);
    const auto* v = static_cast<const float*>(a.v);
    const auto* o = static_cast<const float*>(a.o);
    const auto* d_o = static_cast<const float*>(a.d_o);
    auto* delta = static_cast<float*>(a.workspace);  // D, indexed as LSE
    const RowBlocks work = row_blocks(s);
    const auto tasks = static_cast<int64_t>(work.blocks.size());
    const auto scale = static_cast<float>(core::softmax_scale(s));

    if (hook) hook->before_stage(first_stage);  // D = rowsum(dO * O)
    parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        for (int64_t r = 0; r < blk.rows; ++r) {
          const int64_t at = blk.view.o_offset + (blk.i0 + r) * dv;
          delta[blk.view.lse_offset + blk.i0 + r] = row_delta(d_o + at, o + at, dv);
        }
      }
    });

    if (hook) hook->before_stage(first_stage + 1);  // dK and dV, a key block per task
    const std::vector<KeyBlock> key_tasks = key_blocks(work);
    parallel_for(static_cast<int64_t>(key_tasks.size()), 1, [&](int64_t lo, int64_t hi) {
      GradTiles tiles(s.hdim, dv);
      std::vector<float> acc_dk(static_cast<size_t>(kBlockKeys * s.hdim)), acc_dv(static_cast<size_t>(kBlockKeys * dv));
      for (int64_t t = lo; t < hi; ++t) {
        const KeyBlock& kb = key_tasks[static_cast<size_t>(t)];
        std::fill(acc_dk.begin(), acc_dk.end(), 0.0f);
        std::fill(acc_dv.begin(), acc_dv.end(), 0.0f);
        tiles.pack(s, k + kb.kv_offset + kb.j0 * s.hdim, v + kb.v_offset + kb.j0 * dv, kb.keys);
        for (const RowBlock* blk : kb.rows) {
          score_grads(a, *blk, delta, kb.j0, kb.keys, tiles);
          transpose_tile(tiles.p.data(), blk->rows, kb.keys, tiles.pt.data());
          transpose_tile(tiles.ds.data(), blk->rows, kb.keys, tiles.dst.data());
          pv_tile(tiles.pt.data(), kBlockRows, kb.keys, d_o + blk->view.o_offset + blk->i0 * dv, blk->rows, dv,
                  acc_dv.data());
          pv_tile(tiles.dst.data(), kBlockRows, kb.keys,
                  static_cast<const float*>(a.q) + blk->view.q_offset + blk->i0 * s.hdim, blk->rows, s.hdim,
                  acc_dk.data());
        }
        write_accumulator(s.dtype, acc_dk.data(), kb.keys * s.hdim, scale,
                          static_cast<float*>(a.dk) + kb.kv_offset + kb.j0 * s.hdim);
        write_accumulator(s.dtype, acc_dv.data(), kb.keys * dv, 1.0f,
                          static_cast<float*>(a.dv) + kb.v_offset + kb.j0 * dv);
      }
    });

    if (hook) hook->before_stage(first_stage + 2);  // dQ, a row block per task
    parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
      GradTiles tiles(s.hdim, dv);
      std::vector<float> acc_dq(static_cast<size_t>(kBlockRows * s.hdim));
      for (int64_t t = lo; t < hi; ++t) {
        const RowBlock& blk = work.blocks[static_cast<size_t>(t)];
        std::fill(acc_dq.begin(), acc_dq.end(), 0.0f);
        const core::KeyRange needed = block_keys(*blk.shape, blk.i0, blk.rows);
        for (int64_t j0 = needed.begin; j0 < needed.end; j0 += kBlockKeys) {
          const int64_t keys = std::min(kBlockKeys, needed.end - j0);
          tiles.pack(s, k + blk.view.kv_offset + j0 * s.hdim, v + blk.view.v_offset + j0 * dv, keys);
          score_grads(a, blk, delta, j0, keys, tiles);
          pv_tile(tiles.ds.data(), kBlockKeys, blk.rows, k + blk.view.kv_offset + j0 * s.hdim, keys, s.hdim,
                  acc_dq.data());
        }
        write_accumulator(s.dtype, acc_dq.data(), blk.rows * s.hdim, scale,
                          static_cast<float*>(a.dq) + blk.view.q_offset + blk.i0 * s.hdim);
      }
    });
  }
};

const CpuFused kCpuFused;
const Registrar kCpuFusedRegistrar{&kCpuFused};

}  // namespace
}  // namespace attnprof::kernels::cpu
