// The fused-sm90 kernel's host side: shape and device checks, the TMA tensor maps (encoded through the
// driver entry point the runtime hands out, so nothing links libcuda), dispatch to the per-tile-width
// instantiations (fused_sm90_launch.hpp), and registration as kernel "fused-sm90". The kernels are
// compiled for sm_90a only (kernels/CMakeLists.txt): wgmma and setmaxnreg exist nowhere else.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvtx3.hpp>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/device_query.hpp"
#include "kernels/common/launch_params.hpp"
#include "kernels/fused/fused_bwd_host.hpp"
#include "kernels/fused/fused_launch.hpp"
#include "kernels/fused_sm90/fused_sm90_launch.hpp"
#include "core/tiles/fused_sm90_tiles.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels {

namespace {

namespace f3 = fused_sm90;
using f3::Schedule;

std::string schedule_text() {
  const char* env = std::getenv("ATTNPROF_FUSED_SM90_CONFIG");
  return env ? std::string(env) : std::string();
}

// The width of the tile a shape runs on (fused_sm90_tiles.hpp: hdim 32 and 96 run wider tiles; fp8
// runs hdim 128 and 256 on tiles of their own width).
int tile_of(const core::Shape& s) { return f3::tile_hdim(static_cast<int>(s.hdim)); }
int block_n_of(const core::Shape& s) { return s.quantized_q() ? f3::fp8::block_n() : f3::block_n(tile_of(s)); }

// The schedule a shape runs with; the choice must be valid (unsupported_reason checks it).
Schedule schedule_for(const core::Shape& s) {
  const f3::ScheduleChoice choice = f3::parse_schedule(schedule_text());
  if (choice.fixed) return *choice.fixed;
  return s.quantized_q() ? f3::fp8::default_schedule(tile_of(s), s.causal) : f3::default_schedule(tile_of(s), s.causal);
}

// cuTensorMapEncodeTiled from the driver the runtime already loaded; nullptr when unavailable.
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  }();
  return fn;
}

// A 3D map over a [batch * heads, seq, hdim] tensor read in boxes of (128 bytes of a row, box_rows rows,
// one head) with the 128-byte swizzle: 64 columns of fp16 or bf16, 128 of fp8 (bytes), 32 of fp32. Rows
// past seq of a head are out of bounds: they arrive as zeros, and a store or reduction skips them.
CUtensorMap make_map(const void* base, core::DType dtype, int64_t hdim, int64_t seq, int64_t heads_total,
                     uint32_t box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (!encode) throw CudaError("fused-sm90: cuTensorMapEncodeTiled is not available from the driver");
  CUtensorMap map{};
  const int64_t bytes = core::dtype_bytes(dtype);
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(hdim), static_cast<cuuint64_t>(seq),
                              static_cast<cuuint64_t>(heads_total)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(hdim * bytes), static_cast<cuuint64_t>(seq * hdim * bytes)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(128 / bytes), box_rows, 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUtensorMapDataType type = dtype == core::DType::bf16       ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : dtype == core::DType::fp8_e4m3 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : dtype == core::DType::fp32     ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = encode(&map, type, 3, const_cast<void*>(base), dims, strides, box, element_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("fused-sm90: cuTensorMapEncodeTiled failed with CUresult " + std::to_string(r));
  return map;
}

// SM count of the current device (the persistent grid's size); 0 when unknown.
int current_device_sms() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}

using fused::bwd_q_rows;

// CTAs of the backward's main stage: one per block of bwd::kBlockN keys of every (batch, kv head).
int64_t bwd_main_ctas(const core::Shape& s) { return f3::bwd::key_blocks(s.seq_k) * s.batch * s.kv_heads; }

// f3::plan_grid walks every work tile of a causal shape; the answer is kept for the last shape asked.
f3::GridPlan plan_for(const core::Shape& s) {
  struct Key {
    int64_t seq_q, seq_k, batch_heads;
    bool causal;
    int64_t window;
    int sms, block_n;
    bool operator==(const Key&) const = default;
  };
  static std::mutex mutex;
  static Key last_key{};
  static f3::GridPlan last_plan{-1, false};
  const Key key{s.seq_q, s.seq_k, s.batch * s.heads, s.causal, s.window, current_device_sms(), block_n_of(s)};
  std::lock_guard<std::mutex> lock(mutex);
  if (last_plan.grid < 0 || !(key == last_key)) {
    last_plan = f3::plan_grid(key.seq_q, key.seq_k, key.batch_heads, key.causal, key.sms, key.window, key.block_n);
    last_key = key;
  }
  return last_plan;
}

