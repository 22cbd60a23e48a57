// The fused attention forward (FlashAttention-2 algorithm), one launch per call.
//
// Layers, top to bottom:
//   CTA     block_m query rows of one (batch, head); walks the key tiles it can see (tiles past its
//           last row's causal or window limit, and before its first row's window, are never loaded),
//           K and V through cp.async: two buffers each, tile n + 1 copied while tile n is computed
//           (one barrier per tile), or (kv_buffers 1) one each, V(n) copied during S = Q K^T and
//           K(n + 1) during softmax and P V (two barriers per tile, FlashAttention-2's schedule).
//   warp    16 * m_tiles_per_warp rows; S = Q K^T and O += P V with mma.sync m16n8k16 (fp32 accum);
//           A from Q (ldmatrix) or from P (the S accumulators, rounded, no shared-memory round trip);
//           B from K (ldmatrix) and V (ldmatrix.trans); a step's shared-memory fragments are loaded
//           fragment_lookahead MMA steps before it (0: right before its MMAs).
//   quad    the 4 lanes holding one row's scores: online softmax in fp32 with exp2 and a lazy row max
//           (reduced with two shuffles only when it must move); the row sum reduced once, at the end.
// Shared memory rows are padded by 16 bytes (hdim + 8 elements): the 8 rows an 8x8 ldmatrix reads then
// start in 8 different 16-byte bank groups (no conflicts), and every fragment address is one per-lane
// base register plus a compile-time offset. The swizzled variants keep rows hdim wide and store chunk c
// of row r at chunk c ^ (r % 8), conflict-free as well, and each 128-byte line of a copy lands in one
// aligned 128-byte segment; a fragment address is then the per-lane base XOR a compile-time constant,
// plus a compile-time offset (every row, buffer and tile base is a multiple of 128 bytes).
// Tails: rows past seq_q / seq_k are zero-filled in shared memory, scores past seq_k (or outside a
// row's causal or window limits) are set to -inf, and only rows < seq_q are stored. S and P never leave the SM.
// Packed variable-length batch (p.cu_seqlens): a CTA's (batch, head) is a sequence's head, its rows and
// keys start at the sequence's first token, seq_q = seq_k is the sequence's length (the tails above are
// then the sequence's end), and the grid's query blocks cover the longest sequence: a CTA past its
// sequence's last block returns before loading anything.
// To extend: a new head dim is one more entry of kHeadDims (fused_tiles.hpp) and one more
// fused_d<hdim>.cu; a new tile shape is one more TileVariant in fused_tiles.hpp.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/common/online_softmax.cuh"
#include "kernels/fused/fused_launch.hpp"
#include "core/tiles/fused_tiles.hpp"
#include "kernels/fused/ptx.cuh"

