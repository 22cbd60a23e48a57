// The fused-sm90 attention forward: FlashAttention-3's structure on Hopper's own instructions.
//
//   CTA        persistent (at most one per SM), walking work tiles of 128 query rows of one (batch,
//              head). Warpgroup 0 produces: after giving most of its registers back (setmaxnreg.dec),
//              one thread loads each tile's Q and then every K and V tile the tile can see with TMA
//              into a ring of shared-memory stages, each completing on its mbarrier (K and V
//              separately, so S = Q K^T can start before V lands); the next tile's loads start while
//              the current one finishes. Warpgroups 1 and 2 consume (setmaxnreg.inc), 64 query rows
//              each, and release a stage (or Q) by arriving on its "empty" mbarrier once their MMAs
//              have read it.
//   consumer   S = Q K^T with wgmma m64n{block_n}k16, A = Q and B = K both from shared memory (K-major);
//              online softmax in fp32 with exp2 on the accumulators in registers (the 4 lanes of a quad
//              hold one row); O += P V with wgmma m64n{hdim}k16, A = P converted in registers from the
//              S accumulators, B = V from shared memory read MN-major (the descriptor's transpose).
//              Schedule::overlap issues S of tile j+1 and P V of tile j back to back and runs the
//              softmax of tile j+1 while P V is still on the tensor cores; Schedule::pingpong also
//              makes the two consumer warpgroups take turns on the tensor cores.
// Tiles are 64-column panels of 128-byte rows in TMA's 128-byte swizzle, which is exactly the
// layout a wgmma descriptor with 128-byte swizzle reads; advancing 16 elements along K inside a panel
// is +32 bytes on the descriptor's start address. Tails: TMA zero-fills rows past seq_q / seq_k of
// the (batch, head) (the tensor maps are 3D: hdim, seq, batch * heads), scores past seq_k or outside
// a row's causal or window limits become -inf, and O leaves through a swizzled shared-memory staging
// buffer and a TMA store that clips rows past seq_q (tiles up to 128 columns), or from registers (wider
// tiles); LSE is stored directly, rows < seq_q. A work tile loads only the key tiles some row of it
// sees: none past its last row's causal or window limit, none before its first row's window
// (key_tiles, first_key_tile). Head dims: fused_sm90_tiles.hpp (kernels are instantiated per tile
// width, fused_sm90_d<width>.cu).
// dtype fp8_e4m3 (T = __nv_fp8_e4m3, TileOps' specialization): the same body on E4M3 operands: wgmma
// m64n128k32 for both products, V read as V^T tiles that fused_sm90_vt.cu writes first (fp8 wgmma takes
// B K-major only), P packed to E4M3 in registers in the key order V^T follows, the scores scaled by
// q_scale k_scale and O by v_scale, O written in bf16.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/fused_sm90/fused_sm90_launch.hpp"
#include "core/tiles/fused_sm90_tiles.hpp"
#include "kernels/fused_sm90/sm90_ptx.cuh"