class FusedSm90Kernel final : public Kernel {
 public:
  std::string name() const override { return "fused-sm90"; }
  Backend backend() const override { return Backend::cuda; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override {
    const f3::ScheduleChoice choice = f3::parse_schedule(schedule_text());
    return "FlashAttention-3 style for sm_90a: wgmma m64nNk16 from shared memory (P from registers), "
           "TMA K/V ring on mbarriers, producer/consumer warpgroups with setmaxnreg, persistent grid, "
           "TMA O store; schedule " +
           std::string(!choice.valid ? "invalid"
                       : choice.fixed ? f3::to_string(*choice.fixed)
                                      : "per shape (serial at 256 columns, else overlap from hdim 128 without a "
                                        "causal mask, else pingpong)") +
           "; hdim 32 and 96 run the 64- and 128-column tiles with the columns past hdim zero-filled; backward "
           "(hdim 64 and 128, fp16 and bf16): wgmma, one CTA per 128 keys, a TMA producer warpgroup and two "
           "consumer warpgroups, dQ by TMA fp32 reductions";
  }
  std::string unsupported_reason(const core::Shape& s) const override {
    const std::string text = schedule_text();
    if (!f3::parse_schedule(text).valid)
      return "ATTNPROF_FUSED_SM90_CONFIG='" + text + "' is not one of overlap, pingpong, serial";
    if (s.dtype == core::DType::fp32) return "fused-sm90 supports fp16, bf16 and fp8_e4m3 only (tensor cores)";
    if (s.varlen())
      return "fused-sm90 runs dense batches only: its TMA maps tile Q, K and V as (batch * heads) boxes of "
             "seq rows, and a packed batch needs per-sequence row offsets and ends in the maps and the "
             "producer warp (not a small change; fused runs packed batches)";
    if (const int cc = current_device_cc(); cc > 0 && cc != 90)
      return "fused-sm90 needs an sm_90 GPU (H100/H200: wgmma, TMA, setmaxnreg); this device is sm_" +
             std::to_string(cc);
    if (!f3::supported_hdim(static_cast<int>(s.hdim)))
      return "fused-sm90 supports hdim 32, 64, 96, 128, 192 and 256, not " + std::to_string(s.hdim);
    if (s.quantized_q()) {
      if (!f3::fp8::supported_hdim(static_cast<int>(s.hdim)))
        return "fused-sm90 runs fp8_e4m3 at hdim 128 and 256 (whole 128-byte rows), not " + std::to_string(s.hdim);
      if (s.batch * s.kv_heads > 65535) return "fused-sm90: the V transpose's grid holds 65535 (batch, kv head) pairs";
    }
    const long long ctas = f3::m_blocks(s.seq_q) * s.batch * s.heads;
    if (ctas > INT32_MAX) return "fused-sm90: more than 2^31 CTAs";
    if (s.backward()) {
      if (s.quantized_q()) return "fused-sm90's backward runs fp16 and bf16, not fp8_e4m3";
      if (!f3::bwd::supported_hdim(static_cast<int>(s.hdim)))
        return "fused-sm90's backward runs hdim 64 and 128, not " + std::to_string(s.hdim);
      if (bwd_main_ctas(s) > INT32_MAX) return "fused-sm90's backward: more than 2^31 CTAs";
    }
    if (s.batch * s.heads > INT32_MAX || s.seq_q > INT32_MAX || s.seq_k > INT32_MAX)
      return "fused-sm90: a TMA coordinate would exceed 2^31";
    return {};
  }
  // fp8: V^T (write_vt's output), one byte per element. The backward: dQ's fp32 accumulator, LSE in
  // log2 units and D, per row of Q (the fused kernel's BwdWorkspace).
  size_t workspace_bytes(const core::Shape& s) const override {
    if (s.backward())
      return unsupported_reason(s).empty()
                 ? static_cast<size_t>(fused::bwd_workspace(bwd_q_rows(s), static_cast<int>(s.hdim)).bytes())
                 : 0;
    if (!s.quantized_q()) return 0;
    return static_cast<size_t>(s.batch * s.kv_heads * s.hdim * f3::fp8::vt_keys(s.seq_k));
  }
  bool masks_window() const override { return true; }
  bool runs_fp8() const override { return true; }
  bool runs_backward() const override { return true; }
  // fwd: one launch (fp8: the V transpose first); bwd: the three stages; fwd_bwd: "fwd" then the three.
  std::vector<std::string> stage_names(const core::Shape& s) const override {
    // The backward's stages as the fused kernel's (the main one is this kernel's), so tables line up.
    if (s.backward()) return fused::bwd_stage_names(s);
    if (s.quantized_q()) return {"v_transpose", "attention"};
    return {name()};
  }

  // The backward's tile (fused_sm90_tiles.hpp's bwd) and how dQ is summed: fp32 reductions in L2
  // (dq_atomic 1, here TMA reductions of each block's dQ tile).
  std::map<std::string, int64_t> plan(const core::Shape& s) const override {
    if (!s.backward() || !unsupported_reason(s).empty()) return {};
    return {{"bwd_block_m", f3::bwd::block_m(static_cast<int>(s.hdim))}, {"bwd_block_n", f3::bwd::kBlockN},
            {"bwd_warps", f3::bwd::kThreads / 32}, {"dq_atomic", 1}};
  }

  std::vector<LaunchInfo> launch_info(const core::Shape& s) const override {
    if (!unsupported_reason(s).empty()) return {};
    if (!s.backward()) return forward_launch_info(s);
    std::vector<LaunchInfo> infos;
    if (s.pass == core::Pass::fwd_bwd) infos.push_back(forward_launch_info(s).back());
    const int hdim = static_cast<int>(s.hdim);
    infos.push_back(fused::bwd_stage_launch_info(s, fused::BwdStage::preprocess, 0));
    LaunchInfo main;
    main.kernel_name = "fused_sm90_bwd_main_kernel<" + std::string(core::to_string(s.dtype)) + ", d" +
                       std::to_string(hdim) + ">";
    fused::dispatch_bwd_hdim(hdim, [&](auto d) { main.func = f3::bwd_main_func<d.value>(s.dtype); });
    main.grid_blocks = bwd_main_ctas(s);
    main.block_threads = f3::bwd::kThreads;
    main.dynamic_smem_bytes = f3::bwd::smem_bytes(hdim);
    infos.push_back(main);
    infos.push_back(fused::bwd_stage_launch_info(s, fused::BwdStage::dq_convert, 0));
    return infos;
  }

  void launch(const AttentionArgs& a, StageHook* hook) const override {
    const core::Shape& s = a.shape;
    if (const std::string why = unsupported_reason(s); !why.empty()) throw CudaError(why);
    const nvtx3::scoped_range range("fused-sm90 " + s.label());
    int stage = 0;
    if (s.pass != core::Pass::bwd) launch_forward(a, hook, stage);
    if (s.backward()) launch_backward(a, hook, stage);
    if (hook) hook->after_last();
  }

 private:
  // The forward's launches: the V transpose (fp8) and the attention kernel.
  std::vector<LaunchInfo> forward_launch_info(const core::Shape& s) const {
    const Schedule schedule = schedule_for(s);
    const int tile = tile_of(s);
    LaunchInfo info;
    info.kernel_name = "fused_sm90_kernel<" + std::string(core::to_string(s.dtype)) + ", d" +
                       std::to_string(tile) + ", " + std::string(f3::to_string(schedule)) + ">";
    f3::dispatch_tile(tile, [&](auto t) { info.func = f3::kernel_func<t.value>(s.dtype, schedule); });
    info.grid_blocks = plan_for(s).grid;
    info.block_threads = f3::kThreads;
    info.dynamic_smem_bytes = s.quantized_q() ? f3::fp8::smem_bytes(tile) : f3::smem_bytes(tile);
    if (!s.quantized_q()) return {info};
    LaunchInfo vt;
    vt.kernel_name = "write_vt_kernel";
    vt.func = f3::write_vt_func();
    vt.grid_blocks = f3::fp8::vt_ctas(s.seq_k, static_cast<int>(s.hdim), s.batch * s.kv_heads);
    vt.block_threads = f3::fp8::kVtThreads;
    return {vt, info};
  }

  // O and LSE from Q, K, V: hook's stages from `stage` on (the fp8 V transpose, then the attention
  // kernel; one stage, "fwd", in a fwd_bwd call).
  void launch_forward(const AttentionArgs& a, StageHook* hook, int& stage) const {
    const core::Shape& s = a.shape;
    const Schedule schedule = schedule_for(s);
    const int tile = tile_of(s);
    const auto block_n = static_cast<uint32_t>(block_n_of(s));
    const auto stream = static_cast<cudaStream_t>(a.stream);
    f3::Sm90Maps maps;
    maps.q = make_map(a.q, s.dtype, s.hdim, s.seq_q, s.batch * s.heads, f3::kBlockM);
    maps.k = make_map(a.k, s.dtype, s.hdim, s.seq_k, s.batch * s.kv_heads, block_n);
    if (s.quantized_q()) {
      // V^T: rows of vt_keys keys, boxes of 128 keys x hdim rows.
      const int64_t keys = f3::fp8::vt_keys(s.seq_k);
      if (a.workspace_bytes < workspace_bytes(s)) throw CudaError("fused-sm90: the workspace is too small for V^T");
      maps.v = make_map(a.workspace, s.dtype, keys, s.hdim, s.batch * s.kv_heads, static_cast<uint32_t>(s.hdim));
    } else {
      maps.v = make_map(a.v, s.dtype, s.hdim, s.seq_k, s.batch * s.kv_heads, block_n);
    }
    // O is stored by each consumer warpgroup, 64 rows at a time (tiles up to 128 columns).
    maps.o = make_map(a.o, s.out_dtype(), s.hdim, s.seq_q, s.batch * s.heads, 64);
    f3::Sm90Params p{};
    p.o = a.o;
    p.lse = a.lse;
    p.q_scale = a.q_scale;
    p.k_scale = a.k_scale;
    p.v_scale = a.v_scale;
    fill_shape_fields(p, s);
    p.num_m_blocks = static_cast<int>(f3::m_blocks(s.seq_q));
    p.num_tiles = static_cast<int>(p.num_m_blocks * s.batch * s.heads);
    const f3::GridPlan plan = plan_for(s);
    p.rotated = plan.rotated ? 1 : 0;
    const auto grid = static_cast<unsigned>(plan.grid);
    if (s.quantized_q()) {
      if (!a.q_scale || !a.k_scale || !a.v_scale) throw CudaError("fused-sm90: an fp8 call without its scales");
      if (hook) hook->before_stage(stage++);
      f3::write_vt(a.v, a.workspace, s.batch * s.kv_heads, s.seq_k, static_cast<int>(s.hdim), stream);
    }
    if (hook) hook->before_stage(stage++);
    f3::dispatch_tile(tile, [&](auto t) { f3::launch_kernel<t.value>(s.dtype, schedule, maps, p, grid, stream); });
  }

  // dQ, dK, dV from Q, K, V, O, dO and LSE: hook's stages first_stage on.
  static void launch_backward(const AttentionArgs& a, StageHook* hook, int first_stage) {
    const core::Shape& s = a.shape;
    const int hdim = static_cast<int>(s.hdim);
    const fused::FusedBwdParams p =
        fused::bwd_params(a, static_cast<int>(f3::bwd::key_blocks(s.seq_k)), "fused-sm90");
    const auto stream = static_cast<cudaStream_t>(a.stream);
    const int64_t ctas = bwd_main_ctas(s);
    f3::Sm90BwdMaps maps;
    const int64_t q_heads = s.batch * s.heads, kv_heads = s.batch * s.kv_heads;
    const int block_m = f3::bwd::block_m(hdim);
    maps.q = make_map(a.q, s.dtype, s.hdim, s.seq_q, q_heads, block_m);
    maps.d_o = make_map(a.d_o, s.dtype, s.hdim, s.seq_q, q_heads, block_m);
    maps.k = make_map(a.k, s.dtype, s.hdim, s.seq_k, kv_heads, f3::bwd::kBlockN);
    maps.v = make_map(a.v, s.dtype, s.hdim, s.seq_k, kv_heads, f3::bwd::kBlockN);
    maps.dq_accum = make_map(p.dq_accum, core::DType::fp32, s.hdim, s.seq_q, q_heads, block_m);
    fused::dispatch_bwd_hdim(hdim, [&](auto d) {
      if (hook) hook->before_stage(first_stage);
      fused::launch_bwd_stage<d.value>(s.dtype, fused::BwdStage::preprocess, p, 0, stream);
      if (hook) hook->before_stage(first_stage + 1);
      f3::launch_bwd_main<d.value>(s.dtype, maps, p, ctas, stream);
      if (hook) hook->before_stage(first_stage + 2);
      fused::launch_bwd_stage<d.value>(s.dtype, fused::BwdStage::dq_convert, p, 0, stream);
    });
  }
};

const FusedSm90Kernel kInstance;
const Registrar kReg{&kInstance};

}  // namespace

}  // namespace attnprof::kernels
