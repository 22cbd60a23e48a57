// The fused-sm90 backward's main stage on Hopper's warpgroup MMA. The call is three launches, the
// first and last the fused kernel's own (fused_bwd_kernel.cuh): bwd_preprocess (D = rowsum(dO * O),
// LSE in log2 units, dq_accum zeroed), this kernel, bwd_dq_convert (dQ = scale * dq_accum).
//
// One CTA per block of bwd::kBlockN = 128 keys of one (batch, kv head). The CTA walks every block of
// bwd::block_m query rows (128 at hdim 64, 64 at 128) that sees one of its keys, in every query head of
// the GQA group (rows_seeing_keys, fused_tiles.hpp): step j of the walk is one such block.
//   producer   warpgroup 0, after giving its registers back (setmaxnreg.dec). Warp 0 loads K and V
//              once, then each step's Q and dO by TMA into a ring of bwd::kStages buffers (completing
//              on the stage's "full" mbarrier), its 32 lanes copying the step's LSE and D beside them;
//              it reuses a stage once both consumer warpgroups have arrived on its "empty" mbarrier.
//              Warp 1 adds each step's dQ tile to dq_accum with TMA reductions (fp32 adds in L2) once
//              the consumers have written it, and frees the tile when the reduction has read it.
//   consumers  warpgroups 1 and 2 (setmaxnreg.inc); warpgroup w owns keys 64 w .. 64 w + 63 and
//              keeps their dK and dV in registers (wgmma accumulators, hdim / 2 each). Per step:
//     S^T  = K Q^T       wgmma m64n{block_m}k16, A = its 64 rows of K, B = Q, both K-major from shared memory
//     dP^T = V dO^T      the same with V and dO
//     P^T  = exp2(S^T * scale_log2 - LSE_i * log2 e), masked scores 0 (the fused backward's limits)
//     dV  += P^T dO      A = P^T from the S^T accumulators in registers, B = dO read MN-major
//     dS^T = P^T * (dP^T - D_i), rounded to the dtype, also stored to shared memory (two buffers)
//     dK  += dS^T Q      A = dS^T from registers, B = Q read MN-major
//   then, after a barrier of the two consumer warpgroups (every key's dS^T is in shared memory),
//     dQ_j = dS K over the CTA's 128 keys: A = dS read MN-major from dS^T's rows, B = K read MN-major;
//   warpgroup w takes dQ's rows 64 w .. + 63 (block_m 128) or its columns w * hdim / 2 .. + hdim / 2
//   (block_m 64) and writes them into the step's dQ tile (one of bwd::dq_buffers, fp32 in TMA's
//   128-byte swizzle) for warp 1's reduction.
// dK (times softmax_scale) and dV are written once, at the end; a key no row sees gets zero.
// Every bf16/fp16 tile is 64-column panels of 128-byte rows, 16-byte chunk c of row r at chunk c ^ (r % 8):
// what TMA's SWIZZLE_128B writes and wgmma's 128-byte-swizzle descriptors read (dS^T's stores write
// it too); a dQ tile is panels of 32 fp32 columns in the same swizzle. Shared memory written by
// ordinary stores is fenced to the async proxy (wgmma and TMA read it there) before it is published.
// Head dims: bwd::kHeadDims (fused_sm90_tiles.hpp), each instantiated in fused_sm90_bwd.cu. dK and dV
// take hdim registers per consumer thread together (of bwd::kConsumerRegs), so a wider head needs dK's
// and dV's columns split between warpgroups, or dK and dV parked in shared memory.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/tiles/fused_sm90_tiles.hpp"
#include "core/tiles/fused_tiles.hpp"
#include "kernels/fused/fused_launch.hpp"
#include "kernels/fused_sm90/sm90_ptx.cuh"