namespace attnprof::kernels::fused {

inline constexpr float kLn2 = 0.6931471805599453f;

// Addresses in shared-memory tiles of kRowBytes-long rows, padded or swizzled (see above); the backward
// (fused_bwd_kernel.cuh) addresses its tiles the same way.
template <uint32_t kRowBytes, bool kSwizzledRows>
struct SmemRows {
  static constexpr uint32_t kSmemRowBytes = kRowBytes;
  static constexpr bool kSwizzled = kSwizzledRows;
  static_assert(!kSwizzled || kRowBytes % 128 == 0, "a swizzled row is whole 128-byte lines");
  // Byte offset of 16-byte chunk `chunk` of shared-memory row `row`.
  static __device__ __forceinline__ uint32_t at(int row, int chunk) {
    return static_cast<uint32_t>(row) * kSmemRowBytes + static_cast<uint32_t>(kSwizzled ? chunk ^ (row & 7) : chunk) * 16;
  }
  // Address of chunk 2 i + (the lane's half) of the lane's row, from the lane's address `lane_addr` of
  // chunk 0 + half (padded) or of chunk half ^ (row % 8) (swizzled; the row's base a multiple of 128).
  static __device__ __forceinline__ uint32_t step(uint32_t lane_addr, int i) {
    if constexpr (kSwizzled) return (lane_addr ^ static_cast<uint32_t>((i % 4) * 32)) + static_cast<uint32_t>((i / 4) * 128);
    return lane_addr + static_cast<uint32_t>(i * 32);
  }
  // The lane's part of lane_addr: chunk `half` of a row r with r % 8 == row_key.
  static __device__ __forceinline__ uint32_t lane_chunk(int half, int row_key) {
    return static_cast<uint32_t>(kSwizzled ? half ^ row_key : half) * 16;
  }
};

template <int kHeadDim, TileVariant kVariant>
struct FusedTraits : SmemRows<smem_row_elems(tile_config(kHeadDim, kVariant), kHeadDim) * 2,
                              tile_config(kHeadDim, kVariant).swizzled> {
  static constexpr TileConfig kConfig = tile_config(kHeadDim, kVariant);
  static constexpr int kBlockM = kConfig.block_m;
  static constexpr int kBlockN = kConfig.block_n;
  static constexpr int kWarps = kConfig.warps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kMTiles = kConfig.m_tiles_per_warp;
  static constexpr int kWarpRows = kMmaRows * kMTiles;
  static constexpr bool kQInRegisters = kConfig.q_in_registers;
  static constexpr int kMinBlocksPerSm = kConfig.min_blocks_per_sm;
  static constexpr int kKvBuffers = kConfig.kv_buffers;
  static constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks of one row of Q, K or V
  static constexpr bool kStagedO = kConfig.staged_o;
  static constexpr int kAhead = kConfig.fragment_lookahead;
  static constexpr int kKSteps = kHeadDim / 16;       // k-steps of S = Q K^T
  static constexpr int kNTilesS = kBlockN / 8;         // n8 tiles of one S block row
  static constexpr int kNTilesO = kHeadDim / 8;        // n8 tiles of one O row
  static_assert(kBlockM == kMmaRows * kWarps * kMTiles, "block_m = 16 * warps * m_tiles_per_warp");
  static_assert(kHeadDim % 16 == 0, "hdim is a multiple of the MMA k-step");
  static_assert(kBlockN % 16 == 0, "block_n is a multiple of the MMA k-step");
  static_assert(kKvBuffers == 1 || kKvBuffers == 2, "one or two K/V buffers");
  // A k-step's A fragments are loaded at most one k-step ahead: two buffers suffice.
  static_assert(kAhead >= 0 && kAhead < kNTilesS / 2, "lookahead shorter than one k-step of S");
};

// How a tile's rows at or past rows_valid become zeros: a zero-byte cp.async from a stand-in source, or
// a plain shared-memory store of zeros. The store keeps no source address live; with one K and one V
// buffer at hdim 256 the cp.async form made ptxas spill 20 bytes (255 registers), the store 251, none.
enum class TailFill { cp_async, store };

// Copies rows [0, kRows) of a row-major, hdim-wide global tile into shared memory; rows at or past
// rows_valid become zeros.
// With copy_by_lines, rows of whole 128-byte lines (hdim 64, 128, 192, 256) are copied line by line:
// thread t copies chunk t % 8 of a line of row t / 8 + a multiple of kThreads / 8, the lines of a tile
// one after the other. That row's row % 8 is the thread's own (kThreads / 8 is a multiple of 8), so
// every copy's shared and global addresses are one per-thread base plus a compile-time offset, and a
// warp copies four whole lines per instruction. Otherwise, and for rows of 4 or 12 chunks (hdim 32,
// 96), each thread takes the tile's chunks in order, kThreads apart.
template <typename Traits, int kRows, TailFill kTail = TailFill::cp_async, typename T>
__device__ __forceinline__ void load_tile_async(uint32_t smem, const T* global, int rows_valid) {
  constexpr int kChunks = kRows * Traits::kChunksPerRow;
  static_assert(kChunks % Traits::kThreads == 0, "every thread copies the same number of chunks");
  constexpr int kRowElems = Traits::kChunksPerRow * 8;
  constexpr int kRowsPerPass = Traits::kThreads / 8;
  if constexpr (Traits::kConfig.copy_by_lines && Traits::kChunksPerRow % 8 == 0 && kRows % kRowsPerPass == 0) {
    static_assert(kRowsPerPass % 8 == 0, "a thread's rows share row % 8");
    // One 16-byte copy: its shared-memory address, its source and its row (a zero fill at or past
    // rows_valid).
    auto copy = [&](uint32_t dst, const T* src, int row) {
      const bool valid = row < rows_valid;
      if constexpr (kTail == TailFill::store) {
        if (valid) cp_async_16(dst, src, 16); else st_shared_zero_16(dst);
      } else {
        cp_async_16(dst, valid ? src : global, valid ? 16 : 0);
      }
    };
    constexpr int kPassesPerLine = kRows / kRowsPerPass, kLines = Traits::kChunksPerRow / 8;
    const int row0 = static_cast<int>(threadIdx.x) / 8, chunk0 = static_cast<int>(threadIdx.x) % 8;
    const uint32_t dst0 = smem + Traits::at(row0, chunk0);
    const T* src0 = global + row0 * kRowElems + chunk0 * 8;
    auto copy_all = [&](auto&& copy_one) {
#pragma unroll
      for (int line = 0; line < kLines; ++line)
#pragma unroll
        for (int pass = 0; pass < kPassesPerLine; ++pass) {
          const int rows = pass * kRowsPerPass;
          copy_one(dst0 + static_cast<uint32_t>(rows) * Traits::kSmemRowBytes + line * 128,
                   src0 + rows * kRowElems + line * 64, row0 + rows);
        }
    };
    if (rows_valid >= kRows)  // a whole tile (every tile but a tail): no per-row test
      copy_all([](uint32_t dst, const T* src, int) { cp_async_16(dst, src, 16); });
    else
      copy_all(copy);
    return;
  }
  if (rows_valid >= kRows) {  // a whole tile: no per-row test
#pragma unroll
    for (int i = 0; i < kChunks / Traits::kThreads; ++i) {
      const int chunk_id = i * Traits::kThreads + static_cast<int>(threadIdx.x);
      const int row = chunk_id / Traits::kChunksPerRow;
      const int chunk = chunk_id % Traits::kChunksPerRow;
      cp_async_16(smem + Traits::at(row, chunk), global + static_cast<int64_t>(row) * kRowElems + chunk * 8, 16);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kChunks / Traits::kThreads; ++i) {
    const int chunk_id = i * Traits::kThreads + static_cast<int>(threadIdx.x);
    const int row = chunk_id / Traits::kChunksPerRow;
    const int chunk = chunk_id % Traits::kChunksPerRow;
    const bool valid = row < rows_valid;
    if constexpr (kTail == TailFill::store) {
      const uint32_t dst = smem + Traits::at(row, chunk);
      if (valid)
        cp_async_16(dst, global + static_cast<int64_t>(row) * kRowElems + chunk * 8, 16);
      else
        st_shared_zero_16(dst);
    } else {
      const T* src = valid ? global + static_cast<int64_t>(row) * kRowElems + chunk * 8 : global;
      cp_async_16(smem + Traits::at(row, chunk), src, valid ? 16 : 0);
    }
  }
}

template <typename T, int kHeadDim, TileVariant kVariant>
__global__ void __launch_bounds__(FusedTraits<kHeadDim, kVariant>::kThreads,
                                  FusedTraits<kHeadDim, kVariant>::kMinBlocksPerSm)
    fused_attention_kernel(const FusedParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  // cp.async and bf16 mma.sync need sm_80; the host side refuses older devices (unsupported_reason).
  __trap();
#else
  using Tr = FusedTraits<kHeadDim, kVariant>;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kMTiles = Tr::kMTiles;
  constexpr uint32_t kRowBytes = Tr::kSmemRowBytes;
  constexpr bool kDoubleBuffered = Tr::kKvBuffers == 2;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const uint32_t s_q = smem_address(smem_raw);                     // (kBlockM, D + pad)
  const uint32_t s_k = s_q + kBlockM * kRowBytes;                  // (kKvBuffers, kBlockN, D + pad)
  const uint32_t s_v = s_k + Tr::kKvBuffers * kBlockN * kRowBytes; // (kKvBuffers, kBlockN, D + pad)
  constexpr uint32_t kKvTileBytes = kBlockN * kRowBytes;

  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int quad_row = lane / 4;   // row of the MMA fragment this lane holds (and +8)
  const int quad_col = lane % 4;   // column pair of the fragment

  // Query blocks of one (batch, head) are adjacent in the grid so that they share K/V in L2; with a
  // causal mask the heaviest (last) blocks start first (with a causal window the first blocks, whose
  // windows are cut short by key 0, are still the light ones).
  const int m_index = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.num_m_blocks));
  const int64_t bh = blockIdx.x / static_cast<unsigned>(p.num_m_blocks);
  const int64_t batch = bh / p.heads;
  const int head = static_cast<int>(bh % p.heads);
  const int kv_head = head / p.group;