namespace attnprof::kernels::fused_sm90 {

// One work tile: query rows m0 .. m0 + 127 of (batch, head) bh, reading kv head kv_bh, key tiles
// first_tile .. first_tile + n_blocks - 1. Query blocks of one (batch, head) are adjacent in tile
// order (they share K/V in L2); with a causal mask their order is heaviest first, and with a causal
// mask or a window rotated per head when the plan says so (plan_grid).
struct WorkTile {
  int bh, kv_bh, m0, first_tile, n_blocks;
};

template <int kBN>
__device__ __forceinline__ WorkTile decode_tile(int tile, const Sm90Params& p) {
  const int bh = tile / p.num_m_blocks;
  const int m_block = static_cast<int>(work_tile_m_block(tile, p.num_m_blocks, p.causal != 0, p.rotated != 0));
  WorkTile w;
  w.bh = bh;
  w.kv_bh = (bh / p.heads) * p.kv_heads + (bh % p.heads) / p.group;
  w.m0 = m_block * kBlockM;
  w.first_tile = static_cast<int>(first_key_tile(w.m0, p.seq_q, p.seq_k, p.causal != 0, p.window, kBN));
  w.n_blocks = static_cast<int>(key_tiles(w.m0, p.seq_q, p.seq_k, p.causal != 0, p.window, kBN));
  return w;
}

inline constexpr float kLn2 = 0.6931471805599453f;

// Accumulator registers [kFirst, kFirst + kN) of an array, as the array a wgmma of kN outputs takes.
// The accumulator layout of m64nN makes registers 64 c .. 64 c + 63 of an m64n{hdim} accumulator
// exactly the m64n128 accumulator of columns 128 c .. 128 c + 127.
template <int kFirst, int kN, int kAll>
__device__ __forceinline__ float (&acc_slice(float (&acc)[kAll]))[kN] {
  static_assert(kFirst + kN <= kAll, "the slice lies inside the accumulator");
  return *reinterpret_cast<float(*)[kN]>(&acc[kFirst]);
}

// S (64 x kBN) = Q K^T for one consumer warpgroup; q_base is the warpgroup's first row in panel 0.
template <typename T, int kHeadDim>
__device__ __forceinline__ void issue_qk(float (&s)[block_n(kHeadDim) / 2], uint32_t q_base, uint32_t k_tile) {
#pragma unroll
  for (int ks = 0; ks < kHeadDim / 16; ++ks) {
    const uint64_t a = smem_desc_sw128(q_base + (ks / 4) * q_panel_bytes() + (ks % 4) * 32, 16, 1024);
    const uint64_t b =
        smem_desc_sw128(k_tile + (ks / 4) * kv_panel_bytes(kHeadDim) + (ks % 4) * 32, 16, 1024);
    if constexpr (block_n(kHeadDim) == 128) wgmma_m64n128k16_ss(s, a, b, ks > 0 ? 1 : 0, dtype_tag<T>{});
    else if constexpr (block_n(kHeadDim) == 80) wgmma_m64n80k16_ss(s, a, b, ks > 0 ? 1 : 0, dtype_tag<T>{});
    else wgmma_m64n64k16_ss(s, a, b, ks > 0 ? 1 : 0, dtype_tag<T>{});
  }
}

// O (64 x hdim) += P V; P's k16 slice ks is registers p[4 ks .. 4 ks + 3]. O's columns go in chunks of
// 128 (two V panels, m64n128k16), then a last 64 (m64n64k16) when hdim is an odd number of panels.
template <typename T, int kHeadDim>
__device__ __forceinline__ void issue_pv(float (&o)[kHeadDim / 2], const uint32_t (&p)[block_n(kHeadDim) / 4],
                                         uint32_t v_tile) {
  constexpr uint32_t kPanel = kv_panel_bytes(kHeadDim);
#pragma unroll
  for (int ks = 0; ks < block_n(kHeadDim) / 16; ++ks) {
    const uint32_t a[4] = {p[4 * ks], p[4 * ks + 1], p[4 * ks + 2], p[4 * ks + 3]};
    const uint32_t rows = v_tile + ks * 16 * 128;
    if constexpr (kHeadDim >= 128)
      wgmma_m64n128k16_rs(acc_slice<0, 64>(o), a, smem_desc_sw128(rows, kPanel, 1024), 1, dtype_tag<T>{});
    if constexpr (kHeadDim >= 256)
      wgmma_m64n128k16_rs(acc_slice<64, 64>(o), a, smem_desc_sw128(rows + 2 * kPanel, kPanel, 1024), 1,
                          dtype_tag<T>{});
    if constexpr (kHeadDim % 128 != 0)
      wgmma_m64n64k16_rs(acc_slice<(kHeadDim / 128) * 64, 32>(o), a,
                         smem_desc_sw128(rows + (kHeadDim / 128) * 2 * kPanel, kPanel, 1024), 1, dtype_tag<T>{});
  }
}

// Per-thread softmax state of its two rows (quad row g and g + 8 of its warp's 16).
struct RowState {
  float max[2];  // raw (unscaled) running max; -inf until a row has seen a key
  float sum[2];  // this lane's partial sum of exp2; quad-reduced in the epilogue
};

// Masks S for key tile n0 when it straddles seq_k or a row's causal or window limit (tile_needs_mask
// in 32-bit arithmetic); row0 is the thread's first (global) query row.
template <int kBN>
__device__ __forceinline__ void mask_tile(float (&s)[kBN / 2], const Sm90Params& p, int m0, int row0, int n0,
                                          int quad_col) {
  const int p_first = m0 + p.seq_k - p.seq_q, p_last = p_first + kBlockM - 1;
  const bool needs_mask = n0 + kBN > p.seq_k || (p.causal && n0 + kBN - 1 > p_first) ||
                          (p.window > 0 && ((!p.causal && n0 + kBN - 1 >= p_first + p.window) ||
                                            n0 <= p_last - p.window));
  if (needs_mask) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int pos = row0 + half * 8 + p.seq_k - p.seq_q;
      const int key_end = min(p.seq_k, p.causal ? pos + 1 : p.window > 0 ? pos + p.window : p.seq_k);
      const int key_begin = p.window > 0 ? pos - p.window + 1 : 0;
      // key in [key_begin, key_end) as one unsigned compare of key - key_begin against the width
      // (an empty range, width <= 0, keeps nothing): two compares per score made ptxas spill 8-16
      // bytes at hdim 128 (overlap, pingpong); this form spills none.
      const int offset = n0 + quad_col * 2 - key_begin;
      const unsigned width = static_cast<unsigned>(max(0, key_end - key_begin));
#pragma unroll
      for (int nt = 0; nt < kBN / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (static_cast<unsigned>(offset + nt * 8 + e) >= width) s[nt * 4 + half * 2 + e] = -INFINITY;
    }
  }
}