namespace attnprof::kernels::fused_sm90 {

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(bwd::kThreads, 1)
    fused_sm90_bwd_main_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                               const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                               const __grid_constant__ CUtensorMap tm_dq, const fused::FusedBwdParams p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // only the sm_90a image has a body; the host refuses other devices
#elif defined(__CUDA_ARCH__)
  constexpr int kBlockM = bwd::block_m(kHeadDim), kBlockN = bwd::kBlockN;
  constexpr int kStages = bwd::kStages, kDqBuffers = bwd::dq_buffers(kHeadDim);
  constexpr uint32_t kKvPanel = bwd::kv_panel_bytes(), kQPanel = bwd::q_panel_bytes(kHeadDim);
  constexpr uint32_t kDqPanel = bwd::dq_panel_bytes(kHeadDim), kDsPanel = bwd::ds_panel_bytes();
  constexpr uint32_t kQBytes = bwd::q_bytes(kHeadDim), kDqBytes = bwd::dq_bytes(kHeadDim);
  constexpr int kKSteps = kHeadDim / 16;          // S^T and dP^T: k16 steps over hdim
  constexpr int kQSteps = kBlockM / 16;           // dV and dK: k16 steps over the block's query rows
  // dQ per consumer warpgroup: 64 rows (wgmma's M) by kDqCols columns, split by rows or by columns.
  constexpr bool kDqSplitRows = bwd::dq_split_rows(kHeadDim);
  constexpr int kDqCols = kDqSplitRows ? kHeadDim : kHeadDim / bwd::kWarpgroups;
  static_assert(kBlockM == 64 || kBlockM == 128, "S^T and dP^T are m64n64 or m64n128");
  static_assert(kDqSplitRows || kBlockM == 64, "a column split covers 64 rows");
  // The fused backward's mask test, for this kernel's block sizes.
  constexpr fused::BwdTileConfig kMaskBlock{kBlockM, kBlockN, 8, 1, 1, true, false};
  using Tag = dtype_tag<T>;

  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* const base_ptr = smem_raw + (base - raw);
  const uint32_t s_k = base + bwd::k_offset(), s_v = base + bwd::v_offset(kHeadDim);
  const uint32_t s_q = base + bwd::q_offset(kHeadDim), s_do = base + bwd::do_offset(kHeadDim);
  const uint32_t s_ds = base + bwd::ds_offset(kHeadDim), s_dq = base + bwd::dq_offset(kHeadDim);
  float* const lse_floats = reinterpret_cast<float*>(base_ptr + bwd::lse_offset(kHeadDim));
  float* const dsum_floats = reinterpret_cast<float*>(base_ptr + bwd::dsum_offset(kHeadDim));
  const uint32_t bar_kv = base + bwd::barrier_offset(kHeadDim);
  auto bar_full = [&](int stage) { return bar_kv + 8u * (1 + stage); };
  auto bar_empty = [&](int stage) { return bar_kv + 8u * (1 + kStages + stage); };
  auto bar_dq_full = [&](int b) { return bar_kv + 8u * (1 + 2 * kStages + b); };
  auto bar_dq_empty = [&](int b) { return bar_kv + 8u * (1 + 2 * kStages + kDqBuffers + b); };