  // Row offsets and lengths: a dense batch's (batch, head) is seq_q rows of Q after the previous ones; a
  // packed batch's sequence starts at token cu_seqlens[batch] of every head's tokens rows, and its
  // lengths are its own (self-attention: seq_q = seq_k). The grid covers the longest sequence: the CTAs
  // of a shorter one past its end exit at once (FlashAttention-2's varlen grid).
  int seq_q = p.seq_q, seq_k = p.seq_k;
  int64_t q_row0, kv_row0;  // row of this (batch, head)'s query 0 in Q, O, LSE; of key 0 in K, V
  if (p.cu_seqlens != nullptr) {
    const int start = p.cu_seqlens[batch];
    seq_q = seq_k = p.cu_seqlens[batch + 1] - start;
    q_row0 = static_cast<int64_t>(head) * p.tokens + start;
    kv_row0 = static_cast<int64_t>(kv_head) * p.tokens + start;
  } else {
    q_row0 = bh * p.seq_q;
    kv_row0 = (batch * p.kv_heads + kv_head) * p.seq_k;
  }
  const int num_m_blocks = p.cu_seqlens != nullptr ? (seq_q + kBlockM - 1) / kBlockM : p.num_m_blocks;
  if (m_index >= num_m_blocks) return;  // past a packed sequence's end
  const int m_block = p.causal ? num_m_blocks - 1 - m_index : m_index;
  const int m0 = m_block * kBlockM;

