// The fused-sm90 backward's main stage on Hopper's warpgroup MMA. The call is three launches, the
// first and last the fused kernel's own (fused_bwd_kernel.cuh): bwd_preprocess (D = rowsum(dO * O),
// LSE in log2 units, dq_accum zeroed), this kernel, bwd_dq_convert (dQ = scale * dq_accum).
//
// One CTA per block of bwd::kBlockN = 128 keys of one (batch, kv head); warpgroup w owns keys
// 64 w .. 64 w + 63 and keeps their dK and dV in registers (wgmma accumulators, hdim / 2 each). The
// CTA walks every block of 64 query rows that sees one of its keys, in every query head of the GQA
// group (rows_seeing_keys, fused_tiles.hpp); all 256 threads copy the next block's Q, dO, LSE and D
// by cp.async into a second buffer while the current one is computed. Per block, each warpgroup:
//   S^T  = K Q^T       wgmma m64n64k16, A = its 64 rows of K, B = Q, both K-major from shared memory
//   dP^T = V dO^T      the same with V and dO
//   P^T  = exp2(S^T * scale_log2 - LSE_i * log2 e), masked scores 0 (the fused backward's limits)
//   dV  += P^T dO      A = P^T from the S^T accumulators in registers, B = dO read MN-major
//   dS^T = P^T * (dP^T - D_i), rounded to the dtype, also stored to shared memory
//   dK  += dS^T Q      A = dS^T from registers, B = Q read MN-major
// After a barrier (every key's dS^T is in shared memory), dQ_block = dS K over the CTA's 128 keys:
// A = dS read MN-major from dS^T's rows, B = K read MN-major; warpgroup w takes dQ's columns
// w * hdim / 2 .. + hdim / 2 and adds them to dq_accum with fp32 reductions (red.global.add.v2.f32 from
// the accumulators: staging the rows in shared memory for one bulk reduction per row ran 3-26% slower
// on an H100 over fa-bench's backward shapes). dK (times softmax_scale) and dV are written once, at
// the end; a key no row sees gets zero.
// Every tile is 64-column panels of 128-byte rows, 16-byte chunk c of row r at chunk c ^ (r % 8): the
// layout of wgmma's 128-byte-swizzle descriptors, written by the cp.async copies and the dS^T stores.
// Shared memory written by ordinary stores or cp.async is fenced to the async proxy (wgmma reads it
// there) before the barrier that publishes it.
// Head dims: bwd::kHeadDims (fused_sm90_tiles.hpp), each instantiated in fused_sm90_bwd.cu. dK and dV
// take hdim registers per thread together: at hdim 128 the kernel uses all 255 (4 bytes spilled), so a
// wider head needs dK's and dV's columns split between warpgroups, or dK and dV parked in shared memory.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/tiles/fused_sm90_tiles.hpp"
#include "core/tiles/fused_tiles.hpp"
#include "kernels/fused/fused_launch.hpp"
#include "kernels/fused/ptx.cuh"
#include "kernels/fused_sm90/sm90_ptx.cuh"