// Online softmax on S in place (S becomes exp2(scale_log2 * (s - max))) with the lazy row max of
// move_lazy_max (kernels/common/device_math.cuh): rescale[h] is the factor by which O and the sums
// accumulated under the old max shrink. Returns whether the warp moved any max (warp-uniform; when it
// did not, every rescale is exactly 1).
template <int kBN>
__device__ __forceinline__ bool softmax_tile(float (&s)[kBN / 2], RowState& st, float scale_log2,
                                             float (&rescale)[2]) {
  float lane_max[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float m = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) m = fmaxf(m, fmaxf(s[nt * 4 + half * 2], s[nt * 4 + half * 2 + 1]));
    lane_max[half] = m;
  }
  const bool moved = move_lazy_max(st.max, lane_max, scale_log2, rescale);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    // A row with no visible key so far keeps max -inf; subtracting 0 keeps exp2(-inf) = 0.
    const float max_scaled = st.max[half] == -INFINITY ? 0.f : st.max[half] * scale_log2;
    float tile_sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& v = s[nt * 4 + half * 2 + e];
        v = fast_exp2(fmaf(v, scale_log2, -max_scaled));
        tile_sum += v;
      }
    st.sum[half] = st.sum[half] * rescale[half] + tile_sum;
  }
  return moved;
}

// O *= rescale per row, only when softmax_tile moved a max of the warp.
template <int kHeadDim>
__device__ __forceinline__ void rescale_o(float (&o)[kHeadDim / 2], const float (&rescale)[2], bool moved) {
  if (!moved) return;
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) o[i] *= rescale[(i / 2) % 2];
}

// The accumulator layout of wgmma m64nN (per warp: 16 rows; registers 4i..4i+3 are columns 8i + 2t,
// +1 of rows g and g + 8) makes two adjacent n8 groups of S exactly one k16 A fragment of P.
template <typename T, int kBN>
__device__ __forceinline__ void convert_p(const float (&s)[kBN / 2], uint32_t (&p)[kBN / 4]) {
#pragma unroll
  for (int i = 0; i < kBN / 4; ++i) p[i] = pack2<T>(s[2 * i], s[2 * i + 1]);
}

