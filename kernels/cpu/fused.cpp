// CPU "fused": FlashAttention-2's forward on the CPU. Each task owns kBlockRows query rows of one
// (batch, head) and streams K/V in blocks of kBlockKeys keys; per block it forms the S tile, updates
// the running row max and row sum (online softmax), rescales the accumulator and adds P V. S and P
// exist only as one (kBlockRows, kBlockKeys) tile; O and LSE are written once at the end.
// Like the GPU kernel, P is rounded to the dtype (unnormalised) before the PV product and the row sum
// is accumulated from the unrounded fp32 values; O is rounded to the dtype after the final division.
// A packed variable-length batch's tasks are its sequences' row blocks, each with its sequence's masks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/tiles.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

class CpuFused final : public Kernel {
 public:
  std::string name() const override { return "fused"; }
  Backend backend() const override { return Backend::cpu; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override {
    return "fused: K/V streamed in blocks with an online softmax, S and P only as a tile in cache; "
           "fp32 compute, P and O rounded to the dtype";
  }
  std::string unsupported_reason(const core::Shape&) const override { return {}; }
  size_t workspace_bytes(const core::Shape&) const override { return 0; }
  bool masks_window() const override { return true; }
  bool runs_varlen() const override { return true; }
  bool runs_distinct_hdim_v() const override { return true; }

  void launch(const AttentionArgs& a, StageHook* hook) const override {
    const core::Shape& s = a.shape;
    const auto* q = static_cast<const float*>(a.q);
    const auto* k = static_cast<const float*>(a.k);
    const auto* v = static_cast<const float*>(a.v);
    auto* o = static_cast<float*>(a.o);
    const RowBlocks work = row_blocks(s);
    const auto scale = static_cast<float>(core::softmax_scale(s));
    const int64_t dv = s.value_hdim();  // V's and O's row width

    if (hook) hook->before_stage(0);
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
    if (hook) hook->after_last();
  }
};

const CpuFused kCpuFused;
const Registrar kCpuFusedRegistrar{&kCpuFused};

}  // namespace
}  // namespace attnprof::kernels::cpu
