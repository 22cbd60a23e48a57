// The fused attention backward (FlashAttention-2's algorithm: Dao 2023, Algorithm 2, with dQ summed by
// fp32 atomics), three launches per call:
//   bwd_preprocess  8 lanes per row of Q: D = rowsum(dO * O) and LSE * log2(e) in fp32 (workspace,
//                   BwdWorkspace in fused_launch.hpp), and the row's dq_accum zeroed.
//   bwd_main        one CTA per (batch, kv head, block of block_n keys). K and V of its keys stay in
//                   shared memory while it walks every query head of the GQA group and every block of
//                   block_m query rows that sees one of its keys (rows_seeing_keys in fused_tiles.hpp);
//                   Q, dO, LSE and D of the next block are copied by cp.async into a second buffer while
//                   the current one is computed (one barrier per block, as the forward's K/V).
//   bwd_dq_convert  dQ = softmax_scale * dq_accum, rounded to the dtype.
//
// bwd_main, per block of query rows, each warp for its 16 keys (warp w: keys 16 w .. 16 w + 15 of the
// CTA's block), all in mma.sync m16n8k16 with fp32 accumulators:
//   S^T  = K Q^T                         A: the warp's K rows (ldmatrix); B: Q rows (ldmatrix)
//   P^T  = exp2(S^T * scale_log2 - LSE_i * log2 e), masked scores 0
//   dV  += P^T dO                        A: P^T from the S^T accumulators (as P in the forward's P V);
//                                        B: dO (ldmatrix.trans)
//   dP^T = V dO^T                        A: the warp's V rows; B: dO rows
//   dS^T = P^T * (dP^T - D_i)
//   dK  += dS^T Q                        A: dS^T from the accumulators; B: Q (ldmatrix.trans)
// The scores are computed transposed (keys as the MMA's rows) so that P^T and dS^T, the A operands of
// dV and dK, come straight from the accumulators: neither P nor dS goes through shared memory for them.
// dQ needs dS with query rows: each warp stores its dS^T rows in shared memory, and after a barrier the
// warps split dQ_block += dS K (block_m x hdim; dS by ldmatrix.trans of dS^T, K by ldmatrix.trans) and
// add their part to dq_accum with fp32 reductions (red.global.add.v2.f32 on sm_90). dK (times
// softmax_scale: dS is the gradient of the scaled scores) and dV are written once, at the end; a key no
// row sees gets zero.
// Masks as in the forward (core/shape.hpp, bottom-right causal, windows, packed batches); only a block
// that straddles a limit or a tail (bwd_block_needs_mask) is masked element by element. Query rows past
// seq_q are zero-filled Q and dO rows with LSE and D 0, and masked.
// Shared memory: rows of Q, K, V and dO hdim wide, dS^T rows block_m wide, all of whole 128-byte lines
// with 16-byte chunk c of row r at chunk c ^ (r % 8) (the forward's SmemRows): every ldmatrix and
// every 4-byte store of dS^T is conflict-free.
// To extend: a head dim is one more fused_bwd_d<hdim>.cu and an entry of kBwdHeadDims; the tile is
// bwd_tile_config() (fused_tiles.hpp).
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/tiles/fused_tiles.hpp"
#include "kernels/common/launch_params.hpp"
#include "kernels/fused/fused_kernel.cuh"
#include "kernels/fused/fused_launch.hpp"
#include "kernels/fused/ptx.cuh"

