// The fused kernel's host side: shape checks, the ATTNPROF_FUSED_CONFIG tile variant, dispatch to the
// per-head-dim instantiations (fused_launch.hpp), the backward pass's three stages and its workspace,
// and registration as kernel "fused".
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvtx3.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/device_query.hpp"
#include "kernels/common/launch_params.hpp"
#include "kernels/fused/fused_bwd_host.hpp"
#include "kernels/fused/fused_launch.hpp"
#include "core/tiles/fused_tiles.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels {

namespace {

using fused::TileVariant;

constexpr int kMinComputeMajor = 8;

std::string variant_text() {
  const char* env = std::getenv("ATTNPROF_FUSED_CONFIG");
  return env ? std::string(env) : std::string();
}

// The tile variant a shape runs: ATTNPROF_FUSED_CONFIG's, or by shape when it is unset
// (fused::default_variant); nullopt for a name that is no variant.
std::optional<TileVariant> variant_for(const core::Shape& s) {
  const std::string text = variant_text();
  if (!text.empty()) return fused::parse_variant(text);
  return fused::default_variant(static_cast<int>(s.hdim), static_cast<int>(s.value_hdim()), s.causal, s.seq_k,
                                s.windowed(), s.varlen());
}

// The backward's stages, in launch order (their names: fused::bwd_stage_names).
constexpr fused::BwdStage kBwdStages[] = {fused::BwdStage::preprocess, fused::BwdStage::main,
                                          fused::BwdStage::dq_convert};

using fused::bwd_q_rows;

// CTAs of the backward's main stage: one per block of keys of every (batch, kv head); a packed batch's
// grid covers its longest sequence.
int64_t bwd_main_ctas(const core::Shape& s) {
  return fused::bwd_key_blocks(fused::bwd_tile_config(static_cast<int>(s.hdim)), s.seq_k) * s.batch * s.kv_heads;
}

class FusedKernel final : public Kernel {
 public:
  std::string name() const override { return "fused"; }
  Backend backend() const override { return Backend::cuda; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override {
    const std::string text = variant_text();
    const auto variant = fused::parse_variant(text);
    // nvcc compiles this file: std::to_string rather than fmt's consteval format strings.
    const std::string by_shape = "fast (m64n64sw at hdim 192 and 256 with the causal mask, or up to " +
                                 std::to_string(fused::kTwoCtaUnmaskedKeys) + " keys without it)";
    const std::string chosen = text.empty() ? by_shape : std::string(variant ? fused::to_string(*variant) : "invalid");
    return "FlashAttention-2 style: one launch, mma.sync m16n8k16, online softmax in fp32, "
           "cp.async double-buffered K/V; tile variant " + chosen +
           "; backward (hdim 64 and 128): FlashAttention-2's, one CTA per 128 keys, dQ by fp32 atomics";
  }
  std::string unsupported_reason(const core::Shape& s) const override {
    const auto variant = variant_for(s);
    if (!variant) {
      const std::string text = variant_text();
      std::string names;
      for (fused::TileVariant v : fused::kTileVariants) names += (names.empty() ? "" : ", ") + std::string(fused::to_string(v));
      return "ATTNPROF_FUSED_CONFIG='" + text + "' is not one of " + names;
    }
    if (s.dtype == core::DType::fp32) return "fused kernel supports fp16 and bf16 only (tensor cores)";
    if (const int major = current_device_cc() / 10; major > 0 && major < kMinComputeMajor)
      return "fused kernel needs compute capability 8.0 or newer (cp.async, bf16 mma.sync)";
    if (!fused::supported_hdim(static_cast<int>(s.hdim)))
      return "fused kernel supports hdim 32, 64, 96, 128, 192 and 256, not " + std::to_string(s.hdim);
    if (!fused::supported_variant(static_cast<int>(s.hdim), *variant))
      return "fused tile variant " + std::string(fused::to_string(*variant)) + " exists at hdim " +
             std::string(fused::variant_hdims_text(*variant)) + " only, not " + std::to_string(s.hdim);
    const fused::TileConfig c = fused::tile_config(static_cast<int>(s.hdim), *variant);
    const long long ctas = fused::m_blocks(c, s.seq_q) * s.batch * s.heads;
    if (ctas > INT32_MAX) return "fused kernel: more than 2^31 CTAs";
    if (s.backward()) {
      if (!fused::bwd_supported_hdim(static_cast<int>(s.hdim)))
        return "fused kernel's backward runs hdim 64 and 128, not " + std::to_string(s.hdim);
      if (bwd_main_ctas(s) > INT32_MAX) return "fused kernel's backward: more than 2^31 CTAs";
    }
    return {};
  }
  // The backward's: dQ's fp32 accumulator, LSE in log2 units and D, per row of Q (fused::BwdWorkspace).
  size_t workspace_bytes(const core::Shape& s) const override {
    if (!s.backward() || !unsupported_reason(s).empty()) return 0;
    return static_cast<size_t>(fused::bwd_workspace(bwd_q_rows(s), static_cast<int>(s.hdim)).bytes());
  }
  bool masks_window() const override { return true; }
  bool runs_varlen() const override { return true; }
  bool runs_backward() const override { return true; }

  // fwd: the one launch; bwd: the three stages; fwd_bwd: the forward ("fwd") then the three.
  std::vector<std::string> stage_names(const core::Shape& s) const override {
    if (!s.backward()) return {name()};
    return fused::bwd_stage_names(s);
  }

  // The backward's tile (fused_tiles.hpp's bwd_tile_config) and how dQ is summed: dq_atomic 1, fp32
  // atomics into the workspace (the forward reports no plan).
  std::map<std::string, int64_t> plan(const core::Shape& s) const override {
    if (!s.backward() || !unsupported_reason(s).empty()) return {};
    const fused::BwdTileConfig c = fused::bwd_tile_config(static_cast<int>(s.hdim));
    return {{"bwd_block_m", c.block_m}, {"bwd_block_n", c.block_n}, {"bwd_warps", c.warps},
            {"bwd_dq_warps_m", c.dq_warps_m}, {"dq_atomic", 1}};
  }

  std::vector<LaunchInfo> launch_info(const core::Shape& s) const override {
    if (!unsupported_reason(s).empty()) return {};
    if (!s.backward()) return {forward_launch_info(s)};
    std::vector<LaunchInfo> infos;
    if (s.pass == core::Pass::fwd_bwd) infos.push_back(forward_launch_info(s));
    for (const fused::BwdStage stage : kBwdStages)
      infos.push_back(fused::bwd_stage_launch_info(s, stage, bwd_main_ctas(s)));
    return infos;
  }

  void launch(const AttentionArgs& a, StageHook* hook) const override {
    const core::Shape& s = a.shape;
    if (const std::string why = unsupported_reason(s); !why.empty()) throw CudaError(why);
    if (s.varlen() && a.cu_seqlens == nullptr) throw CudaError("fused kernel: a packed batch without cu_seqlens");
    const nvtx3::scoped_range range("fused " + s.label());
    int stage = 0;
    if (s.pass != core::Pass::bwd) {
      if (hook) hook->before_stage(stage++);
      launch_forward(a);
    }
    if (s.backward()) launch_backward(a, hook, stage);
    if (hook) hook->after_last();
  }

 private:
  LaunchInfo forward_launch_info(const core::Shape& s) const {
    const TileVariant variant = *variant_for(s);
    const int hdim = static_cast<int>(s.hdim);
    const fused::TileConfig c = fused::tile_config(hdim, variant);
    LaunchInfo info;
    info.kernel_name = "fused_attention_kernel<" + std::string(core::to_string(s.dtype)) + ", d" +
                       std::to_string(hdim) + ", " + std::string(fused::to_string(variant)) + ">";
    fused::dispatch_hdim(hdim, [&](auto d) { info.func = fused::kernel_func<d.value>(s.dtype, variant); });
    info.grid_blocks = fused::m_blocks(c, s.seq_q) * s.batch * s.heads;
    info.block_threads = fused::threads_of(c);
    info.dynamic_smem_bytes = fused::smem_bytes(c, hdim, core::dtype_bytes(s.dtype));
    return info;
  }

  // O and LSE from Q, K, V (the shape's pass aside).
  static void launch_forward(const AttentionArgs& a) {
    const core::Shape& s = a.shape;
    const TileVariant variant = *variant_for(s);
    const int hdim = static_cast<int>(s.hdim);
    const fused::TileConfig c = fused::tile_config(hdim, variant);
    fused::FusedParams p{};
    p.q = a.q;
    p.k = a.k;
    p.v = a.v;
    p.o = a.o;
    p.lse = a.lse;
    fill_shape_fields(p, s);
    // A packed batch: seq_q is the longest sequence's length, whose query blocks the grid covers.
    p.num_m_blocks = static_cast<int>(fused::m_blocks(c, s.seq_q));
    p.cu_seqlens = s.varlen() ? a.cu_seqlens : nullptr;
    p.tokens = static_cast<int>(s.tokens_q());
    const auto grid = static_cast<unsigned>(p.num_m_blocks * s.batch * s.heads);
    fused::dispatch_hdim(hdim, [&](auto d) {
      fused::launch_kernel<d.value>(s.dtype, variant, p, grid, static_cast<cudaStream_t>(a.stream));
    });
  }

  // dQ, dK, dV from Q, K, V, O, dO and LSE: stages kBwdStages, hook's stages first_stage on.
  static void launch_backward(const AttentionArgs& a, StageHook* hook, int first_stage) {
    const core::Shape& s = a.shape;
    const int hdim = static_cast<int>(s.hdim);
    const fused::FusedBwdParams p = fused::bwd_params(
        a, static_cast<int>(fused::bwd_key_blocks(fused::bwd_tile_config(hdim), s.seq_k)), "fused kernel");
    const int64_t ctas = bwd_main_ctas(s);
    for (size_t i = 0; i < std::size(kBwdStages); ++i) {
      if (hook) hook->before_stage(first_stage + static_cast<int>(i));
      fused::dispatch_bwd_hdim(hdim, [&](auto d) {
        fused::launch_bwd_stage<d.value>(s.dtype, kBwdStages[i], p, ctas, static_cast<cudaStream_t>(a.stream));
      });
    }
  }
};

const FusedKernel kInstance;
const Registrar kReg{&kInstance};

}  // namespace

}  // namespace attnprof::kernels
