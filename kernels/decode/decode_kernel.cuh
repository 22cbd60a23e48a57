// The decode attention forward (flash-decoding): seq_q 1-16 query positions against a long KV cache,
// contiguous or paged, in one or two launches per call.
//
// Layers, top to bottom (decode_plan.hpp has the arithmetic):
//   grid    one CTA per (batch, kv head, packed-row block, split): the query heads of a GQA group and
//           the query positions are the MMA's rows, so K and V are read once per group; the keys of
//           each sequence are cut into `splits` ranges of whole tiles so that the grid fills the GPU
//           even at batch 1.
//   CTA     streams its key range through kStages cp.async buffers of kBlockN keys (K and V), rows
//           padded or swizzled (SmemLayout); with a paged cache the block table gives each tile's
//           page (pages of whole tiles, KvAddressing::page_tiles) or each row's (smaller pages).
//   warp    takes kKeysPerWarp keys of every tile: S = Q K^T and O += P V with mma.sync m16n8k16
//           (fp32 accumulate), P straight from the S accumulators, an online softmax of its own with
//           the lazy row max (kernels/common/online_softmax.cuh).
//   merge   the warps' (max, sum, O) meet in shared memory once, at the end: with one split the CTA
//           writes O and LSE; otherwise O (normalised, fp32) and LSE of its split go to the workspace.
//   combine the splits of a row block count themselves on its arrival counter; the last to arrive
//           (the others' partials are then visible: each wrote and fenced before it counted) weighs
//           the splits by exp(LSE_split - LSE), writes O and LSE and sets the counter back to zero.
//           One launch per call, no combine kernel.
// Quantized KV cache (kQuant fp8 E4M3 or int8, core/shape.hpp): the stream carries one byte per
// element into kStagesQuant byte tiles of K and V (with the tile's per-token scales). Each warp reads
// its keys' bytes from shared memory straight into the B fragments of the same m16n8k16 MMAs, in fp16
// (every E4M3 and int8 value is exact in fp16), converted in registers: K's in a head-dim order that Q's
// fragments share, V's paired per key by byte permutes into O's columns in a permuted order that the
// merge undoes (decode_fragments.hpp has the maps and the byte tiles' swizzle). K's scale multiplies
// the scores (per token, or folded into the softmax scale), V's multiplies P per token or O at the end.
// Tails: key rows past seq_k are zero-filled in shared memory (never read, so the pad of a last page
// may hold anything), scores past seq_k or past a row's causal limit are -inf, packed rows past the
// group are zero and never stored. With a sliding window the splits cover only the key tiles from the
// first one a position sees (first_tile), and scores before a row's window are -inf too. Offsets are
// 64-bit throughout.
// To extend: a head dim is supported_hdim() plus a case in decode.cu's dispatch.
#pragma once
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/shape.hpp"
#include "kernels/common/device_math.cuh"
#include "kernels/common/online_softmax.cuh"
#include "kernels/decode/decode_fragments.hpp"
#include "kernels/decode/decode_plan.hpp"
#include "kernels/fused/ptx.cuh"