namespace attnprof::kernels::fused {

template <int kHeadDim>
struct BwdTraits : SmemRows<kHeadDim * 2, true> {
  static constexpr BwdTileConfig kConfig = bwd_tile_config(kHeadDim);
  static constexpr int kBlockM = kConfig.block_m;
  static constexpr int kBlockN = kConfig.block_n;
  static constexpr int kWarps = kConfig.warps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks of one row of Q, K, V or dO
  static constexpr int kKSteps = kHeadDim / 16;       // k-steps over hdim: S^T, dP^T
  // A block's query rows are taken kPartRows at a time for S^T, dP^T, dV and dK.
  static constexpr int kQueryParts = kConfig.query_parts;
  static constexpr int kPartRows = kBlockM / kQueryParts;
  static constexpr int kQSteps = kPartRows / 16;      // k-steps over a part's query rows: dV, dK
  static constexpr int kNTilesS = kPartRows / 8;      // n8 tiles of a warp's S^T rows (queries)
  static constexpr int kNTilesD = kHeadDim / 8;       // n8 tiles of a dK or dV row
  static constexpr bool kKvInRegisters = kConfig.kv_in_registers;
  // dQ_block += dS K: warps kDqWarpsM x kDqWarpsN over (block_m, hdim).
  static constexpr int kDqWarpsM = kConfig.dq_warps_m;
  static constexpr int kDqWarpsN = kWarps / kDqWarpsM;
  static constexpr int kDqMTiles = kBlockM / kDqWarpsM / kMmaRows;
  static constexpr int kDqCols = kHeadDim / kDqWarpsN;
  static constexpr int kDqNTiles = kDqCols / 8;
  using DsRows = SmemRows<kBlockM * 2, true>;         // dS^T: block_n rows of block_m
  static_assert(kBlockN == kMmaRows * kWarps, "16 keys per warp");
  static_assert(kHeadDim % 64 == 0 && kBlockM % 64 == 0, "rows of whole 128-byte lines");
  static_assert(kWarps % kDqWarpsM == 0 && kBlockM % (kMmaRows * kDqWarpsM) == 0, "dQ rows split evenly");
  static_assert(kDqCols % 16 == 0, "a warp's dQ columns are whole k16 B fragments");
  static_assert(kThreads >= 2 * kBlockM, "one thread per row copies LSE, one D");
  static_assert(kBlockM % kQueryParts == 0 && kPartRows % 16 == 0, "parts of whole k16 steps");
};

// Converts 8 elements of the dtype (16 bytes) to floats.
template <typename T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&out)[8]) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f;
    if constexpr (std::is_same_v<T, __half>)
      f = __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
    else
      f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&words[i]));
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

inline constexpr int kBwdPreprocessThreads = 128;
inline constexpr int kBwdLanesPerRow = 8;
inline constexpr int kBwdConvertThreads = 256;
inline constexpr int kBwdConvertElems = 8;  // per thread: two float4 in, 16 bytes out

// Stage 1: per row of Q (8 lanes each), D = rowsum(dO * O) and LSE in log2 units, and dq_accum's row
// zeroed. A row that sees no key (LSE -inf) gets 0: its scores are all masked, exp2(-inf - 0) = 0.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kBwdPreprocessThreads) fused_bwd_preprocess_kernel(const FusedBwdParams p) {
  constexpr int kRowsPerCta = kBwdPreprocessThreads / kBwdLanesPerRow;
  constexpr int kChunks = kHeadDim / 8 / kBwdLanesPerRow;  // 16-byte chunks per lane
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerCta + threadIdx.x / kBwdLanesPerRow;
  const int sub = static_cast<int>(threadIdx.x % kBwdLanesPerRow);
  if (row >= p.q_rows) return;  // whole 8-lane groups: rows are consecutive
  const T* o = static_cast<const T*>(p.o) + row * kHeadDim;
  const T* d_o = static_cast<const T*>(p.d_o) + row * kHeadDim;
  float dot = 0.f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int chunk = sub + c * kBwdLanesPerRow;
    float of[8], df[8];
    unpack8<T>(*reinterpret_cast<const uint4*>(o + chunk * 8), of);
    unpack8<T>(*reinterpret_cast<const uint4*>(d_o + chunk * 8), df);
#pragma unroll
    for (int e = 0; e < 8; ++e) dot = fmaf(of[e], df[e], dot);
  }
  const unsigned group_mask = 0xffu << (threadIdx.x % 32 / kBwdLanesPerRow * kBwdLanesPerRow);
#pragma unroll
  for (int offset = kBwdLanesPerRow / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(group_mask, dot, offset);
  if (sub == 0) {
    p.d_sum[row] = dot;
    const float lse = p.lse[row];
    p.lse_log2[row] = lse == -INFINITY ? 0.f : lse * kLog2e;
  }
  float4* acc = reinterpret_cast<float4*>(p.dq_accum + row * kHeadDim);
#pragma unroll
  for (int j = 0; j < kHeadDim / 4 / kBwdLanesPerRow; ++j) acc[sub + j * kBwdLanesPerRow] = make_float4(0.f, 0.f, 0.f, 0.f);
}

