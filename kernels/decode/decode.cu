// The decode kernel's host side: shape checks, the split plan (decode_plan.hpp) with the device's
// resident-CTA count, dispatch to the instantiations of decode_kernel.cuh, and registration as
// kernel "decode".
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvtx3.hpp>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <type_traits>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/dispatch.cuh"
#include "kernels/common/dynamic_smem.cuh"
#include "kernels/common/launch_params.hpp"
#include "kernels/decode/decode_kernel.cuh"
#include "kernels/decode/decode_plan.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels {

namespace {

constexpr int kMinComputeMajor = 8;

struct DeviceFacts {
  int major = 0;
  int sms = 0;
};

DeviceFacts current_device() {
  DeviceFacts f;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&f.major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&f.sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  return f;
}

// ATTNPROF_DECODE_CONFIG's shared-memory layout (decode_plan.hpp); nullopt for a value it does not know.
std::optional<decode::SmemLayout> configured_layout() {
  const char* env = std::getenv("ATTNPROF_DECODE_CONFIG");
  return decode::parse_layout(env == nullptr ? "" : env);
}

// Calls fn(element tag, hdim constant, m-tiles constant, addressing constant, layout constant, KV
// dtype constant) for a supported shape and layout. A quantized cache runs the swizzled layout only.
template <typename Fn>
void dispatch(const core::Shape& s, int mt, decode::SmemLayout layout, Fn&& fn) {
  using decode::KvAddressing;
  using core::KvDType;
  dispatch_dtype_hdim(s, [&](auto tag, auto hdim) {
    dispatch_value<1, decode::kMaxMTiles>(mt, [&](auto mtc) {
      dispatch_value<KvAddressing::contiguous, KvAddressing::page_tiles, KvAddressing::page_rows>(
          decode::addressing(s.page_size), [&](auto addr) {
            if (s.quantized_kv()) {
              dispatch_value<KvDType::fp8_e4m3, KvDType::int8>(s.kv_dtype, [&](auto quant) {
                fn(tag, hdim, mtc, addr, std::integral_constant<decode::SmemLayout, decode::SmemLayout::swizzled>{},
                   quant);
              });
              return;
            }
            dispatch_value<decode::SmemLayout::swizzled, decode::SmemLayout::padded>(layout, [&](auto lay) {
              fn(tag, hdim, mtc, addr, lay, std::integral_constant<KvDType, KvDType::none>{});
            });
          });
    });
  });
}

// Shared memory of one CTA of an instantiation.
constexpr size_t smem_of(int mt, int hdim, int elem_bytes, decode::SmemLayout layout, core::KvDType quant) {
  return quant == core::KvDType::none ? decode::smem_bytes(mt, hdim, elem_bytes, layout)
                                      : decode::smem_bytes_quant(mt, hdim);
}

// The split count's cost model takes one CTA per SM as enough to draw its share of the bandwidth; a
// quantized cache's CTA, with more work per byte, is not (kQuantCtasPerSm), so its plan sees that many
// slots per SM.
decode::Plan plan_for(const core::Shape& s) {
  const int64_t sms = current_device().sms;
  const int per_sm = s.quantized_kv() ? decode::kQuantCtasPerSm : 1;
  return decode::plan(s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.kv_splits, sms * per_sm, s.window);
}

class DecodeKernel final : public Kernel {
 public:
  std::string name() const override { return "decode"; }
  Backend backend() const override { return Backend::cuda; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override {
    return "flash-decoding: seq_q 1-16, the query heads of a GQA group packed into the MMA rows, the keys "
           "split across CTAs (split count from a cost model of the busiest SM, paged or not, or kv_splits) and combined by LSE "
           "by the last split in the same launch; "
           "mma.sync m16n8k16, " + std::to_string(decode::kStages) +
           "-stage cp.async; contiguous or paged KV, in the dtype or quantized (fp8 E4M3, int8: " +
           std::to_string(decode::kStagesQuant) +
           " byte stages, K's and V's bytes read straight into the MMA fragments and converted to fp16 in registers)";
  }
  bool reads_paged_kv() const override { return true; }
  bool splits_kv() const override { return true; }
  bool masks_window() const override { return true; }
  bool reads_quantized_kv() const override { return true; }

  std::string unsupported_reason(const core::Shape& s) const override {
    if (!configured_layout())
      return "ATTNPROF_DECODE_CONFIG='" + std::string(std::getenv("ATTNPROF_DECODE_CONFIG")) +
             "' is not one of swizzled, padded";
    if (s.dtype == core::DType::fp32) return "decode kernel supports fp16 and bf16 only (tensor cores)";
    if (const DeviceFacts d = current_device(); d.major > 0 && d.major < kMinComputeMajor)
      return "decode kernel needs compute capability 8.0 or newer (cp.async, bf16 mma.sync)";
    if (!decode::supported_hdim(static_cast<int>(s.hdim)))
      return "decode kernel supports hdim 64 and 128, not " + std::to_string(s.hdim);
    if (s.seq_q > decode::kMaxSeqQ)
      return "decode kernel takes seq_q <= " + std::to_string(decode::kMaxSeqQ) +
             " (decode and speculative decoding); prefill shapes run in fused and fused-sm90";
    if (s.kv_splits > decode::kMaxSplits)
      return "decode kernel: kv_splits " + std::to_string(s.kv_splits) + " is over " +
             std::to_string(decode::kMaxSplits);
    if (s.seq_k > INT32_MAX - decode::kBlockN || s.heads > INT32_MAX)
      return "decode kernel: seq_k and heads must stay under 2^31";
    const decode::Plan p = decode::plan(s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.kv_splits, 1);
    if (p.ctas > INT32_MAX) return "decode kernel: more than 2^31 CTAs";
    return {};
  }

  size_t workspace_bytes(const core::Shape& s) const override {
    if (!unsupported_reason(s).empty()) return 0;
    return decode::workspace_bytes(plan_for(s), s.hdim);
  }

  std::map<std::string, int64_t> plan(const core::Shape& s) const override {
    if (!unsupported_reason(s).empty()) return {};
    const decode::SmemLayout layout = *configured_layout();
    const decode::Plan p = plan_for(s);
    return {{"kv_splits", p.splits},       {"tiles_per_split", p.tiles_per_split}, {"first_key_tile", p.first_tile},
            {"block_m", decode::block_m(p.mt)}, {"block_n", decode::kBlockN},
            {"stages", s.quantized_kv() ? decode::kStagesQuant : decode::kStages}, {"warps", decode::kWarps},
            {"packed_rows", p.rows},
            {"smem_swizzled", layout == decode::SmemLayout::swizzled || s.quantized_kv() ? 1 : 0}};
  }

  std::vector<LaunchInfo> launch_info(const core::Shape& s) const override {
    if (!unsupported_reason(s).empty()) return {};
    const decode::SmemLayout layout = *configured_layout();
    const decode::Plan p = plan_for(s);
    std::vector<LaunchInfo> out;
    dispatch(s, p.mt, layout, [&](auto tag, auto hdim, auto mtc, auto addr, auto lay, auto quant) {
      using T = decltype(tag);
      const std::string types = std::string(core::to_string(s.dtype)) + ", d" + std::to_string(hdim.value);
      LaunchInfo split;
      split.kernel_name = "decode_split_kernel<" + types + ", m" + std::to_string(mtc.value) +
                          (addr.value == decode::KvAddressing::contiguous ? "" : ", paged") +
                          (quant.value == core::KvDType::none ? "" : ", kv " + std::string(core::to_string(quant.value))) +
                          (lay.value == decode::SmemLayout::padded ? ", padded>" : ">");
      split.func = reinterpret_cast<const void*>(
          &decode::decode_split_kernel<T, hdim.value, mtc.value, addr.value, lay.value, quant.value>);
      split.grid_blocks = p.ctas;
      split.block_threads = decode::kThreads;
      split.dynamic_smem_bytes = smem_of(mtc.value, hdim.value, sizeof(T), lay.value, quant.value);
      out.push_back(split);
    });
    return out;
  }

  void launch(const AttentionArgs& a, StageHook* hook) const override {
    const core::Shape& s = a.shape;
    if (const std::string why = support_reason(*this, s); !why.empty()) throw CudaError(why);
    if (s.paged() && a.block_table == nullptr) throw CudaError("decode kernel: a paged shape without a block table");
    if (s.quantized_kv() && (a.k_scale == nullptr || a.v_scale == nullptr))
      throw CudaError("decode kernel: a quantized KV cache without scales");
    const decode::SmemLayout layout = *configured_layout();  // support_reason: a known value
    const decode::Plan plan = plan_for(s);
    const size_t need = decode::workspace_bytes(plan, s.hdim);
    if (a.workspace_bytes < need)
      throw CudaError("decode kernel: workspace of " + std::to_string(a.workspace_bytes) + " bytes is smaller than the " +
                      std::to_string(need) + " needed");
    const nvtx3::scoped_range range("decode " + s.label());
    auto stream = static_cast<cudaStream_t>(a.stream);

    decode::DecodeParams p{};
    p.q = a.q;
    p.k = a.k;
    p.v = a.v;
    p.o = a.o;
    p.lse = a.lse;
    p.block_table = a.block_table;
    p.o_partial = static_cast<float*>(a.workspace);
    p.lse_partial = plan.splits > 1 ? p.o_partial + plan.splits * plan.combine_rows * s.hdim : nullptr;
    p.split_counters = plan.splits > 1 ? reinterpret_cast<uint32_t*>(static_cast<unsigned char*>(a.workspace) +
                                                                     decode::partials_bytes(plan, s.hdim))
                                       : nullptr;
    p.rows_total = s.batch * s.heads * s.seq_q;
    fill_shape_fields(p, s);
    p.page_size = static_cast<int>(s.page_size);
    p.pages_per_seq = static_cast<int>(s.pages_per_seq());
    p.m_blocks = static_cast<int>(plan.m_blocks);
    p.splits = static_cast<int>(plan.splits);
    p.first_tile = static_cast<int>(plan.first_tile);
    p.tiles = static_cast<int>(plan.tiles);
    p.tiles_per_split = static_cast<int>(plan.tiles_per_split);
    p.k_scale = a.k_scale;
    p.v_scale = a.v_scale;
    p.kv_scale = s.kv_scale;

    dispatch(s, plan.mt, layout, [&](auto tag, auto hdim, auto mtc, auto addr, auto lay, auto quant) {
      using T = decltype(tag);
      constexpr auto split_kernel =
          &decode::decode_split_kernel<T, hdim.value, mtc.value, addr.value, lay.value, quant.value>;
      constexpr size_t smem = smem_of(mtc.value, hdim.value, sizeof(T), lay.value, quant.value);
      allow_dynamic_smem<split_kernel>(smem);
      if (hook) hook->before_stage(0);
      split_kernel<<<static_cast<unsigned>(plan.ctas), decode::kThreads, smem, stream>>>(p);
      ATTNPROF_CUDA_CHECK(cudaGetLastError());
    });
    if (hook) hook->after_last();
  }
};

const DecodeKernel kInstance;
const Registrar kReg{&kInstance};

}  // namespace

}  // namespace attnprof::kernels