// What the kernel body below needs of its element type: tile geometry, the TMA loads of a tile, the two
// MMAs, P's conversion, and the scales the scores and O take (1 for 16-bit inputs).
template <typename T, int kTile>
struct TileOps {
  using Out = T;
  static constexpr int kBN = block_n(kTile);
  static constexpr int kStages = kv_stages(kTile);
  static constexpr int kPRegs = kBN / 4;
  static constexpr uint32_t kQBytes = q_bytes(kTile), kTileBytes = kv_tile_bytes(kTile);
  static constexpr bool kStagesO = stages_o(kTile);
  static constexpr uint32_t kKOffset = k_offset(kTile), kVOffset = v_offset(kTile), kOOffset = o_offset(kTile),
                            kBarrierOffset = barrier_offset(kTile), kOStageBytes = o_stage_bytes(kTile);
  __device__ static void load_q(uint32_t dst, const CUtensorMap* map, int m0, int bh, uint32_t bar) {
#pragma unroll
    for (int panel = 0; panel < panels(kTile); ++panel)
      tma_load_3d(dst + panel * q_panel_bytes(), map, panel * kPanelCols, m0, bh, bar);
  }
  // K and V tiles alike: kBN rows of the (batch, kv head) from key0.
  __device__ static void load_kv(uint32_t dst, const CUtensorMap* map, int key0, int kv_bh, uint32_t bar) {
#pragma unroll
    for (int panel = 0; panel < panels(kTile); ++panel)
      tma_load_3d(dst + panel * kv_panel_bytes(kTile), map, panel * kPanelCols, key0, kv_bh, bar);
  }
  __device__ static void load_k(uint32_t dst, const CUtensorMap* map, int key0, int kv_bh, uint32_t bar) {
    load_kv(dst, map, key0, kv_bh, bar);
  }
  __device__ static void load_v(uint32_t dst, const CUtensorMap* map, int key0, int kv_bh, uint32_t bar) {
    load_kv(dst, map, key0, kv_bh, bar);
  }
  __device__ static void qk(float (&s)[kBN / 2], uint32_t q_base, uint32_t k_tile) {
    issue_qk<T, kTile>(s, q_base, k_tile);
  }
  __device__ static void pv(float (&o)[kTile / 2], const uint32_t (&p)[kPRegs], uint32_t v_tile) {
    issue_pv<T, kTile>(o, p, v_tile);
  }
  __device__ static void to_p(const float (&s)[kBN / 2], uint32_t (&p)[kPRegs]) { convert_p<T, kBN>(s, p); }
  __device__ static float qk_scale(const Sm90Params&) { return 1.f; }
  __device__ static float v_scale(const Sm90Params&) { return 1.f; }
};

