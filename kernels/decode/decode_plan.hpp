// The decode kernel's work plan, as pure constexpr functions: the kernel instantiates the tile
// shapes at compile time, the host picks the split count and grid from them, and all of it is
// unit-tested on the host (tests/kernels/decode/test_decode_plan.cpp) without a CUDA runtime.
//
// Work split (flash-decoding with grouped-query packing):
//   rows     the query heads of one GQA group and the seq_q positions (1-16, speculative decoding)
//            are packed into the MMA's M dimension: packed row r = position * group + head_in_group,
//            so one CTA reads a kv head's K and V once for the whole group.
//   window   with a sliding window only the key tiles from the first one a query position sees to the
//            last are streamed (first_key_tile); the splits cut that range.
//   splits   the keys of each sequence are cut into kv_splits contiguous ranges of whole key tiles;
//            every (batch, kv head, row block, split) is one CTA, so the grid fills the GPU at any
//            batch. Each split writes its O (normalised) and LSE in fp32 to the workspace and counts
//            itself on its row block's counter; the last split to arrive combines them by their LSE,
//            in the same launch. With one split the CTA writes O directly.
//   warps    inside a CTA each of the kWarps warps takes a quarter of every key tile (16 keys) with
//            its own online-softmax state; the warps merge through shared memory at the end.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace attnprof::kernels::decode {

constexpr int kMmaRows = 16;         // m16n8k16
constexpr int kBlockN = 64;          // keys per K/V tile
constexpr int kWarps = 4;            // each warp owns kBlockN / kWarps keys of every tile
constexpr int kThreads = kWarps * 32;
constexpr int kKeysPerWarp = kBlockN / kWarps;
constexpr int kStages = 3;           // K/V tiles in flight through cp.async
// A quantized cache's byte tiles of K and V: three in flight while one is read. Four stages take 70 KB
// at hdim 128 (smem_bytes_quant), and at two MMA tiles the warps' merge needs that much room
// (merge_fits_quant).
constexpr int kStagesQuant = 4;
// CTAs of a quantized cache resident on one SM, as for the dtype's cache: two (launch bounds cap
// registers at 255; no spills). The split plan sees that many slots per SM (plan_for in decode.cu): at
// batch 64 and 8k keys its 512 CTAs then fill two even waves with one split, where three slots per SM
// made it cut the keys in three and pay each split's fixed cost and the combine (H200, b64 h32/8 8k, fp8
// with a scale per kv head: 249 us against 273; reports/h200-kv-quant-b64 and h200-kv-quant).
constexpr int kQuantCtasPerSm = 2;
constexpr int kSmemPadElems = 8;     // 16 bytes per shared-memory row: conflict-free ldmatrix
constexpr int kMaxSeqQ = 16;         // speculative decoding: up to 16 query positions
constexpr int kMaxMTiles = 2;        // 16-row MMA tiles per CTA (registers: O is 64 floats per tile)
constexpr int kMaxSplits = 128;
// A split streams at least this many key tiles: fewer and the fixed cost of a CTA (Q load, warp
// merge, the partial write and its combine) outweighs its share of the stream.
constexpr int kMinTilesPerSplit = 2;
// The split heuristic's cost model (choose_splits), in units of the time one SM takes to stream one
// K/V tile at its share of the HBM bandwidth (about 1 us for 32 KB on the H200): a CTA's fixed cost
// (Q load, pipeline fill, warp merge, the partial write) and, once the keys are split, the combine
// by the last split of each row block. Fitted to H200 sweeps over kv_splits (docs/kernels.md).
constexpr double kCtaFixedTiles = 2.0;
constexpr double kCombineTiles = 1.5;
// How the kernel finds the rows of a key tile, a compile-time choice: contiguous; page_tiles (pages of
// a multiple of kBlockN keys: every tile lies in one page, one block-table read per tile, its rows at
// a fixed stride); page_rows (smaller pages: one block-table read per row).
enum class KvAddressing { contiguous, page_tiles, page_rows };
constexpr KvAddressing addressing(int64_t page_size) {
  if (page_size <= 0) return KvAddressing::contiguous;
  return page_size % kBlockN == 0 ? KvAddressing::page_tiles : KvAddressing::page_rows;
}

constexpr bool supported_hdim(int hdim) { return hdim == 64 || hdim == 128; }

// Packed rows of one (batch, kv head): seq_q positions times the group's query heads.
constexpr int64_t packed_rows(int64_t seq_q, int64_t group) { return seq_q * group; }

// 16-row MMA tiles per CTA: one when the packed rows fit in 16 (decode with groups up to 16), else two.
constexpr int m_tiles(int64_t rows) { return rows <= kMmaRows ? 1 : kMaxMTiles; }
constexpr int block_m(int mt) { return kMmaRows * mt; }
constexpr int64_t m_blocks(int64_t rows, int mt) { return (rows + block_m(mt) - 1) / block_m(mt); }