  const T* q = static_cast<const T*>(p.q) + (q_row0 + m0) * kHeadDim;
  const T* k = static_cast<const T*>(p.k) + kv_row0 * kHeadDim;
  const T* v = static_cast<const T*>(p.v) + kv_row0 * kHeadDim;

  // Key tiles first_tile .. first_tile + n_blocks - 1: the ones some row of this CTA sees.
  const int first_tile = static_cast<int>(first_key_tile(Tr::kConfig, m0, seq_q, seq_k, p.causal, p.window));
  const int n_blocks = static_cast<int>(key_tiles(Tr::kConfig, m0, seq_q, seq_k, p.causal, p.window));
  const int first_key = first_tile * kBlockN;

  // Prologue: Q with the first key tile as one cp.async group, the second as the next (possibly
  // empty) group. With one K/V buffer, Q and the first K tile are the only group: V(first) is copied
  // in the loop, like every V.
  load_tile_async<Tr, kBlockM>(s_q, q, seq_q - m0);
  if (n_blocks > 0) {
    load_tile_async<Tr, kBlockN>(s_k, k + static_cast<int64_t>(first_key) * kHeadDim, seq_k - first_key);
    if constexpr (kDoubleBuffered)
      load_tile_async<Tr, kBlockN>(s_v, v + static_cast<int64_t>(first_key) * kHeadDim, seq_k - first_key);
  }
  cp_async_commit();
  if (kDoubleBuffered && n_blocks > 1) {
    const int second_key = first_key + kBlockN;
    load_tile_async<Tr, kBlockN>(s_k + kKvTileBytes, k + static_cast<int64_t>(second_key) * kHeadDim,
                                 seq_k - second_key);
    load_tile_async<Tr, kBlockN>(s_v + kKvTileBytes, v + static_cast<int64_t>(second_key) * kHeadDim,
                                 seq_k - second_key);
  }
  cp_async_commit();

  const int warp_row0 = warp * Tr::kWarpRows;  // first row of this warp inside the CTA tile