// fp8 E4M3 (fused_sm90_tiles.hpp's fp8 namespace): Q and K in 128-element panels, V^T tiles of hdim rows
// of 128 keys, m64n128k32 MMAs, P packed four bytes to a register in the order V^T's keys follow.
template <int kHeadDim>
struct TileOps<__nv_fp8_e4m3, kHeadDim> {
  using Out = __nv_bfloat16;
  static constexpr int kBN = fp8::block_n();
  static constexpr int kStages = fp8::kv_stages(kHeadDim);
  static constexpr int kPRegs = kBN / 8;
  static constexpr uint32_t kQBytes = fp8::q_bytes(kHeadDim), kTileBytes = fp8::kv_tile_bytes(kHeadDim);
  static constexpr bool kStagesO = fp8::stages_o(kHeadDim);
  static constexpr uint32_t kKOffset = fp8::k_offset(kHeadDim), kVOffset = fp8::v_offset(kHeadDim),
                            kOOffset = fp8::o_offset(kHeadDim), kBarrierOffset = fp8::barrier_offset(kHeadDim),
                            kOStageBytes = fp8::o_stage_bytes(kHeadDim);
  static_assert(fp8::supported_hdim(kHeadDim), "fp8 tiles are 128 or 256 columns wide");
  __device__ static void load_q(uint32_t dst, const CUtensorMap* map, int m0, int bh, uint32_t bar) {
#pragma unroll
    for (int panel = 0; panel < fp8::panels(kHeadDim); ++panel)
      tma_load_3d(dst + panel * fp8::q_panel_bytes(), map, panel * fp8::kPanelCols, m0, bh, bar);
  }
  __device__ static void load_k(uint32_t dst, const CUtensorMap* map, int key0, int kv_bh, uint32_t bar) {
#pragma unroll
    for (int panel = 0; panel < fp8::panels(kHeadDim); ++panel)
      tma_load_3d(dst + panel * fp8::k_panel_bytes(), map, panel * fp8::kPanelCols, key0, kv_bh, bar);
  }
  // One box of V^T: hdim rows of 128 keys from key0.
  __device__ static void load_v(uint32_t dst, const CUtensorMap* map, int key0, int kv_bh, uint32_t bar) {
    tma_load_3d(dst, map, key0, 0, kv_bh, bar);
  }
  // S (64 x 128) = Q K^T: k32 slice ks is 32 bytes into panel ks / 4 of each row.
  __device__ static void qk(float (&s)[kBN / 2], uint32_t q_base, uint32_t k_tile) {
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 32; ++ks) {
      const uint64_t a = smem_desc_sw128(q_base + (ks / 4) * fp8::q_panel_bytes() + (ks % 4) * 32, 16, 1024);
      const uint64_t b = smem_desc_sw128(k_tile + (ks / 4) * fp8::k_panel_bytes() + (ks % 4) * 32, 16, 1024);
      wgmma_m64n128k32_ss_e4m3(s, a, b, ks > 0 ? 1 : 0);
    }
  }
  // O (64 x hdim) += P V: V^T's rows are O's columns, 128 at a time; key slice ks is 32 bytes into them.
  __device__ static void pv(float (&o)[kHeadDim / 2], const uint32_t (&p)[kPRegs], uint32_t vt_tile) {
#pragma unroll
    for (int ks = 0; ks < kBN / 32; ++ks) {
      const uint32_t a[4] = {p[4 * ks], p[4 * ks + 1], p[4 * ks + 2], p[4 * ks + 3]};
      wgmma_m64n128k32_rs_e4m3(acc_slice<0, 64>(o), a, smem_desc_sw128(vt_tile + ks * 32, 16, 1024), 1);
      if constexpr (kHeadDim == 256)
        wgmma_m64n128k32_rs_e4m3(acc_slice<64, 64>(o), a,
                                 smem_desc_sw128(vt_tile + 128 * 128 + ks * 32, 16, 1024), 1);
    }
  }
  // Register 4 ks + r of P: accumulator groups 4 ks .. 4 ks + 3 (8 keys each); r = 0 and 1 take rows g
  // and g + 8 of groups 4 ks and 4 ks + 1, r = 2 and 3 those of groups 4 ks + 2 and 4 ks + 3, each as
  // keys 2t, 2t + 1 of the first group then of the second (fp8::vt_source_key's order).
  __device__ static void to_p(const float (&s)[kBN / 2], uint32_t (&p)[kPRegs]) {
    auto pack = [](float a, float b) -> uint32_t {
      return static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3));
    };
#pragma unroll
    for (int ks = 0; ks < kBN / 32; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int g0 = 4 * ks + (r / 2) * 2, half = r % 2;
        const float* first = &s[4 * g0 + 2 * half];
        const float* second = &s[4 * (g0 + 1) + 2 * half];
        p[4 * ks + r] = pack(first[0], first[1]) | (pack(second[0], second[1]) << 16);
      }
  }
  // The scores are q_scale k_scale times Q K^T of the stored bytes; O is v_scale times P V.
  __device__ static float qk_scale(const Sm90Params& p) { return *p.q_scale * *p.k_scale; }
  __device__ static float v_scale(const Sm90Params& p) { return *p.v_scale; }
};

template <typename T, int kHeadDim, Schedule kSchedule>
__global__ void __launch_bounds__(kThreads, 1)
    fused_sm90_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                      const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_o,
                      const Sm90Params p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // Only the sm_90a image has a body; the host refuses other devices (unsupported_reason).
  __trap();