constexpr int64_t key_tiles(int64_t seq_k) { return (seq_k + kBlockN - 1) / kBlockN; }

// The first key tile any query position sees: 0, or with a window W the tile of the first position's
// first key, seq_k - seq_q - W + 1 (core/shape.hpp; the last position sees up to seq_k - 1 with or
// without the causal mask, so the range always ends at the last tile).
constexpr int64_t first_key_tile(int64_t seq_q, int64_t seq_k, int64_t window) {
  if (window <= 0) return 0;
  const int64_t first_key = seq_k - seq_q - window + 1;
  return first_key > 0 ? first_key / kBlockN : 0;
}

// How Q, K and V rows sit in shared memory. swizzled (the default): rows hdim wide, the 16-byte chunk
// c of row r stored at chunk c ^ (r % 8), so that ldmatrix is conflict-free and each 128-byte line of
// the K/V stream lands in one aligned 128-byte segment of shared memory: one L2 request per line.
// padded: rows hdim + kSmemPadElems wide (conflict-free too, but each row shifts the lines by 16 bytes,
// which splits most of them into two requests). Chosen by ATTNPROF_DECODE_CONFIG (parse_layout).
enum class SmemLayout { padded, swizzled };

constexpr int row_elems(int hdim, SmemLayout layout) {
  return layout == SmemLayout::padded ? hdim + kSmemPadElems : hdim;
}

// Shared memory of one CTA: Q (block_m rows) and kStages K and V tiles. The warps' merge reuses the
// K/V buffers.
constexpr size_t smem_bytes(int mt, int hdim, int elem_bytes, SmemLayout layout = SmemLayout::swizzled) {
  return static_cast<size_t>(block_m(mt) + 2 * kStages * kBlockN) * row_elems(hdim, layout) * elem_bytes;
}
// A quantized cache's CTA (decode_kernel.cuh): Q in fp16 (swizzled rows, hdim wide), then kStagesQuant
// byte tiles of K and of V (kBlockN rows of hdim bytes), and their per-token scales (2 kBlockN floats
// per stage). The bytes go from shared memory straight to registers: no fp16 copy of K or V.
constexpr size_t smem_bytes_quant(int mt, int hdim) {
  return static_cast<size_t>(block_m(mt)) * hdim * 2 +
         static_cast<size_t>(kStagesQuant) * kBlockN * (2 * static_cast<size_t>(hdim) + 2 * sizeof(float));
}
// What the merge needs after Q: every warp's O rows (fp32), row max, row sum and weight, and per row
// the LSE and 1 / sum.
constexpr size_t merge_bytes(int mt, int hdim) {
  return (static_cast<size_t>(kWarps) * block_m(mt) * (hdim + 3) + 2 * block_m(mt)) * sizeof(float);
}
constexpr bool merge_fits(int hdim, SmemLayout layout) {
  return merge_bytes(kMaxMTiles, hdim) <=
         smem_bytes(kMaxMTiles, hdim, 2, layout) - static_cast<size_t>(block_m(kMaxMTiles)) * row_elems(hdim, layout) * 2;
}
// A quantized cache's merge may reuse Q's rows too (decode_kernel.cuh).
constexpr bool merge_fits_quant(int hdim) {
  return merge_bytes(1, hdim) <= smem_bytes_quant(1, hdim) &&
         merge_bytes(kMaxMTiles, hdim) <= smem_bytes_quant(kMaxMTiles, hdim);
}
static_assert(merge_fits_quant(128) && merge_fits_quant(64), "a quantized cache's merge fits in its shared memory");
static_assert(smem_bytes_quant(1, 128) * kQuantCtasPerSm <= 227 * 1024 &&
                  smem_bytes_quant(kMaxMTiles, 128) * kQuantCtasPerSm <= 227 * 1024,
              "the resident quantized CTAs fit in an H100/H200 SM's shared memory");
static_assert(merge_fits(128, SmemLayout::padded) && merge_fits(64, SmemLayout::padded) &&
                  merge_fits(128, SmemLayout::swizzled) && merge_fits(64, SmemLayout::swizzled),
              "the merge fits in the K/V buffers");

// ATTNPROF_DECODE_CONFIG: unset, "" or "swizzled" -> swizzled; "padded"; else nullopt.
constexpr std::optional<SmemLayout> parse_layout(std::string_view text) {
  if (text.empty() || text == "swizzled") return SmemLayout::swizzled;
  if (text == "padded") return SmemLayout::padded;
  return std::nullopt;
}
constexpr std::string_view to_string(SmemLayout layout) {
  return layout == SmemLayout::padded ? "padded" : "swizzled";
}