  // Q's A-operand fragments: kept in registers when they fit, else re-read every key tile.
  uint32_t q_frag[Tr::kQInRegisters ? kMTiles : 1][Tr::kQInRegisters ? Tr::kKSteps : 1][4];
  // Per-lane ldmatrix row addresses (see ptx.cuh for which lanes address which 8x8 matrix); every
  // fragment below is one of these plus a compile-time offset.
  // Every row a lane addresses is the lane's row plus a multiple of 8: its row % 8 is lane % 8.
  const int row_key = lane & 7;
  const uint32_t q_lane = s_q + (warp_row0 + (lane & 15)) * kRowBytes + Tr::lane_chunk(lane / 16, row_key);
  const uint32_t k_lane = s_k + ((lane / 16) * 8 + (lane & 7)) * kRowBytes + Tr::lane_chunk((lane / 8) % 2, row_key);
  const uint32_t v_lane = s_v + (((lane / 8) % 2) * 8 + (lane & 7)) * kRowBytes + Tr::lane_chunk(lane / 16, row_key);
  auto load_q_fragment = [&](uint32_t (&a)[4], int mt, int ks) {
    ldmatrix_x4(a, Tr::step(q_lane, ks) + mt * kMmaRows * kRowBytes);
  };
  if constexpr (Tr::kQInRegisters) {
    cp_async_wait<kDoubleBuffered ? 1 : 0>();
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int ks = 0; ks < Tr::kKSteps; ++ks) load_q_fragment(q_frag[mt][ks], mt, ks);
  }

  float acc_o[kMTiles][Tr::kNTilesO][4];  // (warp rows, D) in C-fragment layout
  float row_max[kMTiles * 2];             // [2 mt + half]: raw max of rows quad_row and quad_row + 8
  float row_sum[kMTiles * 2];             // [2 mt + half]: this lane's partial sum of exp (quad-reduced last)
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < Tr::kNTilesO; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] = 0.f;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      row_max[2 * mt + half] = -INFINITY;
      row_sum[2 * mt + half] = 0.f;
    }
  }

  // `it` counts the tiles this CTA visits (it picks the buffer); n_block = first_tile + it is the tile.
  for (int it = 0; it < n_blocks; ++it) {
    const int n_block = first_tile + it;
    const uint32_t buffer = kDoubleBuffered ? (it & 1) * kKvTileBytes : 0;
    if constexpr (kDoubleBuffered) {
      // Tile n_block is the oldest copy group in flight (at tile 0, tile 1 is loading behind it).
      if (it == 0) cp_async_wait<1>(); else cp_async_wait<0>();
      // One barrier per key tile: tile n_block is visible to every warp, and every warp is done with
      // tile n_block - 1, whose buffer now takes tile n_block + 1 (loading while this tile is computed).
      // (Refilling after S = Q K^T instead, or with a second barrier at the end of the tile, was slower.)
      __syncthreads();
      if (it >= 1 && it + 1 < n_blocks) {
        const int next0 = (n_block + 1) * kBlockN;
        load_tile_async<Tr, kBlockN>(s_k + (kKvTileBytes - buffer), k + static_cast<int64_t>(next0) * kHeadDim,
                                     seq_k - next0);
        load_tile_async<Tr, kBlockN>(s_v + (kKvTileBytes - buffer), v + static_cast<int64_t>(next0) * kHeadDim,
                                     seq_k - next0);
        cp_async_commit();
      }
    } else {
      // K(n_block) (with Q, at the first tile) is the only copy in flight: once it has landed and every
      // warp is past this barrier, every warp is also done with V(n_block - 1), whose buffer takes
      // V(n_block) while S = Q K^T runs.
      cp_async_wait<0>();
      __syncthreads();
      const int v0 = n_block * kBlockN;
      load_tile_async<Tr, kBlockN, TailFill::store>(s_v, v + static_cast<int64_t>(v0) * kHeadDim, seq_k - v0);
      cp_async_commit();
    }

    // S = Q K^T for this warp's rows and the kBlockN keys of this tile.
    float acc_s[kMTiles][Tr::kNTilesS][4];  // (warp rows, kBlockN)
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.f;
    // Step j = (ks, nt2) of S: A from Q at k-step ks, B from K at k-step ks, keys nt2 * 16 .. + 15.
    // The fragments of step j + kAhead are loaded before the MMAs of step j.
    constexpr int kSSteps = Tr::kKSteps * (Tr::kNTilesS / 2);
    uint32_t a_s[2][kMTiles][4];
    uint32_t b_s[Tr::kAhead + 1][4];
    auto load_s_step = [&](int j) {
      const int ks = j / (Tr::kNTilesS / 2), nt2 = j % (Tr::kNTilesS / 2);
      if (nt2 == 0) {
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          if constexpr (Tr::kQInRegisters) {
#pragma unroll
            for (int e = 0; e < 4; ++e) a_s[ks % 2][mt][e] = q_frag[mt][ks][e];
          } else {
            load_q_fragment(a_s[ks % 2][mt], mt, ks);
          }
        }
      }
      ldmatrix_x4(b_s[j % (Tr::kAhead + 1)], Tr::step(k_lane + buffer, ks) + nt2 * 16 * kRowBytes);
    };