// Stage 3: dQ = softmax_scale * dq_accum, 8 elements per thread.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kBwdConvertThreads) fused_bwd_dq_convert_kernel(const FusedBwdParams p) {
  const int64_t i = (static_cast<int64_t>(blockIdx.x) * kBwdConvertThreads + threadIdx.x) * kBwdConvertElems;
  if (i >= p.q_rows * kHeadDim) return;
  const float4 a = *reinterpret_cast<const float4*>(p.dq_accum + i);
  const float4 b = *reinterpret_cast<const float4*>(p.dq_accum + i + 4);
  const float s = p.scale;
  st_global_128(static_cast<T*>(p.dq) + i, make_uint4(pack2<T>(a.x * s, a.y * s), pack2<T>(a.z * s, a.w * s),
                                                      pack2<T>(b.x * s, b.y * s), pack2<T>(b.z * s, b.w * s)));
}

// Stage 2 (see the header).
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(BwdTraits<kHeadDim>::kThreads, 1) fused_bwd_main_kernel(const FusedBwdParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // cp.async and bf16 mma.sync need sm_80; the host side refuses older devices
#else
  using Tr = BwdTraits<kHeadDim>;
  using Ds = typename Tr::DsRows;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kPartRows = Tr::kPartRows;
  constexpr uint32_t kRowBytes = Tr::kSmemRowBytes, kDsRowBytes = Ds::kSmemRowBytes;
  constexpr uint32_t kQTileBytes = kBlockM * kRowBytes;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  // Byte offsets from smem_raw as shared-memory addresses (ldmatrix, cp.async); LSE, D and dS^T are
  // also read and written as C++ objects, which the compiler may schedule freely between barriers.
  const uint32_t s_k = smem_address(smem_raw);             // (kBlockN, D)
  const uint32_t s_v = s_k + kBlockN * kRowBytes;          // (kBlockN, D)
  const uint32_t s_q = s_v + kBlockN * kRowBytes;          // (2, kBlockM, D)
  const uint32_t s_do = s_q + 2 * kQTileBytes;             // (2, kBlockM, D)
  const uint32_t s_ds = s_do + 2 * kQTileBytes;            // (kBlockN, kBlockM): dS^T
  const uint32_t s_lse = s_ds + kBlockN * kDsRowBytes;     // (2, kBlockM) floats: LSE * log2(e)
  const uint32_t s_dsum = s_lse + 2 * kBlockM * 4;         // (2, kBlockM) floats: D
  unsigned char* const ds_bytes = smem_raw + (s_ds - s_k);
  const float* const lse_floats = reinterpret_cast<const float*>(smem_raw + (s_lse - s_k));
  const float* const dsum_floats = reinterpret_cast<const float*>(smem_raw + (s_dsum - s_k));

  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int quad_row = lane / 4;
  const int quad_col = lane % 4;

  // Key blocks of one (batch, kv head) are adjacent in the grid (they read the same Q and dO from L2);
  // with the causal mask block 0, which every row sees, is the heaviest and starts first.
  const int n_index = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.num_n_blocks));
  const int64_t bkv = blockIdx.x / static_cast<unsigned>(p.num_n_blocks);
  const int64_t batch = bkv / p.kv_heads;
  const int kv_head = static_cast<int>(bkv % p.kv_heads);

  // Rows: query row 0 of the group's first head, the distance between two heads' rows, key row 0. A
  // packed sequence's heads are tokens rows apart and its lengths its own (as in the forward).
  int seq_q = p.seq_q, seq_k = p.seq_k;
  int64_t q_row0, head_rows, kv_row0;
  if (p.cu_seqlens != nullptr) {
    const int start = p.cu_seqlens[batch];
    seq_q = seq_k = p.cu_seqlens[batch + 1] - start;
    head_rows = p.tokens;
    q_row0 = static_cast<int64_t>(kv_head) * p.group * p.tokens + start;
    kv_row0 = static_cast<int64_t>(kv_head) * p.tokens + start;
  } else {
    head_rows = p.seq_q;
    q_row0 = (batch * p.heads + static_cast<int64_t>(kv_head) * p.group) * p.seq_q;
    kv_row0 = bkv * p.seq_k;
  }
  const int n0 = n_index * kBlockN;
  if (n0 >= seq_k) return;  // past a packed sequence's end

  // The query blocks that see a key of this CTA, in every head of the group: step = g * m_blocks + m.
  const RowSpan rows = rows_seeing_keys(n0, min(kBlockN, seq_k - n0), seq_q, seq_k, p.causal, p.window);
  const int first_m_block = rows.end > rows.begin ? static_cast<int>(rows.begin) / kBlockM : 0;
  const int m_blocks =
      rows.end > rows.begin ? static_cast<int>((rows.end + kBlockM - 1) / kBlockM) - first_m_block : 0;
  const int steps = m_blocks * p.group;

  const T* k = static_cast<const T*>(p.k) + (kv_row0 + n0) * kHeadDim;
  const T* v = static_cast<const T*>(p.v) + (kv_row0 + n0) * kHeadDim;
  const T* q = static_cast<const T*>(p.q);
  const T* d_o = static_cast<const T*>(p.d_o);
  // Query row of a step's first row, and that row's index in its sequence.
  auto step_row0 = [&](int step, int& m0) {
    m0 = (first_m_block + step % m_blocks) * kBlockM;
    return q_row0 + (step / m_blocks) * head_rows + m0;
  };
  // Q, dO, LSE and D of a step into buffer `buf`; rows past seq_q become zeros.
  auto load_step = [&](int step, int buf) {
    int m0;
    const int64_t row0 = step_row0(step, m0);
    load_tile_async<Tr, kBlockM>(s_q + buf * kQTileBytes, q + row0 * kHeadDim, seq_q - m0);
    load_tile_async<Tr, kBlockM>(s_do + buf * kQTileBytes, d_o + row0 * kHeadDim, seq_q - m0);
    const int t = static_cast<int>(threadIdx.x);
    if (t < 2 * kBlockM) {
      const int r = t % kBlockM;
      const float* src = (t < kBlockM ? p.lse_log2 : p.d_sum) + row0 + r;
      const bool valid = m0 + r < seq_q;
      cp_async_4((t < kBlockM ? s_lse : s_dsum) + (buf * kBlockM + r) * 4, valid ? src : p.d_sum, valid ? 4 : 0);
    }
  };

  // Prologue: K, V and step 0 as one copy group, step 1 as the next (possibly empty) one.
  if (steps > 0) {
    load_tile_async<Tr, kBlockN>(s_k, k, seq_k - n0);
    load_tile_async<Tr, kBlockN>(s_v, v, seq_k - n0);
    load_step(0, 0);
  }
  cp_async_commit();
  if (steps > 1) load_step(1, 1);
  cp_async_commit();

  // Per-lane ldmatrix addresses (without their tile's base, a multiple of 128 bytes): a row of every
  // one of them is the lane's row plus a multiple of 8, so its row % 8 is lane % 8.
  const int row_key = lane & 7;
  // A fragments of the warp's 16 rows of K or V (as Q's in the forward).
  const uint32_t kv_a_lane = (warp * kMmaRows + (lane & 15)) * kRowBytes + Tr::lane_chunk(lane / 16, row_key);
  // B fragments whose n are rows of Q or dO (as K's in the forward's S = Q K^T).
  const uint32_t rows_b_lane = ((lane / 16) * 8 + (lane & 7)) * kRowBytes + Tr::lane_chunk((lane / 8) % 2, row_key);
  // B fragments whose k are rows of Q, dO or K (transposed, as V's in the forward's P V).
  const uint32_t cols_b_lane = (((lane / 8) % 2) * 8 + (lane & 7)) * kRowBytes + Tr::lane_chunk(lane / 16, row_key);
  // A fragments of dS (query rows) from dS^T (key rows), transposed: matrix i of an x4 is keys
  // (i / 2) * 8 .. + 7 by queries (i % 2) * 8 .. + 7, so a lane addresses key (lane / 16) * 8 + lane % 8.
  const uint32_t ds_a_lane = s_ds + ((lane / 16) * 8 + (lane & 7)) * kDsRowBytes + Ds::lane_chunk((lane / 8) % 2, row_key);

  float acc_dk[Tr::kNTilesD][4];  // (16 keys, D) in C-fragment layout
  float acc_dv[Tr::kNTilesD][4];