namespace attnprof::kernels::decode {

using fused::cp_async_16;
using fused::cp_async_4;
using fused::cp_async_commit;
using fused::cp_async_wait;
using fused::ldmatrix_x4;
using fused::ldmatrix_x4_trans;
using fused::mma_16816;
using fused::smem_address;

inline constexpr float kLn2 = 0.6931471805599453f;

struct DecodeParams {
  const void* q;                 // (batch, heads, seq_q, D)
  const void* k;                 // (batch, kv_heads, seq_k, D), or pages (pages, kv_heads, page_size, D)
  const void* v;
  void* o;                       // (batch, heads, seq_q, D)
  float* lse;                    // (batch, heads, seq_q)
  const int32_t* block_table;    // (batch, pages_per_seq); nullptr when contiguous
  float* o_partial;              // (splits, batch * heads * seq_q, D); splits > 1 only
  float* lse_partial;            // (splits, batch * heads * seq_q)
  uint32_t* split_counters;      // (batch * kv_heads * m_blocks); zero between calls
  int64_t rows_total;            // batch * heads * seq_q
  int heads, kv_heads, group, seq_q, seq_k;
  int page_size, pages_per_seq;
  int m_blocks, splits, first_tile, tiles, tiles_per_split;  // tiles first_tile .. first_tile + tiles - 1
  float scale_log2;              // softmax_scale * log2(e)
  int causal;
  int window;                    // sliding window in keys (core/shape.hpp); 0 = none
  const float* k_scale;          // a quantized cache's scales (core/shape.hpp's kv_scale); else nullptr
  const float* v_scale;
  core::KvScale kv_scale;
};

// The MMA's element type: the dtype's, or fp16 for a quantized cache.
template <typename T, core::KvDType kQuant>
using MmaType = std::conditional_t<kQuant == core::KvDType::none, T, __half>;

template <int kHeadDim, int kMTiles, SmemLayout kLayout>
struct DecodeTraits {
  static constexpr int kBlockM = block_m(kMTiles);
  static constexpr int kChunksPerRow = kHeadDim / 8;                // 16-byte chunks of one row
  static constexpr int kSmemStride = row_elems(kHeadDim, kLayout);  // elements per shared-memory row
  static constexpr uint32_t kRowBytes = kSmemStride * 2;
  static constexpr uint32_t kTileBytes = kBlockN * kRowBytes;
  static constexpr int kKSteps = kHeadDim / 16;                 // k-steps of S = Q K^T
  static constexpr int kNTilesO = kHeadDim / 8;                 // n8 tiles of one O row
  static constexpr int kNTilesS = kKeysPerWarp / 8;             // n8 tiles of a warp's scores
  static_assert(kKeysPerWarp == 16, "one k16 step of P V per warp and tile");
  static_assert(kHeadDim % 16 == 0, "hdim is a multiple of the MMA k-step");
  // Byte offset, within its row, of 16-byte chunk `chunk` of a row r with r % 8 == row_key
  // (decode_plan.hpp's SmemLayout).
  static __device__ __forceinline__ uint32_t chunk_offset(int row_key, int chunk) {
    return static_cast<uint32_t>(kLayout == SmemLayout::swizzled ? (chunk ^ row_key) : chunk) * 16;
  }
  // Byte offset of 16-byte chunk `chunk` of shared-memory row `row`.
  static __device__ __forceinline__ uint32_t at(int row, int chunk) {
    return static_cast<uint32_t>(row) * kRowBytes + chunk_offset(row & 7, chunk);
  }
};

// Element offset (from K's or V's base) of key `key` (< seq_k) of kv head `kv_head` of sequence
// `batch`: contiguous, or through the block table (one read, one division by page_size).
template <KvAddressing kAddr>
__device__ __forceinline__ int64_t key_offset(const DecodeParams& p, int64_t batch, int kv_head, int key, int hdim) {
  if constexpr (kAddr == KvAddressing::contiguous) {
    return ((batch * p.kv_heads + kv_head) * static_cast<int64_t>(p.seq_k) + key) * hdim;
  } else {
    const int64_t page = __ldg(p.block_table + batch * p.pages_per_seq + key / p.page_size);
    return ((page * p.kv_heads + kv_head) * p.page_size + key % p.page_size) * hdim;
  }
}

// The key tiles of one CTA in order, from `tile` on: each next() gives the element offset of the
// tile's first key. Contiguous tiles are a fixed stride apart. With page_tiles the cursor keeps the
// tile's block-table slot and its place in the page, so that a tile costs one table read and no
// division (the division is done once, here). page_rows has no per-tile offset (load_kv_tile reads
// the table per row).
template <KvAddressing kAddr>
struct TileCursor {
  int64_t offset = 0;             // contiguous: the next tile's
  const int32_t* slot = nullptr;  // page_tiles: the next tile's block-table entry
  int in_page = 0;                // page_tiles: the next tile's place in its page
  __device__ TileCursor(const DecodeParams& p, int64_t batch, int kv_head, int tile, int hdim) {
    if constexpr (kAddr == KvAddressing::contiguous) {
      offset = key_offset<kAddr>(p, batch, kv_head, tile * kBlockN, hdim);
    } else if constexpr (kAddr == KvAddressing::page_tiles) {
      slot = p.block_table + batch * p.pages_per_seq + tile / tiles_per_page(p);
      in_page = tile % tiles_per_page(p);
    }
  }
  static __device__ __forceinline__ int tiles_per_page(const DecodeParams& p) {
    return static_cast<int>(static_cast<unsigned>(p.page_size) / kBlockN);
  }
  __device__ __forceinline__ int64_t next(const DecodeParams& p, int kv_head, int hdim) {
    if constexpr (kAddr == KvAddressing::contiguous) {
      const int64_t at = offset;
      offset += static_cast<int64_t>(kBlockN) * hdim;
      return at;
    } else if constexpr (kAddr == KvAddressing::page_tiles) {
      const int64_t page = __ldg(slot);
      const int64_t at = ((page * p.kv_heads + kv_head) * p.page_size + in_page * kBlockN) * hdim;
      if (++in_page == tiles_per_page(p)) {
        in_page = 0;
        ++slot;
      }
      return at;
    } else {
      return 0;
    }
  }
};

// cp.async of 16 bytes of the K/V stream, L1 bypassed, with L2's hint to fetch the whole 128-byte
// line on a miss (the stream reads every byte of it).
__device__ __forceinline__ void cp_async_16_stream(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

// K and V rows [n0, n0 + kBlockN) into one stage buffer; rows past seq_k become zeros. `base` is the
// element offset of key n0 (TileCursor); with page_rows every row's comes from the block table.
template <typename Tr, KvAddressing kAddr, typename T>
__device__ __forceinline__ void load_kv_tile(uint32_t s_k, uint32_t s_v, const T* k, const T* v,
                                             const DecodeParams& p, int64_t batch, int kv_head, int n0, int64_t base) {
  constexpr int kChunks = kBlockN * Tr::kChunksPerRow;
  constexpr int kHd = Tr::kChunksPerRow * 8;
  static_assert(kChunks % kThreads == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int i = 0; i < kChunks / kThreads; ++i) {
    const int chunk_id = i * kThreads + static_cast<int>(threadIdx.x);
    const int row = chunk_id / Tr::kChunksPerRow;
    const int chunk = chunk_id % Tr::kChunksPerRow;
    const int key = n0 + row;
    const bool valid = key < p.seq_k;
    int64_t offset = 0;
    if (valid) {
      if constexpr (kAddr == KvAddressing::page_rows)
        offset = key_offset<kAddr>(p, batch, kv_head, key, kHd);
      else
        offset = base + static_cast<int64_t>(row) * kHd;
    }
    const uint32_t dst = Tr::at(row, chunk);
    cp_async_16_stream(s_k + dst, k + offset + chunk * 8, valid ? 16 : 0);
    cp_async_16_stream(s_v + dst, v + offset + chunk * 8, valid ? 16 : 0);
  }
}

// A quantized cache's K and V rows [n0, n0 + kBlockN) as bytes into one stage of byte tiles (rows
// hdim bytes, chunks swizzled as frag::byte_tile_offset lays them out), and per token their scales (K's
// then V's, kBlockN each); rows past seq_k become zeros. `base` as in load_kv_tile (bytes are
// elements).
template <int kHeadDim, KvAddressing kAddr>
__device__ __forceinline__ void load_kv_tile_quant(uint32_t s_k, uint32_t s_v, uint32_t s_scale, const uint8_t* k,
                                                   const uint8_t* v, const DecodeParams& p, int64_t batch, int kv_head,
                                                   int n0, int64_t base) {
  constexpr int kChunksPerRow = kHeadDim / frag::kChunkBytes;
  constexpr int kChunks = kBlockN * kChunksPerRow;
  static_assert(kChunks % kThreads == 0 && kThreads == 2 * kBlockN, "every thread copies the same chunks");
  const auto row_offset = [&](int row) -> int64_t {
    if constexpr (kAddr == KvAddressing::page_rows)
      return key_offset<kAddr>(p, batch, kv_head, n0 + row, kHeadDim);
    else
      return base + static_cast<int64_t>(row) * kHeadDim;
  };
#pragma unroll
  for (int i = 0; i < kChunks / kThreads; ++i) {
    const int chunk_id = i * kThreads + static_cast<int>(threadIdx.x);
    const int row = chunk_id / kChunksPerRow, col = chunk_id % kChunksPerRow * frag::kChunkBytes;
    const bool valid = n0 + row < p.seq_k;
    const int64_t offset = valid ? row_offset(row) : 0;
    const uint32_t dst = frag::byte_tile_offset(kHeadDim, row, col);
    cp_async_16_stream(s_k + dst, k + offset + col, valid ? 16 : 0);
    cp_async_16_stream(s_v + dst, v + offset + col, valid ? 16 : 0);
  }
  if (p.kv_scale == core::KvScale::token) {
    // A thread per row and tensor: the scale of the row at element offset e is scales[e / hdim].
    const int row = static_cast<int>(threadIdx.x) % kBlockN;
    const bool is_v = static_cast<int>(threadIdx.x) >= kBlockN;
    const bool valid = n0 + row < p.seq_k;
    const int64_t index = valid ? row_offset(row) / kHeadDim : 0;
    cp_async_4(s_scale + static_cast<uint32_t>((is_v ? kBlockN : 0) + row) * 4, (is_v ? p.v_scale : p.k_scale) + index,
               valid ? 4 : 0);
  }
}

// Four stored bytes (E4M3 or int8) as two f16x2 registers: half2 (byte 0, byte 1) and half2 (byte 2,
// byte 3), the lower byte in the lower half. Every E4M3 and int8 value is exact in fp16.
template <core::KvDType kQuant>
__device__ __forceinline__ void half2_pairs(uint32_t bytes, uint32_t& lo, uint32_t& hi) {
  if constexpr (kQuant == core::KvDType::fp8_e4m3) {
    // One cvt.rn.f16x2.e4m3x2 per pair on sm_89 and newer.
    const __half2_raw a = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(bytes & 0xFFFFu), __NV_E4M3);
    const __half2_raw b = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(bytes >> 16), __NV_E4M3);
    lo = static_cast<uint32_t>(a.x) | (static_cast<uint32_t>(a.y) << 16);
    hi = static_cast<uint32_t>(b.x) | (static_cast<uint32_t>(b.y) << 16);
  } else {
    static_assert(kQuant == core::KvDType::int8, "fp8 E4M3 or int8");
    // 1152 + b in fp16 bits, less 1152: one prmt and one subtraction per pair.
    uint32_t a, b;
    frag::int8_as_biased_halves(bytes, a, b);
    const __half2 offset = __half2half2(__ushort_as_half(frag::kInt8HalfBiasBits));
    const __half2 ha = __hsub2(*reinterpret_cast<const __half2*>(&a), offset);
    const __half2 hb = __hsub2(*reinterpret_cast<const __half2*>(&b), offset);
    lo = *reinterpret_cast<const uint32_t*>(&ha);
    hi = *reinterpret_cast<const uint32_t*>(&hb);
  }
}