#pragma unroll
    for (int j = 0; j < Tr::kAhead; ++j) load_s_step(j);
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks)
#pragma unroll
      for (int nt2 = 0; nt2 < Tr::kNTilesS / 2; ++nt2) {
        const int j = ks * (Tr::kNTilesS / 2) + nt2;
        if (j + Tr::kAhead < kSSteps) load_s_step(j + Tr::kAhead);
        const uint32_t(&b)[4] = b_s[j % (Tr::kAhead + 1)];
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_16816<T>(acc_s[mt][2 * nt2], a_s[ks % 2][mt], b[0], b[1]);
          mma_16816<T>(acc_s[mt][2 * nt2 + 1], a_s[ks % 2][mt], b[2], b[3]);
        }
      }

    if constexpr (!kDoubleBuffered) {
      // V(n_block) has landed, and every warp is done with K(n_block): its buffer takes K(n_block + 1)
      // while the softmax and P V run.
      cp_async_wait<0>();
      __syncthreads();
      if (it + 1 < n_blocks) {
        const int next0 = (n_block + 1) * kBlockN;
        load_tile_async<Tr, kBlockN, TailFill::store>(s_k, k + static_cast<int64_t>(next0) * kHeadDim,
                                                      seq_k - next0);
        cp_async_commit();
      }
    }

    // Mask keys past seq_k and outside each row's causal and window limits. Only the tiles that
    // straddle a limit pay for it.
    const int n0 = n_block * kBlockN;
    // Same test as tile_needs_mask() in fused_tiles.hpp, in 32-bit arithmetic.
    const int p_first = m0 + seq_k - seq_q, p_last = p_first + kBlockM - 1;
    const bool needs_mask = n0 + kBlockN > seq_k || (p.causal && n0 + kBlockN - 1 > p_first) ||
                            (p.window > 0 && ((!p.causal && n0 + kBlockN - 1 >= p_first + p.window) ||
                                              n0 <= p_last - p.window));
    if (needs_mask) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int pos = m0 + warp_row0 + mt * kMmaRows + quad_row + half * 8 + seq_k - seq_q;
          const int key_end = p.causal ? pos + 1 : p.window > 0 ? pos + p.window : seq_k;
          const int key_limit = min(seq_k, key_end);
          const int key_begin = p.window > 0 ? pos - p.window + 1 : 0;
          // Two compares per score: at hdim 128 (fast tiles: 253 registers, no spills) the one unsigned
          // compare of fused_sm90's mask_tile made ptxas spill 24 bytes.
#pragma unroll
          for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int key = n0 + nt * 8 + quad_col * 2 + e;
              if (key >= key_limit || key < key_begin) acc_s[mt][nt][half * 2 + e] = -INFINITY;
            }
        }
    }

    // Online softmax with a lazy max (kernels/common/online_softmax.cuh): S becomes P, O is rescaled
    // when a row max moves.
    online_softmax_tile(acc_s, acc_o, row_max, row_sum, p.scale_log2);

    // O += P V. Two adjacent n8 tiles of the S accumulators are exactly one k16 A fragment of P.
    // Step j = (ks, dt2): keys ks * 16 .. + 15, O columns dt2 * 16 .. + 15; V's fragments of step
    // j + kAhead are loaded before the MMAs of step j.
    constexpr int kPvSteps = (kBlockN / 16) * (Tr::kNTilesO / 2);
    uint32_t b_v[Tr::kAhead + 1][4];
    auto load_v_step = [&](int j) {
      const int ks = j / (Tr::kNTilesO / 2), dt2 = j % (Tr::kNTilesO / 2);
      ldmatrix_x4_trans(b_v[j % (Tr::kAhead + 1)], Tr::step(v_lane + buffer, dt2) + ks * 16 * kRowBytes);
    };