#pragma unroll
  for (int nt = 0; nt < Tr::kNTilesD; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[nt][e] = acc_dv[nt][e] = 0.f;

  const int key_row = warp * kMmaRows + quad_row;  // this lane's keys in the CTA's block: key_row, + 8
  // The lane's 4 bytes of dS^T's row key_row in n8 tile 0 (chunk 0 ^ quad_row); tile nt's are this XOR
  // (nt % 8) * 16 plus (nt / 8) * 128, as SmemRows::step's: one base register for every store.
  const uint32_t ds_store_lane = key_row * kDsRowBytes + Ds::lane_chunk(0, quad_row) + quad_col * 4;
  const int dq_wm = warp / Tr::kDqWarpsN, dq_wn = warp % Tr::kDqWarpsN;

  // With kKvInRegisters, the A fragments of the warp's K and V rows for every k-step, loaded at step 0.
  uint32_t k_frags[Tr::kKvInRegisters ? Tr::kKSteps : 1][4];
  uint32_t v_frags[Tr::kKvInRegisters ? Tr::kKSteps : 1][4];
  // The A fragment of k-step ks of the warp's K (or V) rows: from registers, or loaded into `a`.
  auto kv_fragment = [&](uint32_t s_kv, const uint32_t (&frags)[Tr::kKvInRegisters ? Tr::kKSteps : 1][4], int ks,
                         uint32_t (&a)[4]) -> const uint32_t(&)[4] {
    if constexpr (Tr::kKvInRegisters) return frags[ks];
    ldmatrix_x4(a, Tr::step(s_kv + kv_a_lane, ks));
    return a;
  };

  for (int step = 0; step < steps; ++step) {
    const int buf = step & 1;
    // Step `step` is the oldest copy group in flight (at step 0, step 1 is loading behind it). After the
    // barrier every warp is done with step - 1 (its Q/dO buffer and dS^T): the buffer takes step + 1.
    if (step == 0) cp_async_wait<1>(); else cp_async_wait<0>();
    __syncthreads();
    if (step >= 1 && step + 1 < steps) {
      load_step(step + 1, buf ^ 1);
      cp_async_commit();
    }
    if constexpr (Tr::kKvInRegisters) {
      if (step == 0) {
#pragma unroll
        for (int ks = 0; ks < Tr::kKSteps; ++ks) {
          ldmatrix_x4(k_frags[ks], Tr::step(s_k + kv_a_lane, ks));
          ldmatrix_x4(v_frags[ks], Tr::step(s_v + kv_a_lane, ks));
        }
      }
    }
    int m0;
    const int64_t row0 = step_row0(step, m0);
    const uint32_t q_buf = s_q + buf * kQTileBytes, do_buf = s_do + buf * kQTileBytes;
    // This lane's columns' LSE and D: queries nt * 8 + 2 quad_col, + 1 at lse_cols[nt * 4] and
    // dsum_cols[nt * 4].
    const float2* lse_cols = reinterpret_cast<const float2*>(lse_floats + buf * kBlockM) + quad_col;
    const float2* dsum_cols = reinterpret_cast<const float2*>(dsum_floats + buf * kBlockM) + quad_col;

    // The block's rows in kQueryParts parts of kPartRows: the part's S^T and dP^T are the only
    // accumulators besides dK and dV. A loop, not unrolled: unrolled, two 64-row parts at hdim 64 made
    // ptxas spill 16 bytes (255 registers), as a loop none.
#pragma unroll 1
    for (int part = 0; part < Tr::kQueryParts; ++part) {
      const uint32_t q_part = q_buf + part * kPartRows * kRowBytes, do_part = do_buf + part * kPartRows * kRowBytes;
      // S^T = K Q^T: the warp's 16 keys by the part's kPartRows query rows.
      float acc_s[Tr::kNTilesS][4];
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[nt][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < Tr::kKSteps; ++ks) {
        uint32_t a_smem[4];
        const uint32_t(&a)[4] = kv_fragment(s_k, k_frags, ks, a_smem);
#pragma unroll
        for (int nt2 = 0; nt2 < Tr::kNTilesS / 2; ++nt2) {
          uint32_t b[4];
          ldmatrix_x4(b, Tr::step(q_part + rows_b_lane, ks) + nt2 * 16 * kRowBytes);
          mma_16816<T>(acc_s[2 * nt2], a, b[0], b[1]);
          mma_16816<T>(acc_s[2 * nt2 + 1], a, b[2], b[3]);
        }
      }

      // Mask the scores of keys a row does not see, and of rows past seq_q (same limits as the forward's).
      if (bwd_block_needs_mask(Tr::kConfig, m0, n0, seq_q, seq_k, p.causal, p.window)) {
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int i = m0 + part * kPartRows + nt * 8 + quad_col * 2 + e;
            const RowKeys keys = row_keys(i, seq_q, seq_k, p.causal, p.window);
#pragma unroll
            for (int half = 0; half < 2; ++half) {
              const int key = n0 + key_row + half * 8;
              if (key >= keys.end || key < keys.begin) acc_s[nt][half * 2 + e] = -INFINITY;
            }
          }
      }

      // P^T = exp2(S^T * scale_log2 - LSE_i * log2 e): column i's LSE for elements 0, 2 and 1, 3.
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesS; ++nt) {
        const float2 lse = lse_cols[part * kPartRows / 2 + nt * 4];
        acc_s[nt][0] = fast_exp2(fmaf(acc_s[nt][0], p.scale_log2, -lse.x));
        acc_s[nt][1] = fast_exp2(fmaf(acc_s[nt][1], p.scale_log2, -lse.y));
        acc_s[nt][2] = fast_exp2(fmaf(acc_s[nt][2], p.scale_log2, -lse.x));
        acc_s[nt][3] = fast_exp2(fmaf(acc_s[nt][3], p.scale_log2, -lse.y));
      }

      // dV += P^T dO. Two adjacent n8 tiles of P^T are one k16 A fragment (as P in the forward).
#pragma unroll
      for (int qs = 0; qs < Tr::kQSteps; ++qs) {
        const uint32_t a[4] = {pack2<T>(acc_s[2 * qs][0], acc_s[2 * qs][1]), pack2<T>(acc_s[2 * qs][2], acc_s[2 * qs][3]),
                               pack2<T>(acc_s[2 * qs + 1][0], acc_s[2 * qs + 1][1]),
                               pack2<T>(acc_s[2 * qs + 1][2], acc_s[2 * qs + 1][3])};
#pragma unroll
        for (int dt2 = 0; dt2 < Tr::kNTilesD / 2; ++dt2) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, Tr::step(do_part + cols_b_lane, dt2) + qs * 16 * kRowBytes);
          mma_16816<T>(acc_dv[2 * dt2], a, b[0], b[1]);
          mma_16816<T>(acc_dv[2 * dt2 + 1], a, b[2], b[3]);
        }
      }

      // dP^T = V dO^T.
      float acc_dp[Tr::kNTilesS][4];
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_dp[nt][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < Tr::kKSteps; ++ks) {
        uint32_t a_smem[4];
        const uint32_t(&a)[4] = kv_fragment(s_v, v_frags, ks, a_smem);
#pragma unroll
        for (int nt2 = 0; nt2 < Tr::kNTilesS / 2; ++nt2) {
          uint32_t b[4];
          ldmatrix_x4(b, Tr::step(do_part + rows_b_lane, ks) + nt2 * 16 * kRowBytes);
          mma_16816<T>(acc_dp[2 * nt2], a, b[0], b[1]);
          mma_16816<T>(acc_dp[2 * nt2 + 1], a, b[2], b[3]);
        }
      }

      // dS^T = P^T * (dP^T - D_i), rounded to the dtype as k16 A fragments; each fragment's four
      // registers are rows key_row, key_row + 8 of n8 tiles 2 qs and 2 qs + 1, also stored as dS^T's rows
      // for dQ.
      uint32_t ds[Tr::kQSteps][4];