// A quantized cache's Q fragments (fp16 rows of s_q as Tr lays them out): A fragment of k-step ks of
// MMA tile mt in the head-dim order of frag::qk_dim, which the K bytes take too. The 16 bytes of a row
// at one chunk are words of two k-steps' fragments (rows quad_row and quad_row + 8 interleave in each),
// read a word at a time.
template <typename Tr, int kHeadDim, int kMTiles>
__device__ __forceinline__ void load_q_fragments_permuted(uint32_t (&q_frag)[kMTiles][kHeadDim / 16][4],
                                                          uint32_t s_q, int quad_row, int quad_col) {
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half)  // rows quad_row and quad_row + 8: a[half] and a[2 + half]
#pragma unroll
      for (int m = 0; m < kHeadDim / 32; ++m) {
        const int row = mt * kMmaRows + quad_row + 8 * half;
        const int chunk = frag::qk_dim(kHeadDim, quad_col, 2 * m, 0) / 8;  // 8 fp16 values per chunk
        const uint32_t at = s_q + Tr::at(row, chunk);
        q_frag[mt][2 * m][half] = fused::ld_shared_32(at);  // k-step 2 m, elements 0, 1
        q_frag[mt][2 * m][2 + half] = fused::ld_shared_32(at + 4);
        q_frag[mt][2 * m + 1][half] = fused::ld_shared_32(at + 8);
        q_frag[mt][2 * m + 1][2 + half] = fused::ld_shared_32(at + 12);
      }
}