// Key tiles each split takes (the last split may take fewer); splits are whole tiles.
constexpr int64_t tiles_per_split(int64_t tiles, int64_t splits) {
  return splits <= 1 ? tiles : (tiles + splits - 1) / splits;
}
// The number of non-empty splits a request for `splits` gives (e.g. 64 tiles in 3 -> 22+22+20 = 3,
// 10 tiles in 4 -> 3+3+3+1 = 4, 10 in 6 -> 2 x 5 = 5).
constexpr int64_t effective_splits(int64_t tiles, int64_t splits) {
  const int64_t per = tiles_per_split(tiles, splits);
  return per == 0 ? 1 : (tiles + per - 1) / per;
}

// The split count for a shape on a device with `sms` SMs: `ctas` = batch * kv_heads * m_blocks CTAs
// per split. The stream is memory-bound and one CTA per SM already draws that SM's share of the
// bandwidth, so a split count s costs the busiest SM's work: ceil(ctas * s / sms) CTAs of
// tiles_per_split tiles plus kCtaFixedTiles each, plus kCombineTiles when s > 1. The cheapest s wins
// (the smallest of equals). Capped so every split streams at least kMinTilesPerSplit tiles, and at
// kMaxSplits; only counts with no empty split are candidates. A paged cache streams as fast as a
// contiguous one at the same split count (within 3.4% on the H200, docs/kernels.md), so the model is
// the same for both.
constexpr double split_cost(int64_t ctas, int64_t tiles, int64_t sms, int64_t s) {
  const int64_t per_sm = (ctas * s + sms - 1) / sms;
  return static_cast<double>(per_sm) * (static_cast<double>(tiles_per_split(tiles, s)) + kCtaFixedTiles) +
         (s > 1 ? kCombineTiles : 0.0);
}
constexpr int64_t choose_splits(int64_t ctas, int64_t tiles, int64_t sms) {
  if (ctas <= 0 || tiles <= 0 || sms <= 0) return 1;
  const int64_t by_tiles = tiles / kMinTilesPerSplit;
  const int64_t cap = by_tiles < 1 ? 1 : (by_tiles < kMaxSplits ? by_tiles : kMaxSplits);
  int64_t best = 1;
  for (int64_t s = 2; s <= cap; ++s)
    if (effective_splits(tiles, s) == s && split_cost(ctas, tiles, sms, s) < split_cost(ctas, tiles, sms, best) - 1e-9)
      best = s;
  return best;
}

// The whole launch plan of one call.
struct Plan {
  int mt = 1;                 // 16-row MMA tiles per CTA
  int64_t rows = 0;           // packed rows per (batch, kv head)
  int64_t m_blocks = 0;       // row blocks per (batch, kv head)
  int64_t first_tile = 0;     // first key tile streamed (a window skips the ones before it)
  int64_t tiles = 0;          // key tiles streamed per sequence, from first_tile on
  int64_t splits = 1;         // effective split count
  int64_t tiles_per_split = 0;
  int64_t ctas = 0;           // CTAs of the launch
  int64_t combine_rows = 0;   // query rows whose splits are combined (0: one split, nothing to combine)
  int64_t row_blocks = 0;     // (batch, kv head, row block) groups: one arrival counter each when split
};

// requested_splits: the shape's kv_splits (0 = choose_splits); sms: the device's SM count; window: the
// shape's (0 = none).
constexpr Plan plan(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_k,
                    int64_t requested_splits, int64_t sms, int64_t window = 0) {
  Plan p;
  const int64_t group = heads / kv_heads;
  p.rows = packed_rows(seq_q, group);
  p.mt = m_tiles(p.rows);
  p.m_blocks = m_blocks(p.rows, p.mt);
  p.first_tile = first_key_tile(seq_q, seq_k, window);
  p.tiles = key_tiles(seq_k) - p.first_tile;
  const int64_t base = batch * kv_heads * p.m_blocks;
  const int64_t wanted = requested_splits > 0 ? requested_splits : choose_splits(base, p.tiles, sms);
  p.splits = effective_splits(p.tiles, wanted < p.tiles ? wanted : p.tiles);
  p.tiles_per_split = tiles_per_split(p.tiles, p.splits);
  p.ctas = base * p.splits;
  p.combine_rows = p.splits > 1 ? batch * heads * seq_q : 0;
  p.row_blocks = base;
  return p;
}

// Workspace of a split plan: per split, O (fp32, hdim wide) and LSE (fp32) of every query row, then
// one 32-bit arrival counter per row block. The counters start at zero (the testbed zeroes a
// workspace when it allocates it) and the last split of each row block sets its counter back to zero.
constexpr size_t partials_bytes(const Plan& p, int64_t hdim) {
  return static_cast<size_t>(p.splits * p.combine_rows) * static_cast<size_t>(hdim + 1) * sizeof(float);
}
constexpr size_t workspace_bytes(const Plan& p, int64_t hdim) {
  return p.splits > 1 ? partials_bytes(p, hdim) + static_cast<size_t>(p.row_blocks) * sizeof(uint32_t) : 0;
}

}  // namespace attnprof::kernels::decode