#pragma unroll
      for (int qs = 0; qs < Tr::kQSteps; ++qs)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int nt = 2 * qs + j / 2, half = j % 2;
          const float2 d = dsum_cols[part * kPartRows / 2 + nt * 4];
          ds[qs][j] = pack2<T>(acc_s[nt][half * 2] * (acc_dp[nt][half * 2] - d.x),
                               acc_s[nt][half * 2 + 1] * (acc_dp[nt][half * 2 + 1] - d.y));
          const int chunk = part * Tr::kNTilesS + nt;  // of dS^T's row
          const uint32_t at =
              ((ds_store_lane ^ static_cast<uint32_t>((chunk % 8) * 16)) + (chunk / 8) * 128) + half * 8 * kDsRowBytes;
          *reinterpret_cast<uint32_t*>(ds_bytes + at) = ds[qs][j];
        }

      // dK += dS^T Q (scaled once, at the end).
#pragma unroll
      for (int qs = 0; qs < Tr::kQSteps; ++qs)
#pragma unroll
        for (int dt2 = 0; dt2 < Tr::kNTilesD / 2; ++dt2) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, Tr::step(q_part + cols_b_lane, dt2) + qs * 16 * kRowBytes);
          mma_16816<T>(acc_dk[2 * dt2], ds[qs], b[0], b[1]);
          mma_16816<T>(acc_dk[2 * dt2 + 1], ds[qs], b[2], b[3]);
        }
    }

    // Every warp's dS^T rows are in shared memory: warp (dq_wm, dq_wn) computes rows dq_wm * kBlockM /
    // kDqWarpsM and columns dq_wn * kDqCols of dQ_block = dS K over the CTA's kBlockN keys.
    __syncthreads();
    float acc_dq[Tr::kDqMTiles][Tr::kDqNTiles][4];