#elif defined(__CUDA_ARCH__)
  using Ops = TileOps<T, kHeadDim>;
  using Out = typename Ops::Out;
  constexpr int kBN = Ops::kBN;
  constexpr int kStages = Ops::kStages;
  constexpr uint32_t kTileBytes = Ops::kTileBytes;

  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t s_q = base;
  const uint32_t s_k = base + Ops::kKOffset;
  const uint32_t s_v = base + Ops::kVOffset;
  const uint32_t s_o = base + Ops::kOOffset;
  const uint32_t bar_q = base + Ops::kBarrierOffset;
  const uint32_t bar_q_empty = bar_q + 8u;
  auto bar_k_full = [&](int stage) { return bar_q + 8u * (2 + stage); };
  auto bar_v_full = [&](int stage) { return bar_q + 8u * (2 + kStages + stage); };
  auto bar_empty = [&](int stage) { return bar_q + 8u * (2 + 2 * kStages + stage); };

  if (threadIdx.x == 0) {
    mbar_init(bar_q, 1);
    mbar_init(bar_q_empty, kConsumerThreads);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(bar_k_full(s), 1);
      mbar_init(bar_v_full(s), 1);
      mbar_init(bar_empty(s), kConsumerThreads);
    }
    mbar_fence_init();
  }
  __syncthreads();

  // Every role walks the same work tiles. Key tiles are counted across them (`it`): key tile `it` of
  // the CTA uses stage it % kStages in its (it / kStages)-th round; Q loads are counted likewise.
  if (threadIdx.x < kWarpgroupThreads) {
    // ---------------- producer warpgroup ----------------
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      tma_prefetch_map(&tm_q);
      tma_prefetch_map(&tm_k);
      tma_prefetch_map(&tm_v);
      int it = 0, q_loads = 0;
      for (int tile = static_cast<int>(blockIdx.x); tile < p.num_tiles; tile += static_cast<int>(gridDim.x)) {
        const WorkTile w = decode_tile<kBN>(tile, p);
        if (w.n_blocks == 0) continue;  // no key visible: the consumers write zeros, nothing to load
        // Q reuse: both consumer warpgroups have finished every S of the previous tile.
        if (q_loads > 0) mbar_wait(bar_q_empty, static_cast<uint32_t>((q_loads - 1) & 1));
        ++q_loads;
        mbar_arrive_expect_tx(bar_q, Ops::kQBytes);
        Ops::load_q(s_q, &tm_q, w.m0, w.bh, bar_q);
        for (int j = 0; j < w.n_blocks; ++j, ++it) {
          const int stage = it % kStages;
          // Stage reuse: wait until both consumer warpgroups released the key tile kStages before.
          if (it >= kStages) mbar_wait(bar_empty(stage), static_cast<uint32_t>((it / kStages - 1) & 1));
          const uint32_t k_dst = s_k + stage * kTileBytes, v_dst = s_v + stage * kTileBytes;
          const int key0 = (w.first_tile + j) * kBN;
          mbar_arrive_expect_tx(bar_k_full(stage), kTileBytes);
          Ops::load_k(k_dst, &tm_k, key0, w.kv_bh, bar_k_full(stage));
          mbar_arrive_expect_tx(bar_v_full(stage), kTileBytes);
          Ops::load_v(v_dst, &tm_v, key0, w.kv_bh, bar_v_full(stage));
        }
      }
    }
  } else {
    // ---------------- consumer warpgroups ----------------
    setmaxnreg_inc<kConsumerRegs>();
    const int ctid = static_cast<int>(threadIdx.x) - kWarpgroupThreads;
    const int wg = ctid / kWarpgroupThreads;              // 0 or 1: rows 64 wg .. 64 wg + 63
    const int warp = (ctid % kWarpgroupThreads) / 32;     // 16 rows each inside the warpgroup
    const int lane = ctid % 32;
    const int quad_row = lane / 4, quad_col = lane % 4;
    const int row_in_wg = warp * 16 + quad_row;           // this thread's rows: this and + 8
    const bool store_thread = ctid % kWarpgroupThreads == 0;  // issues the warpgroup's O stores
    const uint32_t q_base = s_q + wg * 64 * 128;
    const uint32_t o_stage = s_o + wg * Ops::kOStageBytes;
    const float scale_log2 = p.scale_log2 * Ops::qk_scale(p);
    const float v_scale = Ops::v_scale(p);

    float o[kHeadDim / 2];
    float s[kBN / 2];
#pragma unroll
    for (int i = 0; i < kBN / 2; ++i) s[i] = 0.f;
    uint32_t pf[Ops::kPRegs];
    float rescale[2];
    int it = 0, q_loads = 0;

    for (int tile = static_cast<int>(blockIdx.x); tile < p.num_tiles; tile += static_cast<int>(gridDim.x)) {
      const WorkTile w = decode_tile<kBN>(tile, p);
      const int row0 = w.m0 + wg * 64 + row_in_wg;
#pragma unroll
      for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.f;
      RowState st{{-INFINITY, -INFINITY}, {0.f, 0.f}};
      const int n_blocks = w.n_blocks;

      if (n_blocks > 0) {
        mbar_wait(bar_q, static_cast<uint32_t>(q_loads & 1));
        ++q_loads;
        if constexpr (kSchedule == Schedule::serial) {
          for (int j = 0; j < n_blocks; ++j) {
            const int stage = (it + j) % kStages;
            const uint32_t phase = static_cast<uint32_t>(((it + j) / kStages) & 1);
            mbar_wait(bar_k_full(stage), phase);
            wgmma_fence();
            Ops::qk(s, q_base, s_k + stage * kTileBytes);
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(s);
            mask_tile<kBN>(s, p, w.m0, row0, (w.first_tile + j) * kBN, quad_col);
            const bool moved = softmax_tile<kBN>(s, st, scale_log2, rescale);
            rescale_o<kHeadDim>(o, rescale, moved);
            Ops::to_p(s, pf);
            mbar_wait(bar_v_full(stage), phase);
            wgmma_fence();
            Ops::pv(o, pf, s_v + stage * kTileBytes);
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(o);
            fence_regs(pf);
            mbar_arrive(bar_empty(stage));
          }
          mbar_arrive(bar_q_empty);
        } else {
          // pingpong: warpgroup w issues its MMAs only in its turn (named barrier 1 + w) and then
          // hands the turn to the other (bar.arrive), so the tensor cores alternate between the two
          // while each one's softmax runs under the other's MMAs. In every work tile warpgroup 0 goes
          // first (warpgroup 1 opens its turn) and the last turn of warpgroup 1 hands nothing over,
          // so every barrier phase completes: each warpgroup has n_blocks + 1 turns per tile.
          constexpr bool kPingpong = kSchedule == Schedule::pingpong;
          int turns_left = n_blocks + 1;
          auto turn_begin = [&] {
            if constexpr (kPingpong) named_bar_sync(1 + wg, kConsumerThreads);
          };
          auto turn_end = [&] {
            if constexpr (kPingpong) {
              --turns_left;
              if (wg == 0 || turns_left > 0) named_bar_arrive(2 - wg, kConsumerThreads);
            }
          };
          if constexpr (kPingpong) {
            if (wg == 1) named_bar_arrive(1, kConsumerThreads);
          }
          // The first key tile: S, softmax, P.
          {
            const int stage = it % kStages;
            mbar_wait(bar_k_full(stage), static_cast<uint32_t>((it / kStages) & 1));
            turn_begin();
            wgmma_fence();
            Ops::qk(s, q_base, s_k + stage * kTileBytes);
            wgmma_commit();
            turn_end();
            wgmma_wait<0>();
            fence_regs(s);
            mask_tile<kBN>(s, p, w.m0, row0, w.first_tile * kBN, quad_col);
            softmax_tile<kBN>(s, st, scale_log2, rescale);  // O is still zero: no rescale
            Ops::to_p(s, pf);
          }
          for (int j = 1; j < n_blocks; ++j) {
            const int stage = (it + j) % kStages, prev = (it + j - 1) % kStages;
            const uint32_t phase = static_cast<uint32_t>(((it + j) / kStages) & 1);
            const uint32_t prev_phase = static_cast<uint32_t>(((it + j - 1) / kStages) & 1);
            mbar_wait(bar_k_full(stage), phase);
            mbar_wait(bar_v_full(prev), prev_phase);
            turn_begin();
            wgmma_fence();
            Ops::qk(s, q_base, s_k + stage * kTileBytes);
            wgmma_commit();
            Ops::pv(o, pf, s_v + prev * kTileBytes);
            wgmma_commit();
            turn_end();
            // S of tile j is done; P V of tile j - 1 may still run while its softmax does.
            wgmma_wait<1>();
            fence_regs(s);
            mask_tile<kBN>(s, p, w.m0, row0, (w.first_tile + j) * kBN, quad_col);
            const bool moved = softmax_tile<kBN>(s, st, scale_log2, rescale);
            wgmma_wait<0>();
            fence_regs(o);
            fence_regs(pf);
            mbar_arrive(bar_empty(prev));
            rescale_o<kHeadDim>(o, rescale, moved);
            Ops::to_p(s, pf);
          }
          // Every S of this tile is done: Q may be replaced by the next tile's.
          mbar_arrive(bar_q_empty);
          const int last = (it + n_blocks - 1) % kStages;
          mbar_wait(bar_v_full(last), static_cast<uint32_t>(((it + n_blocks - 1) / kStages) & 1));
          turn_begin();
          wgmma_fence();
          Ops::pv(o, pf, s_v + last * kTileBytes);
          wgmma_commit();
          turn_end();
          wgmma_wait<0>();
          fence_regs(o);
          fence_regs(pf);
          mbar_arrive(bar_empty(last));
        }
        it += n_blocks;
      }

      // Epilogue: O = acc / sum, LSE = ln(sum exp(scale * s)) stored directly (rows < seq_q); rows that
      // saw no key get 0 and -inf. Up to 128 columns O goes through this warpgroup's staging buffer and
      // one TMA store (which clips rows past seq_q and columns past hdim); wider tiles store O from
      // registers, rows < seq_q.
      if constexpr (Ops::kStagesO) {
        if (store_thread) bulk_wait_read();  // the previous tile's store has read the staging buffer
        named_bar_sync(3 + wg, kWarpgroupThreads);
      }
      float* lse_bh = p.lse + static_cast<int64_t>(w.bh) * p.seq_q;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float sum = st.sum[half];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const float inv_sum = sum > 0.f ? v_scale / sum : 0.f;
        const int r = row_in_wg + half * 8;  // row inside the warpgroup's 64
        const int row = row0 + half * 8;
        if constexpr (Ops::kStagesO) {
#pragma unroll
          for (int nt = 0; nt < kHeadDim / 8; ++nt) {
            // Element (r, 8 nt + 2 quad_col) of 128-byte-swizzled 64-column panels: 16-byte chunk
            // (nt % 8) of row r lands at chunk (nt % 8) ^ (r % 8).
            const uint32_t addr = o_stage + (nt / 8) * o_panel_bytes() + r * 128 +
                                  ((((nt % 8) ^ (r % 8))) << 4) + quad_col * 4;
            st_shared_u32(addr, pack2<Out>(o[nt * 4 + half * 2] * inv_sum, o[nt * 4 + half * 2 + 1] * inv_sum));
          }
        } else if (row < p.seq_q) {
          Out* o_row = static_cast<Out*>(p.o) + (static_cast<int64_t>(w.bh) * p.seq_q + row) * kHeadDim;
#pragma unroll
          for (int nt = 0; nt < kHeadDim / 8; ++nt)
            *reinterpret_cast<uint32_t*>(o_row + nt * 8 + quad_col * 2) =
                pack2<Out>(o[nt * 4 + half * 2] * inv_sum, o[nt * 4 + half * 2 + 1] * inv_sum);
        }
        if (quad_col == 0 && row < p.seq_q)
          lse_bh[row] = sum > 0.f ? (st.max[half] * scale_log2 + log2f(sum)) * kLn2 : -INFINITY;
      }
      if constexpr (Ops::kStagesO) {
        fence_proxy_async_smem();
        named_bar_sync(3 + wg, kWarpgroupThreads);
        if (store_thread && w.m0 + wg * 64 < p.seq_q) {
#pragma unroll
          for (int panel = 0; panel < kHeadDim / 64; ++panel)
            tma_store_3d(&tm_o, o_stage + panel * o_panel_bytes(), panel * kPanelCols, w.m0 + wg * 64, w.bh);
          bulk_commit();
        }
      }
    }
    if (store_thread) bulk_wait_all();
  }
#endif
}

}  // namespace attnprof::kernels::fused_sm90