// S = Q K^T over this warp's 16 keys of a quantized K tile: each lane reads kHeadDim / 4 bytes of key
// rows quad_row and quad_row + 8 (n8 tiles 0 and 1), converts each 32-bit word, one k-step's B
// fragment, in registers and runs the fp16 MMA. Row r + 8 of a byte tile lies 8 rows after row r
// (frag::byte_tile_offset keeps the swizzle of r and r + 8 alike), so the second key's address is the
// first's plus a constant.
template <core::KvDType kQuant, int kHeadDim, int kMTiles>
__device__ __forceinline__ void scores_from_bytes(float (&acc_s)[kMTiles][2][4],
                                                  const uint32_t (&q_frag)[kMTiles][kHeadDim / 16][4],
                                                  const unsigned char* k_tile, int warp, int quad_row, int quad_col) {
  constexpr int kReads = kHeadDim / 64;  // 16-byte reads per key row: four k-steps each
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int i = 0; i < kReads; ++i) {
      const uint4 raw = *reinterpret_cast<const uint4*>(
          k_tile + frag::k_lane_offset(kHeadDim, warp * kKeysPerWarp + quad_row, quad_col, i) + nt * 8 * kHeadDim);
      const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        uint32_t b0, b1;
        half2_pairs<kQuant>(words[w], b0, b1);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) mma_16816<__half>(acc_s[mt][nt], q_frag[mt][4 * i + w], b0, b1);
      }
    }
}

// O += P V over this warp's 16 keys of a quantized V tile, O's columns in frag::pv_dim's order: each
// lane reads its kHeadDim / 8 bytes (column quad_row of every n8 tile) of key rows 2t, 2t + 1, 2t + 8
// and 2t + 9 (t = quad_col), pairs the keys' bytes per tile with byte permutes and converts them.
template <core::KvDType kQuant, int kHeadDim, int kMTiles>
__device__ __forceinline__ void pv_from_bytes(float (&acc_o)[kMTiles][kHeadDim / 8][4], const uint32_t (&a)[kMTiles][4],
                                              const unsigned char* v_tile, int warp, int quad_row, int quad_col) {
  constexpr int kWords = kHeadDim / 8 / 4;  // 32-bit words of a lane's bytes of one V row
  uint32_t words[4][kWords];                // [e][word]: key frag::mma_k(quad_col, e)
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    // Keys 2t + 8 and 2t + 9 lie 8 rows after keys 2t and 2t + 1 (as in scores_from_bytes).
    const int row = warp * kKeysPerWarp + frag::mma_k(quad_col, e % 2);
    const unsigned char* src = v_tile + frag::v_lane_offset(kHeadDim, row, quad_row) + (e / 2) * 8 * kHeadDim;
    if constexpr (kWords == 4) {
      const uint4 r = *reinterpret_cast<const uint4*>(src);
      words[e][0] = r.x, words[e][1] = r.y, words[e][2] = r.z, words[e][3] = r.w;
    } else {
      static_assert(kWords == 2, "hdim 64 or 128");
      const uint2 r = *reinterpret_cast<const uint2*>(src);
      words[e][0] = r.x, words[e][1] = r.y;
    }
  }
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    // Byte j of word w is n8 tile 4 w + j. low_keys[p] and high_keys[p] pair the bytes 2p and 2p + 1
    // of keys (2t, 2t + 1) and of keys (2t + 8, 2t + 9); b[j][r]: tile 4 w + j's B register r.
    uint32_t low_keys[2], high_keys[2], b[4][2];
    frag::interleave_keys(words[0][w], words[1][w], low_keys[0], low_keys[1]);
    frag::interleave_keys(words[2][w], words[3][w], high_keys[0], high_keys[1]);
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      half2_pairs<kQuant>(low_keys[p], b[2 * p][0], b[2 * p + 1][0]);
      half2_pairs<kQuant>(high_keys[p], b[2 * p][1], b[2 * p + 1][1]);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) mma_16816<__half>(acc_o[mt][4 * w + j], a[mt], b[j][0], b[j][1]);
  }
}