#pragma unroll
    for (int mt = 0; mt < Tr::kDqMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kDqNTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_dq[mt][nt][e] = 0.f;
    // Two k-steps per trip (16 or more MMAs to cover the loads): fully unrolled, ptxas hoisted the
    // loads of later k-steps and spilled 28 bytes at hdim 128 (255 registers).
#pragma unroll 2
    for (int ks = 0; ks < kBlockN / 16; ++ks) {
      uint32_t a[Tr::kDqMTiles][4];
#pragma unroll
      for (int mt = 0; mt < Tr::kDqMTiles; ++mt)
        ldmatrix_x4_trans(a[mt], Ds::step(ds_a_lane, dq_wm * Tr::kDqMTiles + mt) + ks * 16 * kDsRowBytes);
#pragma unroll
      for (int dt2 = 0; dt2 < Tr::kDqNTiles / 2; ++dt2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, Tr::step(s_k + cols_b_lane, dq_wn * (Tr::kDqCols / 16) + dt2) + ks * 16 * kRowBytes);
#pragma unroll
        for (int mt = 0; mt < Tr::kDqMTiles; ++mt) {
          mma_16816<T>(acc_dq[mt][2 * dt2], a[mt], b[0], b[1]);
          mma_16816<T>(acc_dq[mt][2 * dt2 + 1], a[mt], b[2], b[3]);
        }
      }
    }
    float* dq_accum = p.dq_accum + row0 * kHeadDim;