  // Key blocks of one (batch, kv head) are adjacent in the grid (they read the same Q and dO).
  const int n_index = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.num_n_blocks));
  const int bkv = static_cast<int>(blockIdx.x / static_cast<unsigned>(p.num_n_blocks));
  const int batch = bkv / p.kv_heads;
  const int kv_head = bkv % p.kv_heads;
  const int seq_q = p.seq_q, seq_k = p.seq_k;
  const int head0 = batch * p.heads + kv_head * p.group;  // the group's first (batch, head)
  const int n0 = n_index * kBlockN;

  const fused::RowSpan rows = fused::rows_seeing_keys(n0, min(kBlockN, seq_k - n0), seq_q, seq_k, p.causal, p.window);
  const int first_m_block = rows.end > rows.begin ? static_cast<int>(rows.begin) / kBlockM : 0;
  const int m_blocks =
      rows.end > rows.begin ? static_cast<int>((rows.end + kBlockM - 1) / kBlockM) - first_m_block : 0;
  const int steps = m_blocks * p.group;
  // Step j: query block first_m_block + j % m_blocks of head j / m_blocks of the group. Each role walks
  // the steps in order with a Walk: the block's first row m0 and the (batch, head) index of Q's, dO's
  // and dq_accum's tensor maps.
  struct Walk {
    int m0, head;
  };
  const Walk first_step{first_m_block * kBlockM, head0};
  const int end_m0 = (first_m_block + m_blocks) * kBlockM;
  auto next_step = [&](Walk& w) {
    w.m0 += kBlockM;
    if (w.m0 == end_m0) {
      w.m0 = first_step.m0;
      ++w.head;
    }
  };

  if (threadIdx.x == 0) {
    mbar_init(bar_kv, 1);
    for (int st = 0; st < kStages; ++st) {
      mbar_init(bar_full(st), 1 + 32);  // the TMA bytes' arrival and warp 0's 32 lanes (LSE and D)
      mbar_init(bar_empty(st), bwd::kConsumerThreads);
    }
    for (int b = 0; b < kDqBuffers; ++b) {
      mbar_init(bar_dq_full(b), bwd::kConsumerThreads);
      mbar_init(bar_dq_empty(b), 1);
    }
    mbar_fence_init();
  }
  __syncthreads();

  if (threadIdx.x < kWarpgroupThreads) {
    // ---------------- producer warpgroup ----------------
    setmaxnreg_dec<bwd::kProducerRegs>();
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    if (warp == 0 && steps > 0) {
      if (lane == 0) {
        tma_prefetch_map(&tm_q);
        tma_prefetch_map(&tm_do);
        mbar_arrive_expect_tx(bar_kv, 2 * bwd::kv_bytes(kHeadDim));
#pragma unroll
        for (int panel = 0; panel < kHeadDim / kPanelCols; ++panel) {
          tma_load_3d(s_k + panel * kKvPanel, &tm_k, panel * kPanelCols, n0, bkv, bar_kv);
          tma_load_3d(s_v + panel * kKvPanel, &tm_v, panel * kPanelCols, n0, bkv, bar_kv);
        }
      }
      Walk w = first_step;
      for (int step = 0; step < steps; ++step, next_step(w)) {
        const int stage = step % kStages;
        // Stage reuse: both consumer warpgroups are done with step - kStages.
        if (step >= kStages) mbar_wait(bar_empty(stage), static_cast<uint32_t>((step / kStages - 1) & 1));
        const int m0 = w.m0, head = w.head;
        if (lane == 0) {
          mbar_arrive_expect_tx(bar_full(stage), 2 * kQBytes);
#pragma unroll
          for (int panel = 0; panel < kHeadDim / kPanelCols; ++panel) {
            tma_load_3d(s_q + stage * kQBytes + panel * kQPanel, &tm_q, panel * kPanelCols, m0, head, bar_full(stage));
            tma_load_3d(s_do + stage * kQBytes + panel * kQPanel, &tm_do, panel * kPanelCols, m0, head,
                        bar_full(stage));
          }
        }
        // LSE and D of the block's rows; rows past seq_q get 0 (their Q and dO rows arrive as zeros).
        const int64_t row0 = static_cast<int64_t>(head) * seq_q + m0;
#pragma unroll
        for (int r = lane; r < kBlockM; r += 32) {
          const bool valid = m0 + r < seq_q;
          lse_floats[stage * kBlockM + r] = valid ? p.lse_log2[row0 + r] : 0.f;
          dsum_floats[stage * kBlockM + r] = valid ? p.d_sum[row0 + r] : 0.f;
        }
        mbar_arrive(bar_full(stage));
      }
    } else if (warp == 1 && lane == 0 && steps > 0) {
      tma_prefetch_map(&tm_dq);
      Walk w = first_step;
      for (int step = 0; step < steps; ++step, next_step(w)) {
        const int b = step % kDqBuffers;
        mbar_wait(bar_dq_full(b), static_cast<uint32_t>((step / kDqBuffers) & 1));
#pragma unroll
        for (int panel = 0; panel < kHeadDim / bwd::kDqPanelCols; ++panel)
          tma_reduce_add_3d(&tm_dq, s_dq + b * kDqBytes + panel * kDqPanel, panel * bwd::kDqPanelCols,
                            w.m0, w.head);
        bulk_commit();
        bulk_wait_read();  // the tile is read: the consumers may write it again
        mbar_arrive(bar_dq_empty(b));
      }
      bulk_wait_all();
    }
    return;
  }

  // ---------------- consumer warpgroups ----------------
  setmaxnreg_inc<bwd::kConsumerRegs>();
  const int ctid = static_cast<int>(threadIdx.x) - kWarpgroupThreads;
  const int wg = ctid / kWarpgroupThreads;
  const int warp = ctid % kWarpgroupThreads / 32;
  const int lane = ctid % 32;
  const int quad_row = lane / 4, quad_col = lane % 4;
  // This thread's accumulator rows of S^T, dP^T, dK and dV: keys key_row and key_row + 8 of the CTA's.
  const int key_row = wg * 64 + warp * 16 + quad_row;

  float acc_dk[kHeadDim / 2], acc_dv[kHeadDim / 2];
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) acc_dk[i] = acc_dv[i] = 0.f;

  // This warpgroup's 64 rows of K and V inside their panels (K-major A operands of S^T and dP^T).
  const uint32_t k_rows = s_k + wg * 64 * 128, v_rows = s_v + wg * 64 * 128;
  // This warpgroup's part of dQ: its first row and column in the block's dQ tile.
  const int dq_row0 = kDqSplitRows ? wg * 64 : 0, dq_col0 = kDqSplitRows ? 0 : wg * kDqCols;
  // dQ's B operand: K's rows from dq_col0 (a panel, or half of one when the columns are split at hdim 64).
  const uint32_t k_dq_cols = s_k + (dq_col0 / kPanelCols) * kKvPanel + (dq_col0 % kPanelCols) * 2;
  // This thread's 4 bytes of dS^T's row key_row in 8-query group 0 of buffer 0 (chunk key_row % 8 =
  // quad_row); group nt's are this XOR (nt % 8) << 4 in panel nt / 8, row key_row + 8's 1024 bytes on,
  // buffer 1's ds_bytes on.
  const uint32_t ds_row = s_ds + key_row * 128 + (quad_row << 4) + quad_col * 4;
  // This thread's 8 bytes of dQ's row dq_row0 + warp * 16 + quad_row in tile 0, 8-column group 0 of
  // the warpgroup's first dQ panel: chunk quad_col / 2 of the row, at chunk (quad_col / 2) ^ quad_row.
  // Group nt's are this XOR (nt % 4) << 5 in panel nt / 4; row + 8's 1024 bytes on.
  const uint32_t dq_row = s_dq + (dq_col0 / bwd::kDqPanelCols) * kDqPanel + (dq_row0 + warp * 16 + quad_row) * 128 +
                          (((quad_col >> 1) ^ quad_row) << 4) + (quad_col & 1) * 8;

  // S^T and dP^T: the warpgroup's 64 rows of K (or V) times a block's kBlockM rows of Q (or dO), both
  // K-major, k16 slice ks 32 bytes into panel ks / 4 of each row.
  auto rows_by_rows = [&](float(&acc)[kBlockM / 2], uint64_t kv_desc, uint64_t q_desc) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const uint32_t kv_off = (ks / 4) * kKvPanel + (ks % 4) * 32, q_off = (ks / 4) * kQPanel + (ks % 4) * 32;
      if constexpr (kBlockM == 128)
        wgmma_m64n128k16_ss(acc, kv_desc + (kv_off >> 4), q_desc + (q_off >> 4), ks > 0 ? 1 : 0, Tag{});
      else
        wgmma_m64n64k16_ss(acc, kv_desc + (kv_off >> 4), q_desc + (q_off >> 4), ks > 0 ? 1 : 0, Tag{});
    }
    wgmma_commit();
  };
  // dV and dK: acc += A B, A from registers (P^T or dS^T, k16 slice ks in registers 4 ks .. + 3), B a
  // block's rows of dO or Q, rows 16 ks .. + 15 the k16 slice and its columns the N (MN-major).
  auto frags_by_rows = [&](float(&acc)[kHeadDim / 2], const uint32_t(&frags)[kBlockM / 4], uint64_t b_desc) {
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kQSteps; ++ks) {
      const uint32_t a[4] = {frags[4 * ks], frags[4 * ks + 1], frags[4 * ks + 2], frags[4 * ks + 3]};
      const uint64_t b = b_desc + ((ks * 16 * 128) >> 4);
      if constexpr (kHeadDim == 128) wgmma_m64n128k16_rs(acc, a, b, 1, Tag{});
      else wgmma_m64n64k16_rs(acc, a, b, 1, Tag{});
    }
    wgmma_commit();
  };

  // Descriptors of the CTA's fixed tiles; a k16 slice's is the tile's plus its offset in 16-byte units
  // (the start address field holds any shared-memory address, so the addition never carries out).
  const uint64_t k_desc = smem_desc_sw128(k_rows, 16, 1024), v_desc = smem_desc_sw128(v_rows, 16, 1024);
  const uint64_t kdq_desc = smem_desc_sw128(k_dq_cols, kKvPanel, 1024);
  if (steps > 0) mbar_wait(bar_kv, 0);
  Walk walk = first_step;
  for (int step = 0; step < steps; ++step, next_step(walk)) {
    const int stage = step % kStages;
    mbar_wait(bar_full(stage), static_cast<uint32_t>((step / kStages) & 1));
    const int m0 = walk.m0;
    const uint32_t q_buf = s_q + stage * kQBytes, do_buf = s_do + stage * kQBytes;
    const uint32_t ds_buf = (step & 1) * bwd::ds_bytes(kHeadDim);

    // S^T = K Q^T and dP^T = V dO^T, two commit groups.
    float s[kBlockM / 2], dp[kBlockM / 2];
    wgmma_fence();
    rows_by_rows(s, k_desc, smem_desc_sw128(q_buf, 16, 1024));
    rows_by_rows(dp, v_desc, smem_desc_sw128(do_buf, 16, 1024));
    // This thread's columns' LSE and D: 2 quad_col + e of every 8-query group.
    const float2* lse_cols = reinterpret_cast<const float2*>(lse_floats + stage * kBlockM) + quad_col;
    const float2* dsum_cols = reinterpret_cast<const float2*>(dsum_floats + stage * kBlockM) + quad_col;
    wgmma_wait<1>();
    fence_regs(s);

    // Accumulator register 4 nt + 2 half + e: key key_row + 8 half, query m0 + 8 nt + 2 quad_col + e.
    if (fused::bwd_block_needs_mask(kMaskBlock, m0, n0, seq_q, seq_k, p.causal, p.window)) {
#pragma unroll
      for (int nt = 0; nt < kBlockM / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int i = m0 + nt * 8 + quad_col * 2 + e;
          const fused::RowKeys keys = fused::row_keys(i, seq_q, seq_k, p.causal, p.window);
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int key = n0 + key_row + half * 8;
            if (key >= keys.end || key < keys.begin) s[nt * 4 + half * 2 + e] = -INFINITY;
          }
        }
    }
    // LSE (and below, D) are read into registers before the loops that use them (D's loop stores dS^T,
    // and each store's memory clobber would hold the next read behind it).
    float2 lse[kBlockM / 8], dsum[kBlockM / 8];