namespace attnprof::kernels::fused_sm90 {

// rows_valid rows of a tile (kRows x kHeadDim, row-major in global memory) into its swizzled panels
// at dst by cp.async, 16 bytes per copy; rows past rows_valid become zeros.
template <typename T, int kHeadDim, int kRows>
__device__ __forceinline__ void bwd_load_rows(uint32_t dst, const T* src, int rows_valid) {
  constexpr int kChunksPerRow = kHeadDim / 8;
  constexpr int kRowsPerPass = bwd::kThreads / kChunksPerRow;  // a multiple of 8: row % 8 stays the thread's
  static_assert(kRows % kRowsPerPass == 0 && kRowsPerPass % 8 == 0, "every thread copies whole passes");
  const int row0 = static_cast<int>(threadIdx.x) / kChunksPerRow, chunk = static_cast<int>(threadIdx.x) % kChunksPerRow;
  const uint32_t at0 = dst + (chunk / 8) * (kRows * 128) + row0 * 128 + (((chunk % 8) ^ (row0 % 8)) << 4);
  const T* const src0 = src + row0 * kHeadDim + chunk * 8;
#pragma unroll
  for (int pass = 0; pass < kRows / kRowsPerPass; ++pass) {
    const bool valid = row0 + pass * kRowsPerPass < rows_valid;
    fused::cp_async_16(at0 + pass * kRowsPerPass * 128, valid ? src0 + pass * kRowsPerPass * kHeadDim : src,
                       valid ? 16 : 0);
  }
}

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(bwd::kThreads, 1) fused_sm90_bwd_main_kernel(const fused::FusedBwdParams p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // only the sm_90a image has a body; the host refuses other devices
#elif defined(__CUDA_ARCH__)
  constexpr int kBlockM = bwd::kBlockM, kBlockN = bwd::kBlockN;
  constexpr uint32_t kKvPanel = bwd::kv_panel_bytes(), kQPanel = bwd::q_panel_bytes();
  constexpr uint32_t kQBytes = bwd::q_bytes(kHeadDim);
  constexpr int kKSteps = kHeadDim / 16;          // S^T and dP^T: k16 steps over hdim
  constexpr int kQSteps = kBlockM / 16;           // dV and dK: k16 steps over the block's query rows
  constexpr int kDqCols = kHeadDim / bwd::kWarpgroups;  // dQ columns per warpgroup
  // The fused backward's mask test, for this kernel's block sizes.
  constexpr fused::BwdTileConfig kMaskBlock{kBlockM, kBlockN, 8, 1, 1, true, false};
  using Tag = dtype_tag<T>;

  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* const base_ptr = smem_raw + (base - raw);
  const uint32_t s_k = base + bwd::k_offset(), s_v = base + bwd::v_offset(kHeadDim);
  const uint32_t s_q = base + bwd::q_offset(kHeadDim), s_do = base + bwd::do_offset(kHeadDim);
  const uint32_t s_ds = base + bwd::ds_offset(kHeadDim);
  const uint32_t s_lse = base + bwd::lse_offset(kHeadDim), s_dsum = base + bwd::dsum_offset(kHeadDim);
  const float* const lse_floats = reinterpret_cast<const float*>(base_ptr + bwd::lse_offset(kHeadDim));
  const float* const dsum_floats = reinterpret_cast<const float*>(base_ptr + bwd::dsum_offset(kHeadDim));

  const int tid = static_cast<int>(threadIdx.x);
  const int wg = tid / kWarpgroupThreads;
  const int warp = tid % kWarpgroupThreads / 32;
  const int lane = tid % 32;
  const int quad_row = lane / 4, quad_col = lane % 4;
  // This thread's accumulator rows of S^T, dP^T, dK and dV: keys key_row and key_row + 8 of the CTA's.
  const int key_row = wg * 64 + warp * 16 + quad_row;

  // Key blocks of one (batch, kv head) are adjacent in the grid (they read the same Q and dO).
  const int n_index = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.num_n_blocks));
  const int64_t bkv = blockIdx.x / static_cast<unsigned>(p.num_n_blocks);
  const int64_t batch = bkv / p.kv_heads;
  const int kv_head = static_cast<int>(bkv % p.kv_heads);
  const int seq_q = p.seq_q, seq_k = p.seq_k;
  const int64_t q_row0 = (batch * p.heads + static_cast<int64_t>(kv_head) * p.group) * seq_q;
  const int64_t kv_row0 = bkv * seq_k;
  const int n0 = n_index * kBlockN;

  const fused::RowSpan rows = fused::rows_seeing_keys(n0, min(kBlockN, seq_k - n0), seq_q, seq_k, p.causal, p.window);
  const int first_m_block = rows.end > rows.begin ? static_cast<int>(rows.begin) / kBlockM : 0;
  const int m_blocks =
      rows.end > rows.begin ? static_cast<int>((rows.end + kBlockM - 1) / kBlockM) - first_m_block : 0;
  const int steps = m_blocks * p.group;

  const T* const q = static_cast<const T*>(p.q);
  const T* const d_o = static_cast<const T*>(p.d_o);
  // Step `step`: query block first_m_block + step % m_blocks of head step / m_blocks of the group.
  auto step_row0 = [&](int step, int& m0) {
    m0 = (first_m_block + step % m_blocks) * kBlockM;
    return q_row0 + static_cast<int64_t>(step / m_blocks) * seq_q + m0;
  };
  auto load_step = [&](int step, int buf) {
    int m0;
    const int64_t row0 = step_row0(step, m0);
    bwd_load_rows<T, kHeadDim, kBlockM>(s_q + buf * kQBytes, q + row0 * kHeadDim, seq_q - m0);
    bwd_load_rows<T, kHeadDim, kBlockM>(s_do + buf * kQBytes, d_o + row0 * kHeadDim, seq_q - m0);
    if (tid < 2 * kBlockM) {
      const int r = tid % kBlockM;
      const bool is_lse = tid < kBlockM;
      const float* src = (is_lse ? p.lse_log2 : p.d_sum) + row0 + r;
      const bool valid = m0 + r < seq_q;
      fused::cp_async_4((is_lse ? s_lse : s_dsum) + (buf * kBlockM + r) * 4, valid ? src : p.d_sum, valid ? 4 : 0);
    }
  };

  // Prologue: K, V and step 0 as one copy group, step 1 as the next (possibly empty) one.
  if (steps > 0) {
    bwd_load_rows<T, kHeadDim, kBlockN>(s_k, static_cast<const T*>(p.k) + (kv_row0 + n0) * kHeadDim, seq_k - n0);
    bwd_load_rows<T, kHeadDim, kBlockN>(s_v, static_cast<const T*>(p.v) + (kv_row0 + n0) * kHeadDim, seq_k - n0);
    load_step(0, 0);
  }
  fused::cp_async_commit();
  if (steps > 1) load_step(1, 1);
  fused::cp_async_commit();

  float acc_dk[kHeadDim / 2], acc_dv[kHeadDim / 2];
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) acc_dk[i] = acc_dv[i] = 0.f;

  // This warpgroup's 64 rows of K and V inside their panels (K-major A operands of S^T and dP^T).
  const uint32_t k_rows = s_k + wg * 64 * 128, v_rows = s_v + wg * 64 * 128;
  // dQ's B operand: K's rows from this warpgroup's first dQ column (a panel, or half of one at hdim 64).
  const uint32_t k_dq_cols = s_k + (wg * kDqCols / kPanelCols) * kKvPanel + (wg * kDqCols % kPanelCols) * 2;
  // This thread's 4 bytes of dS^T's row key_row in 8-query group 0 (chunk key_row % 8 = quad_row);
  // group nt's are this XOR nt << 4, and row key_row + 8's 1024 bytes on.
  const uint32_t ds_row = s_ds + key_row * 128 + (quad_row << 4) + quad_col * 4;

  // S^T and dP^T: the warpgroup's 64 rows of K (or V) times a block's 64 rows of Q (or dO), both
  // K-major, k16 slice ks 32 bytes into panel ks / 4 of each row.
  auto rows_by_rows = [&](float(&acc)[kBlockM / 2], uint32_t kv_rows, uint32_t q_rows) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const uint32_t kv_off = (ks / 4) * kKvPanel + (ks % 4) * 32, q_off = (ks / 4) * kQPanel + (ks % 4) * 32;
      wgmma_m64n64k16_ss(acc, smem_desc_sw128(kv_rows + kv_off, 16, 1024),
                         smem_desc_sw128(q_rows + q_off, 16, 1024), ks > 0 ? 1 : 0, Tag{});
    }
    wgmma_commit();
  };
  // dV and dK: acc += A B, A from registers (P^T or dS^T, k16 slice ks in registers 4 ks .. + 3), B a
  // block's rows of dO or Q, rows 16 ks .. + 15 the k16 slice and its columns the N (MN-major).
  auto frags_by_rows = [&](float(&acc)[kHeadDim / 2], const uint32_t(&frags)[kBlockM / 4], uint32_t b_rows) {
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kQSteps; ++ks) {
      const uint32_t a[4] = {frags[4 * ks], frags[4 * ks + 1], frags[4 * ks + 2], frags[4 * ks + 3]};
      const uint64_t b = smem_desc_sw128(b_rows + ks * 16 * 128, kQPanel, 1024);
      if constexpr (kHeadDim == 128) wgmma_m64n128k16_rs(acc, a, b, 1, Tag{});
      else wgmma_m64n64k16_rs(acc, a, b, 1, Tag{});
    }
    wgmma_commit();
  };

  for (int step = 0; step < steps; ++step) {
    const int buf = step & 1;
    // Step `step` is the oldest copy group in flight; after the barrier every warpgroup is done with
    // step - 1 (its Q/dO buffer and dS^T), so that buffer takes step + 1.
    if (step == 0) fused::cp_async_wait<1>(); else fused::cp_async_wait<0>();
    fence_proxy_async_smem();
    __syncthreads();
    if (step >= 1 && step + 1 < steps) {
      load_step(step + 1, buf ^ 1);
      fused::cp_async_commit();
    }
    int m0;
    const int64_t row0 = step_row0(step, m0);
    const uint32_t q_buf = s_q + buf * kQBytes, do_buf = s_do + buf * kQBytes;

    // S^T = K Q^T and dP^T = V dO^T, two commit groups.
    float s[kBlockM / 2], dp[kBlockM / 2];
    wgmma_fence();
    rows_by_rows(s, k_rows, q_buf);
    rows_by_rows(dp, v_rows, do_buf);
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
    const float2* lse_cols = reinterpret_cast<const float2*>(lse_floats + buf * kBlockM) + quad_col;
    const float2* dsum_cols = reinterpret_cast<const float2*>(dsum_floats + buf * kBlockM) + quad_col;
#pragma unroll
    for (int nt = 0; nt < kBlockM / 8; ++nt) {
      const float2 lse = lse_cols[nt * 4];
      s[nt * 4 + 0] = fast_exp2(fmaf(s[nt * 4 + 0], p.scale_log2, -lse.x));
      s[nt * 4 + 1] = fast_exp2(fmaf(s[nt * 4 + 1], p.scale_log2, -lse.y));
      s[nt * 4 + 2] = fast_exp2(fmaf(s[nt * 4 + 2], p.scale_log2, -lse.x));
      s[nt * 4 + 3] = fast_exp2(fmaf(s[nt * 4 + 3], p.scale_log2, -lse.y));
    }
    // P^T as A fragments: two adjacent 8-query groups of the accumulator are one k16 fragment.
    uint32_t pf[kBlockM / 4];
#pragma unroll
    for (int i = 0; i < kBlockM / 4; ++i) pf[i] = pack2<T>(s[2 * i], s[2 * i + 1]);

    // dV += P^T dO.
    frags_by_rows(acc_dv, pf, do_buf);
    // dP^T and dV both done: P^T's fragments are free before dS^T's are made (waiting for dP^T alone
    // left them live beside dS^T, and ptxas spilled 40 bytes at hdim 128).
    wgmma_wait<0>();
    fence_regs(pf);
    fence_regs(dp);

    // dS^T = P^T * (dP^T - D_i), rounded, into registers (dK's A) and shared memory (dQ's A).
    uint32_t ds[kBlockM / 4];
#pragma unroll
    for (int i = 0; i < kBlockM / 4; ++i) {
      const int nt = i / 2, half = i % 2;
      const float2 d = dsum_cols[nt * 4];
      ds[i] = pack2<T>(s[2 * i] * (dp[2 * i] - d.x), s[2 * i + 1] * (dp[2 * i + 1] - d.y));
      st_shared_u32((ds_row + half * 8 * 128) ^ static_cast<uint32_t>(nt << 4), ds[i]);
    }
    // dK += dS^T Q.
    frags_by_rows(acc_dk, ds, q_buf);
    fence_proxy_async_smem();
    __syncthreads();

    // dQ_block (64 x kDqCols of this warpgroup) = dS K over the CTA's 128 keys.
    float dq[kDqCols / 2];
#pragma unroll
    for (int i = 0; i < kDqCols / 2; ++i) dq[i] = 0.f;
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kBlockN / 16; ++ks) {
      const uint64_t a = smem_desc_sw128(s_ds + ks * 16 * 128, kBlockN * 128, 1024);
      const uint64_t b = smem_desc_sw128(k_dq_cols + ks * 16 * 128, kKvPanel, 1024);
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

    // dq_accum: this thread's rows are query warp * 16 + quad_row (+ 8) of the warpgroup's 64.
    float* const dq_accum = p.dq_accum + row0 * kHeadDim + wg * kDqCols;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = warp * 16 + quad_row + half * 8;
      if (m0 + r >= seq_q) continue;
#pragma unroll
      for (int nt = 0; nt < kDqCols / 8; ++nt)
        fused::red_add_f32x2(dq_accum + static_cast<int64_t>(r) * kHeadDim + nt * 8 + quad_col * 2,
                             dq[nt * 4 + half * 2], dq[nt * 4 + half * 2 + 1]);
    }
  }
  fused::cp_async_wait<0>();

  // dK = softmax_scale * dS^T Q and dV of this thread's keys; rows past seq_k are not stored.
  T* const dk = static_cast<T*>(p.dk) + (kv_row0 + n0) * kHeadDim;
  T* const dv = static_cast<T*>(p.dv) + (kv_row0 + n0) * kHeadDim;
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