#pragma unroll
    for (int mt = 0; mt < Tr::kDqMTiles; ++mt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = (dq_wm * Tr::kDqMTiles + mt) * kMmaRows + quad_row + half * 8;
        if (m0 + r >= seq_q) continue;
#pragma unroll
        for (int nt = 0; nt < Tr::kDqNTiles; ++nt)
          red_add_f32x2(dq_accum + static_cast<int64_t>(r) * kHeadDim + dq_wn * Tr::kDqCols + nt * 8 + quad_col * 2,
                        acc_dq[mt][nt][half * 2], acc_dq[mt][nt][half * 2 + 1]);
      }
  }
  cp_async_wait<0>();

  // dK = softmax_scale * dS^T Q and dV of this lane's keys, rows past seq_k not stored.
  T* dk = static_cast<T*>(p.dk) + (kv_row0 + n0) * kHeadDim;
  T* dv = static_cast<T*>(p.dv) + (kv_row0 + n0) * kHeadDim;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int key = key_row + half * 8;
    if (n0 + key >= seq_k) continue;
#pragma unroll
    for (int nt = 0; nt < Tr::kNTilesD; ++nt) {
      const int64_t at = static_cast<int64_t>(key) * kHeadDim + nt * 8 + quad_col * 2;
      *reinterpret_cast<uint32_t*>(dk + at) =
          pack2<T>(acc_dk[nt][half * 2] * p.scale, acc_dk[nt][half * 2 + 1] * p.scale);
      *reinterpret_cast<uint32_t*>(dv + at) = pack2<T>(acc_dv[nt][half * 2], acc_dv[nt][half * 2 + 1]);
    }
  }
#endif
}

}  // namespace attnprof::kernels::fused