// The last split of a row block: O of each of its rows = sum over splits of exp(LSE_s - LSE) O_s,
// LSE = log sum exp(LSE_s). A split that saw no key of a row has LSE_s = -inf and weight 0. The
// partials are read from L2 (ld.cg: other CTAs wrote them). `scratch` holds the weights, (splits,
// kBlockM) floats, and the rows' LSE.
template <typename T, int kHeadDim, int kBlockM, typename RowFn>
__device__ __forceinline__ void combine_splits(const DecodeParams& p, unsigned char* scratch, int row0,
                                               int packed_rows, RowFn canonical_row) {
  float* weight = reinterpret_cast<float*>(scratch);  // (splits, kBlockM): LSE_s, then the weight
  float* out_lse = weight + p.splits * kBlockM;        // (kBlockM)
  const int rows = min(kBlockM, packed_rows - row0);
  for (int i = static_cast<int>(threadIdx.x); i < p.splits * kBlockM; i += kThreads) {
    const int s = i / kBlockM, r = i % kBlockM;
    weight[i] = r < rows ? __ldcg(p.lse_partial + s * p.rows_total + canonical_row(row0 + r)) : -INFINITY;
  }
  __syncthreads();
  // A warp per row: its lanes take the splits in turn.
  const int lane = static_cast<int>(threadIdx.x) % 32;
  for (int r = static_cast<int>(threadIdx.x) / 32; r < rows; r += kWarps) {
    float m = -INFINITY;
    for (int s = lane; s < p.splits; s += 32) m = fmaxf(m, weight[s * kBlockM + r]);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    float sum = 0.f;
    if (m != -INFINITY)
      for (int s = lane; s < p.splits; s += 32) sum += __expf(weight[s * kBlockM + r] - m);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float inv_sum = sum > 0.f ? 1.f / sum : 0.f;
    for (int s = lane; s < p.splits; s += 32) {
      float& w = weight[s * kBlockM + r];
      w = m == -INFINITY ? 0.f : __expf(w - m) * inv_sum;
    }
    if (lane == 0) out_lse[r] = sum > 0.f ? m + logf(sum) : -INFINITY;
  }
  __syncthreads();
  // Four columns per thread and unit; the loads of several splits in flight at once.
  constexpr int kUnitsPerRow = kHeadDim / 4;
  for (int u = static_cast<int>(threadIdx.x); u < rows * kUnitsPerRow; u += kThreads) {
    const int r = u / kUnitsPerRow, col = (u % kUnitsPerRow) * 4;
    const int64_t row = canonical_row(row0 + r);
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
    for (int s = 0; s < p.splits; ++s) {
      const float w = weight[s * kBlockM + r];
      const float4 part = __ldcg(reinterpret_cast<const float4*>(p.o_partial + (s * p.rows_total + row) * kHeadDim + col));
      acc.x = fmaf(w, part.x, acc.x);
      acc.y = fmaf(w, part.y, acc.y);
      acc.z = fmaf(w, part.z, acc.z);
      acc.w = fmaf(w, part.w, acc.w);
    }
    T* dst = static_cast<T*>(p.o) + row * kHeadDim + col;
    *reinterpret_cast<uint2*>(dst) = make_uint2(pack2<T>(acc.x, acc.y), pack2<T>(acc.z, acc.w));
    if (col == 0) p.lse[row] = out_lse[r];
  }
}

template <typename T, int kHeadDim, int kMTiles, KvAddressing kAddr, SmemLayout kLayout,
          core::KvDType kQuant = core::KvDType::none>