#pragma unroll
    for (int j = 0; j < Tr::kAhead; ++j) load_v_step(j);
#pragma unroll
    for (int ks = 0; ks < kBlockN / 16; ++ks) {
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        a[mt][0] = pack2<T>(acc_s[mt][2 * ks][0], acc_s[mt][2 * ks][1]);
        a[mt][1] = pack2<T>(acc_s[mt][2 * ks][2], acc_s[mt][2 * ks][3]);
        a[mt][2] = pack2<T>(acc_s[mt][2 * ks + 1][0], acc_s[mt][2 * ks + 1][1]);
        a[mt][3] = pack2<T>(acc_s[mt][2 * ks + 1][2], acc_s[mt][2 * ks + 1][3]);
      }
#pragma unroll
      for (int dt2 = 0; dt2 < Tr::kNTilesO / 2; ++dt2) {
        const int j = ks * (Tr::kNTilesO / 2) + dt2;
        if (j + Tr::kAhead < kPvSteps) load_v_step(j + Tr::kAhead);
        const uint32_t(&b)[4] = b_v[j % (Tr::kAhead + 1)];
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_16816<T>(acc_o[mt][2 * dt2], a[mt], b[0], b[1]);
          mma_16816<T>(acc_o[mt][2 * dt2 + 1], a[mt], b[2], b[3]);
        }
      }
    }

  }
  cp_async_wait<0>();

  // Epilogue: O = acc / row_sum, LSE = ln(sum exp(scale * s)); rows that saw no key get 0 and -inf.
  // Staged (TileConfig::staged_o): each warp puts its O rows in its own rows of the Q buffer (its last
  // read of them is done), then writes them out as whole 16-byte chunks, the chunks of a row on
  // adjacent lanes. Every thread copied a share of Q: a CTA that saw no key tile (and so passed no
  // barrier since) waits for all of them first (n_blocks is the same for the whole CTA). Direct: each
  // lane stores its fragments' pairs of elements.
  T* o = static_cast<T*>(p.o) + (q_row0 + m0) * kHeadDim;
  float* lse = p.lse + q_row0 + m0;
  if constexpr (Tr::kStagedO) {
    if (!Tr::kQInRegisters && n_blocks == 0) __syncthreads();
    __syncwarp();
  }
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float sum = row_sum[2 * mt + half];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv_sum = sum > 0.f ? 1.f / sum : 0.f;
      const int row = warp_row0 + mt * kMmaRows + quad_row + half * 8;  // inside the CTA tile
      const bool valid = m0 + row < seq_q;
      if (Tr::kStagedO || valid) {
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesO; ++nt) {
          const uint32_t packed = pack2<T>(acc_o[mt][nt][half * 2] * inv_sum, acc_o[mt][nt][half * 2 + 1] * inv_sum);
          if constexpr (Tr::kStagedO)
            st_shared_32(s_q + Tr::at(row, nt) + quad_col * 4, packed);
          else
            *reinterpret_cast<uint32_t*>(o + static_cast<int64_t>(row) * kHeadDim + nt * 8 + quad_col * 2) = packed;
        }
      }
      if (quad_col == 0 && valid)
        lse[row] = sum > 0.f ? (row_max[2 * mt + half] * p.scale_log2 + log2f(sum)) * kLn2 : -INFINITY;
    }
  if constexpr (Tr::kStagedO) {
    __syncwarp();
    constexpr int kWarpChunks = Tr::kWarpRows * Tr::kChunksPerRow;
    static_assert(kWarpChunks % 32 == 0, "every lane writes the same number of chunks");
#pragma unroll
    for (int i = 0; i < kWarpChunks / 32; ++i) {
      const int id = i * 32 + lane;
      const int row = warp_row0 + id / Tr::kChunksPerRow, chunk = id % Tr::kChunksPerRow;
      if (m0 + row < seq_q)
        st_global_128(o + static_cast<int64_t>(row) * kHeadDim + chunk * 8, ld_shared_128(s_q + Tr::at(row, chunk)));
    }
  }
#endif
}

}  // namespace attnprof::kernels::fused