#pragma unroll
    for (int nt = 0; nt < kBlockM / 8; ++nt) lse[nt] = lse_cols[nt * 4];
#pragma unroll
    for (int nt = 0; nt < kBlockM / 8; ++nt) {
      s[nt * 4 + 0] = fast_exp2(fmaf(s[nt * 4 + 0], p.scale_log2, -lse[nt].x));
      s[nt * 4 + 1] = fast_exp2(fmaf(s[nt * 4 + 1], p.scale_log2, -lse[nt].y));
      s[nt * 4 + 2] = fast_exp2(fmaf(s[nt * 4 + 2], p.scale_log2, -lse[nt].x));
      s[nt * 4 + 3] = fast_exp2(fmaf(s[nt * 4 + 3], p.scale_log2, -lse[nt].y));
    }
    // P^T as A fragments (two adjacent 8-query groups of the accumulator are one k16 fragment) and
    // dS^T = P^T * (dP^T - D_i), rounded, into registers (dK's A) and shared memory (dQ's A).
    uint32_t pf[kBlockM / 4], ds[kBlockM / 4];
    // dS^T of fragment i (D of its queries: d), and its store.
    auto make_ds = [&](int i, float2 d) {
      const int nt = i / 2, half = i % 2;
      ds[i] = pack2<T>(s[2 * i] * (dp[2 * i] - d.x), s[2 * i + 1] * (dp[2 * i + 1] - d.y));
      st_shared_u32(((ds_row + half * 8 * 128) ^ static_cast<uint32_t>((nt % 8) << 4)) + (nt / 8) * kDsPanel + ds_buf,
                    ds[i]);
    };
    if constexpr (kBlockM == 64) {
      // dV is issued before dP^T is waited for. P^T's fragments are free before dS^T's are made
      // (waiting for dP^T alone left them live beside dS^T, and ptxas spilled 40 bytes at hdim 128).
#pragma unroll
      for (int i = 0; i < kBlockM / 4; ++i) pf[i] = pack2<T>(s[2 * i], s[2 * i + 1]);
      frags_by_rows(acc_dv, pf, smem_desc_sw128(do_buf, kQPanel, 1024));
      wgmma_wait<0>();
      fence_regs(pf);
      fence_regs(dp);
#pragma unroll
      for (int nt = 0; nt < kBlockM / 8; ++nt) dsum[nt] = dsum_cols[nt * 4];
#pragma unroll
      for (int i = 0; i < kBlockM / 4; ++i) make_ds(i, dsum[i / 2]);
    } else {
      // block_m 128: S^T and dP^T are 128 registers, so P^T's and dS^T's fragments are made together
      // once dP^T is in, each pair freeing its S^T and dP^T registers (P^T beside all of S^T and dP^T
      // while dV ran spilled 48 bytes); dV is issued after, beside dK. D is read a 64-query panel of
      // dS^T at a time.
      wgmma_wait<0>();
      fence_regs(dp);
#pragma unroll
      for (int panel = 0; panel < kBlockM / 64; ++panel) {
#pragma unroll
        for (int nt = 8 * panel; nt < 8 * panel + 8; ++nt) dsum[nt] = dsum_cols[nt * 4];
#pragma unroll
        for (int i = 16 * panel; i < 16 * panel + 16; ++i) {
          pf[i] = pack2<T>(s[2 * i], s[2 * i + 1]);
          make_ds(i, dsum[i / 2]);
        }
      }
      frags_by_rows(acc_dv, pf, smem_desc_sw128(do_buf, kQPanel, 1024));
    }
    // dK += dS^T Q.
    frags_by_rows(acc_dk, ds, smem_desc_sw128(q_buf, kQPanel, 1024));
    fence_proxy_async_smem();
    named_bar_sync(1, bwd::kConsumerThreads);

    // This warpgroup's 64 x kDqCols of dQ_block = dS K over the CTA's 128 keys (dS: panel dq_row0 / 64 of dS^T).
    float dq[kDqCols / 2];