__global__ void __launch_bounds__(kThreads, kQuant == core::KvDType::none ? 2 : kQuantCtasPerSm)
    decode_split_kernel(const DecodeParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  // cp.async and bf16 mma.sync need sm_80; the host side refuses older devices (unsupported_reason).
  __trap();
#else
  using Tr = DecodeTraits<kHeadDim, kMTiles, kLayout>;
  using TM = MmaType<T, kQuant>;
  constexpr bool kQuantized = kQuant != core::KvDType::none;
  constexpr int kPipe = kQuantized ? kStagesQuant : kStages;  // tiles in flight
  constexpr int kBlockM = Tr::kBlockM;
  constexpr uint32_t kRowBytes = Tr::kRowBytes;
  // Byte offsets in shared memory (decode_plan.hpp's smem_bytes and smem_bytes_quant): Q, then kPipe K
  // tiles and kPipe V tiles (in the dtype, or a quantized cache's bytes), then a quantized cache's
  // per-token scales (2 kBlockN floats per stage).
  constexpr uint32_t kKvTileBytes = kQuantized ? kBlockN * kHeadDim : Tr::kTileBytes;
  constexpr uint32_t kKOffset = kBlockM * kRowBytes;
  constexpr uint32_t kVOffset = kKOffset + kPipe * kKvTileBytes;
  constexpr uint32_t kScalesOffset = kVOffset + kPipe * kKvTileBytes;
  static_assert(!kQuantized || (kLayout == SmemLayout::swizzled && frag::byte_tile_hdim(kHeadDim)),
                "a quantized cache: Q rows hdim wide (smem_bytes_quant), byte tiles of hdim 64 or 128");

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const uint32_t s_q = smem_address(smem_raw);                    // (kBlockM, D + pad)
  const uint32_t s_k = s_q + kKOffset;                            // (kPipe, kBlockN, row)
  const uint32_t s_v = s_q + kVOffset;                            // (kPipe, kBlockN, row)

  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int quad_row = lane / 4;
  const int quad_col = lane % 4;

  // Splits of one (batch, kv head, row block) are adjacent in the grid.
  int64_t cta = blockIdx.x;
  const int split = static_cast<int>(cta % p.splits);
  cta /= p.splits;
  const int m_block = static_cast<int>(cta % p.m_blocks);
  cta /= p.m_blocks;
  const int kv_head = static_cast<int>(cta % p.kv_heads);
  const int64_t batch = cta / p.kv_heads;
  const int row0 = m_block * kBlockM;              // first packed row of this CTA
  const int packed_rows = p.seq_q * p.group;

  const int tile_begin = p.first_tile + split * p.tiles_per_split;
  const int tile_end = min(p.first_tile + p.tiles, tile_begin + p.tiles_per_split);
  const int n_tiles = tile_end - tile_begin;       // >= 1: splits are non-empty by construction

  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  // A quantized cache's scales that are one per tensor or head: K's folds into the softmax scale, V's
  // multiplies O at the end.
  float scale_log2 = p.scale_log2, v_scalar = 1.f;
  if constexpr (kQuantized) {
    if (p.kv_scale != core::KvScale::token) {
      const int index = p.kv_scale == core::KvScale::head ? kv_head : 0;
      scale_log2 *= __ldg(p.k_scale + index);
      v_scalar = __ldg(p.v_scale + index);
    }
  }

  // Canonical (batch, head, position) row of packed row r: position r / group, head kv_head * group + r % group.
  auto canonical_row = [&](int r) {
    const int position = r / p.group;
    const int head = kv_head * p.group + r % p.group;
    return (batch * p.heads + head) * p.seq_q + position;
  };

  // Prologue: Q with the first tile as one copy group, then tiles 1 .. kPipe - 2, one group each.
  for (int c = static_cast<int>(threadIdx.x); c < kBlockM * Tr::kChunksPerRow; c += kThreads) {
    const int r = c / Tr::kChunksPerRow, chunk = c % Tr::kChunksPerRow;
    const bool valid = row0 + r < packed_rows;
    const T* src = valid ? q + canonical_row(row0 + r) * kHeadDim + chunk * 8 : q;
    if constexpr (std::is_same_v<T, TM>) {
      cp_async_16(s_q + Tr::at(r, chunk), src, valid ? 16 : 0);
    } else {
      // bf16 Q for fp16 MMAs: converted on the way in (the first barrier of the loop orders it).
      uint4 raw = valid ? *reinterpret_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
      const auto* in = reinterpret_cast<const __nv_bfloat162*>(&raw);
      uint32_t out[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __bfloat1622float2(in[j]);
        out[j] = pack2<__half>(f.x, f.y);
      }
      *reinterpret_cast<uint4*>(smem_raw + Tr::at(r, chunk)) = make_uint4(out[0], out[1], out[2], out[3]);
    }
  }
  TileCursor<kAddr> tiles(p, batch, kv_head, tile_begin, kHeadDim);
  const auto load_tile = [&](int stage, int tile) {
    if constexpr (kQuantized)
      load_kv_tile_quant<kHeadDim, kAddr>(s_k + stage * kKvTileBytes, s_v + stage * kKvTileBytes,
                                          s_q + kScalesOffset + stage * 2 * kBlockN * 4,
                                          static_cast<const uint8_t*>(p.k), static_cast<const uint8_t*>(p.v), p, batch,
                                          kv_head, tile * kBlockN, tiles.next(p, kv_head, kHeadDim));
    else
      load_kv_tile<Tr, kAddr>(s_k + stage * kKvTileBytes, s_v + stage * kKvTileBytes, k, v, p, batch, kv_head,
                              tile * kBlockN, tiles.next(p, kv_head, kHeadDim));
  };
#pragma unroll
  for (int stage = 0; stage < kPipe - 1; ++stage) {
    if (stage < n_tiles) load_tile(stage, tile_begin + stage);
    cp_async_commit();
  }

  // Per-lane ldmatrix addresses (K and V in the dtype): Q rows of the MMA tile, and this warp's 16 keys
  // of a K or V buffer.
  // Step i (a k-step of Q K^T, a pair of n8 tiles of P V) reads chunk 2 i + half of the lane's row:
  // padded rows put it 32 i bytes past the lane's address, swizzled rows at (2 i + half) ^ (row % 8),
  // and every lane's row % 8 is lane % 8.
  constexpr bool kSwizzled = kLayout == SmemLayout::swizzled;
  const int q_half = lane / 16, k_half = (lane / 8) % 2, v_half = lane / 16, row_key = lane & 7;
  const uint32_t q_lane = s_q + (lane & 15) * kRowBytes + (kSwizzled ? 0 : q_half * 16);
  const uint32_t k_lane =
      s_k + (warp * kKeysPerWarp + (lane / 16) * 8 + (lane & 7)) * kRowBytes + (kSwizzled ? 0 : k_half * 16);
  const uint32_t v_lane =
      s_v + (warp * kKeysPerWarp + ((lane / 8) % 2) * 8 + (lane & 7)) * kRowBytes + (kSwizzled ? 0 : v_half * 16);
  const auto step = [&](int i, int half) -> uint32_t {
    return kSwizzled ? Tr::chunk_offset(row_key, 2 * i + half) : static_cast<uint32_t>(i * 32);
  };

  uint32_t q_frag[kMTiles][Tr::kKSteps][4];
  float acc_o[kMTiles][Tr::kNTilesO][4];  // (16 * kMTiles rows, D) in C-fragment layout
  float row_max[kMTiles * 2];             // [2 mt + half]: rows quad_row and quad_row + 8
  float row_sum[kMTiles * 2];             // this lane's partial sums; quad-reduced at the merge
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < Tr::kNTilesO; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] = 0.f;
    row_max[2 * mt] = row_max[2 * mt + 1] = -INFINITY;
    row_sum[2 * mt] = row_sum[2 * mt + 1] = 0.f;
  }

  // The keys [key_begin, key_end) of each row this lane holds (core/shape.hpp, aligned position
  // pos = position + seq_k - seq_q): end seq_k, or pos + 1 with the causal mask, or pos + window with
  // a window alone; begin pos - window + 1 with a window, else 0. Computed in the tiles that need a
  // mask only, so that no register holds them through the loop.
  const auto key_range = [&](int i, int& key_begin, int& key_end) {
    const int r = row0 + (i / 2) * kMmaRows + quad_row + (i % 2) * 8;
    const int pos = min(r, packed_rows - 1) / p.group + p.seq_k - p.seq_q;
    const int end = p.causal ? pos + 1 : p.window > 0 ? pos + p.window : p.seq_k;
    key_end = min(p.seq_k, max(0, end));
    key_begin = p.window > 0 ? pos - p.window + 1 : 0;
  };
  // Tiles starting at or past mask_from may need a mask (the first position's causal or window limit,
  // or the end of the keys); with a window so may tiles starting before mask_below (the last
  // position's window start).
  const int first_end = p.causal ? p.seq_k - p.seq_q + 1 : p.window > 0 ? p.seq_k - p.seq_q + p.window : p.seq_k;
  const int mask_from = min(first_end, p.seq_k) - kBlockN + 1;
  const int mask_below = p.window > 0 ? p.seq_k - p.window : 0;

  for (int it = 0; it < n_tiles; ++it) {
    // Tile `it` is the oldest copy group in flight; after the barrier every warp is also done with
    // tile it - 1, whose buffer now takes tile it + kPipe - 1.
    cp_async_wait<kPipe - 2>();
    __syncthreads();
    if (it == 0) {
      if constexpr (kQuantized) {
        load_q_fragments_permuted<Tr, kHeadDim, kMTiles>(q_frag, s_q, quad_row, quad_col);
      } else {
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
          for (int ks = 0; ks < Tr::kKSteps; ++ks)
            ldmatrix_x4(q_frag[mt][ks], q_lane + mt * kMmaRows * kRowBytes + step(ks, q_half));
      }
    }
    {
      const int next = it + kPipe - 1;
      if (next < n_tiles) load_tile(next % kPipe, tile_begin + next);
      cp_async_commit();
    }
    const int stage = it % kPipe;
    const uint32_t buffer = stage * kKvTileBytes;  // this tile's K and V, from s_k and s_v
    // A quantized cache's per-token scales of this tile: K's kBlockN, then V's.
    const float* tile_scales = reinterpret_cast<const float*>(smem_raw + kScalesOffset) + stage * 2 * kBlockN;

    // S = Q K^T for this warp's keys.
    float acc_s[kMTiles][Tr::kNTilesS][4];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.f;
    if constexpr (kQuantized) {
      scores_from_bytes<kQuant, kHeadDim, kMTiles>(acc_s, q_frag, smem_raw + kKOffset + buffer, warp, quad_row,
                                                   quad_col);
    } else {
#pragma unroll
      for (int ks = 0; ks < Tr::kKSteps; ++ks) {
        uint32_t b[4];
        ldmatrix_x4(b, k_lane + buffer + step(ks, k_half));
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_16816<TM>(acc_s[mt][0], q_frag[mt][ks], b[0], b[1]);
          mma_16816<TM>(acc_s[mt][1], q_frag[mt][ks], b[2], b[3]);
        }
      }
    }
    // Per-token scales: each score (or P) times its key's scale, scales[key] of this tile (C fragment:
    // key nt * 8 + 2 quad_col + e % 2 of this warp's).
    const bool token_scales = kQuantized && p.kv_scale == core::KvScale::token;
    const auto scale_by_key = [&](const float* scales) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] *= scales[warp * kKeysPerWarp + nt * 8 + quad_col * 2 + e % 2];
    };
    if (token_scales) scale_by_key(tile_scales);  // K's

    const int n0 = (tile_begin + it) * kBlockN;
    if (n0 >= mask_from || n0 < mask_below) {
      const int key0 = n0 + warp * kKeysPerWarp + quad_col * 2;
#pragma unroll
      for (int i = 0; i < kMTiles * 2; ++i) {
        int key_begin, key_end;
        key_range(i, key_begin, key_end);
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int key = key0 + nt * 8 + e;
            if (key >= key_end || key < key_begin) acc_s[i / 2][nt][(i % 2) * 2 + e] = -INFINITY;
          }
      }
    }

    online_softmax_tile(acc_s, acc_o, row_max, row_sum, scale_log2);
    if (token_scales) scale_by_key(tile_scales + kBlockN);  // V's, after the row sums took P

    // O += P V over this warp's 16 keys: its two n8 score tiles are one k16 A fragment.
    uint32_t a[kMTiles][4];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      a[mt][0] = pack2<TM>(acc_s[mt][0][0], acc_s[mt][0][1]);
      a[mt][1] = pack2<TM>(acc_s[mt][0][2], acc_s[mt][0][3]);
      a[mt][2] = pack2<TM>(acc_s[mt][1][0], acc_s[mt][1][1]);
      a[mt][3] = pack2<TM>(acc_s[mt][1][2], acc_s[mt][1][3]);
    }
    if constexpr (kQuantized) {
      pv_from_bytes<kQuant, kHeadDim, kMTiles>(acc_o, a, smem_raw + kVOffset + buffer, warp, quad_row, quad_col);
    } else {
#pragma unroll
      for (int dt2 = 0; dt2 < Tr::kNTilesO / 2; ++dt2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_lane + buffer + step(dt2, v_half));
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_16816<TM>(acc_o[mt][2 * dt2], a[mt], b[0], b[1]);
          mma_16816<TM>(acc_o[mt][2 * dt2 + 1], a[mt], b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the K/V buffers: the merge reuses them

  // Merge the warps: each writes its row max, row sum and O rows; then each row's weights follow.
  // Q's fragments are in registers: a quantized cache's merge, short of room, may take Q's rows too.
  constexpr uint32_t kMergeOffset = kQuantized ? 0 : kKOffset;
  float* merge_o = reinterpret_cast<float*>(smem_raw + kMergeOffset);           // (kWarps, kBlockM, D)
  float* merge_max = merge_o + kWarps * kBlockM * kHeadDim;                     // (kWarps, kBlockM)
  float* merge_sum = merge_max + kWarps * kBlockM;                              // (kWarps, kBlockM)
  float* row_weight = merge_sum + kWarps * kBlockM;                             // (kWarps, kBlockM)
  float* row_lse = row_weight + kWarps * kBlockM;                               // (kBlockM)
  float* row_inv_sum = row_lse + kBlockM;                                       // (kBlockM)
#pragma unroll
  for (int i = 0; i < kMTiles * 2; ++i) {
    float sum = row_sum[i];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int r = (i / 2) * kMmaRows + quad_row + (i % 2) * 8;
    if (quad_col == 0) {
      merge_max[warp * kBlockM + r] = row_max[i];
      merge_sum[warp * kBlockM + r] = sum;
    }
    float* o_row = merge_o + (warp * kBlockM + r) * kHeadDim;
    if constexpr (kQuantized) {
      // Column c of n8 tile j is head dim frag::pv_dim(j, c): this lane's columns 2 quad_col + e of the
      // tiles are kNTilesO consecutive dims each, written back in their natural order.
#pragma unroll
      for (int e = 0; e < 2; ++e)
#pragma unroll
        for (int j = 0; j < Tr::kNTilesO; j += 4) {
          const auto& o = acc_o[i / 2];
          const int h = (i % 2) * 2 + e;
          *reinterpret_cast<float4*>(o_row + frag::pv_dim(kHeadDim, j, 2 * quad_col + e)) =
              make_float4(o[j][h], o[j + 1][h], o[j + 2][h], o[j + 3][h]);
        }
    } else {
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesO; ++nt) {
        const float2 pair = make_float2(acc_o[i / 2][nt][(i % 2) * 2], acc_o[i / 2][nt][(i % 2) * 2 + 1]);
        *reinterpret_cast<float2*>(o_row + nt * 8 + quad_col * 2) = pair;
      }
    }
  }
  __syncthreads();
  if (threadIdx.x < kBlockM) {
    const int r = static_cast<int>(threadIdx.x);
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m = fmaxf(m, merge_max[w * kBlockM + r]);
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float wm = merge_max[w * kBlockM + r];
      const float weight = wm == -INFINITY ? 0.f : exp2f((wm - m) * scale_log2);
      row_weight[w * kBlockM + r] = weight;
      sum += weight * merge_sum[w * kBlockM + r];
    }
    row_inv_sum[r] = sum > 0.f ? v_scalar / sum : 0.f;
    row_lse[r] = sum > 0.f ? (m * scale_log2 + log2f(sum)) * kLn2 : -INFINITY;
  }
  __syncthreads();

  const bool final_output = p.splits == 1;
  for (int idx = static_cast<int>(threadIdx.x) * 2; idx < kBlockM * kHeadDim; idx += kThreads * 2) {
    const int r = idx / kHeadDim, col = idx % kHeadDim;
    if (row0 + r >= packed_rows) continue;
    float o0 = 0.f, o1 = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float weight = row_weight[w * kBlockM + r];
      const float2 part = *reinterpret_cast<const float2*>(merge_o + (w * kBlockM + r) * kHeadDim + col);
      o0 = fmaf(weight, part.x, o0);
      o1 = fmaf(weight, part.y, o1);
    }
    o0 *= row_inv_sum[r];
    o1 *= row_inv_sum[r];
    const int64_t row = canonical_row(row0 + r);
    if (final_output) {
      *reinterpret_cast<uint32_t*>(static_cast<T*>(p.o) + row * kHeadDim + col) = pack2<T>(o0, o1);
      if (col == 0) p.lse[row] = row_lse[r];
    } else {
      const int64_t part_row = split * p.rows_total + row;
      *reinterpret_cast<float2*>(p.o_partial + part_row * kHeadDim + col) = make_float2(o0, o1);
      if (col == 0) p.lse_partial[part_row] = row_lse[r];
    }
  }
  if (final_output) return;

  // Count this split in; the last of the row block's splits combines them.
  __shared__ int last_split;
  __threadfence();  // this CTA's partials reach L2 before its arrival is counted
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t* counter = p.split_counters + blockIdx.x / p.splits;
    const bool last = atomicAdd(counter, 1u) + 1u == static_cast<uint32_t>(p.splits);
    if (last) atomicExch(counter, 0u);  // every split of this call has counted: ready for the next call
    last_split = last;
  }
  __syncthreads();
  if (!last_split) return;
  __threadfence();
  combine_splits<T, kHeadDim, kBlockM>(p, smem_raw + kMergeOffset, row0, packed_rows, canonical_row);
#endif
}

}  // namespace attnprof::kernels::decode