#pragma unroll
    for (int i = 0; i < kDqCols / 2; ++i) dq[i] = 0.f;
    const uint64_t ds_desc = smem_desc_sw128(s_ds + ds_buf + (dq_row0 / 64) * kDsPanel, kDsPanel, 1024);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kBlockN / 16; ++ks) {
      const uint64_t a = ds_desc + ((ks * 16 * 128) >> 4);
      const uint64_t b = kdq_desc + ((ks * 16 * 128) >> 4);
      if constexpr (kDqCols == 64) wgmma_m64n64k16_ss_mn(dq, a, b, 1, Tag{});
      else wgmma_m64n32k16_ss_mn(dq, a, b, 1, Tag{});
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dq);
    fence_regs(pf);
    fence_regs(ds);
    fence_regs(acc_dv);
    fence_regs(acc_dk);

    // Q, dO, LSE and D of this stage are read (dK and dQ waited for): the producer may refill it.
    mbar_arrive(bar_empty(stage));

    // The step's dQ tile, once warp 1's reduction has read it kDqBuffers steps ago.
    const int b = step % kDqBuffers;
    if (step >= kDqBuffers) mbar_wait(bar_dq_empty(b), static_cast<uint32_t>((step / kDqBuffers - 1) & 1));
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int nt = 0; nt < kDqCols / 8; ++nt)
        st_shared_f32x2(((dq_row + half * 8 * 128) ^ static_cast<uint32_t>((nt % 4) << 5)) + b * kDqBytes +
                            (nt / 4) * kDqPanel,
                        dq[nt * 4 + half * 2], dq[nt * 4 + half * 2 + 1]);
    fence_proxy_async_smem();
    mbar_arrive(bar_dq_full(b));
  }

  // dK = softmax_scale * dS^T Q and dV of this thread's keys; rows past seq_k are not stored.
  const int64_t key0 = static_cast<int64_t>(bkv) * seq_k + n0;
  T* const dk = static_cast<T*>(p.dk) + key0 * kHeadDim;
  T* const dv = static_cast<T*>(p.dv) + key0 * kHeadDim;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int key = key_row + half * 8;
    if (n0 + key >= seq_k) continue;
#pragma unroll
    for (int nt = 0; nt < kHeadDim / 8; ++nt) {
      const int64_t at = static_cast<int64_t>(key) * kHeadDim + nt * 8 + quad_col * 2;
      *reinterpret_cast<uint32_t*>(dk + at) =
          pack2<T>(acc_dk[nt * 4 + half * 2] * p.scale, acc_dk[nt * 4 + half * 2 + 1] * p.scale);
      *reinterpret_cast<uint32_t*>(dv + at) = pack2<T>(acc_dv[nt * 4 + half * 2], acc_dv[nt * 4 + half * 2 + 1]);
    }
  }
#endif
}

}  // namespace attnprof::kernels::fused_sm90
