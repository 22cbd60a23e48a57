// Host-side checks of the decode kernel's plan (kernels/decode/decode_plan.hpp) and of the paged KV
// cache's block table (kernels/common/paged.hpp): splits cover every key tile exactly once, the
// heuristic fills the GPU's wave, and the shuffled table is a permutation. No CUDA runtime needed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>

#include "core/shape.hpp"
#include "kernels/common/paged.hpp"
#include "kernels/decode/decode_plan.hpp"

namespace dec = attnprof::kernels::decode;
namespace core = attnprof::core;

namespace {
constexpr int64_t kH200Sms = 132;
constexpr size_t kSmemPerSmBytes = 228 * 1024;
constexpr size_t kReservedPerCtaBytes = 1024;
}  // namespace

TEST_CASE("decode tiles fit two CTAs per SM at hdim 128 and the merge fits in the K/V buffers") {
  for (int mt : {1, dec::kMaxMTiles}) {
    INFO("m-tiles " << mt);
    CHECK(2 * (dec::smem_bytes(mt, 128, 2) + kReservedPerCtaBytes) <= kSmemPerSmBytes);
    CHECK(dec::merge_bytes(mt, 128) + dec::block_m(mt) * (128 + dec::kSmemPadElems) * 2 <=
          dec::smem_bytes(mt, 128, 2, dec::SmemLayout::padded));
  }
  CHECK(dec::m_tiles(1) == 1);
  CHECK(dec::m_tiles(16) == 1);   // decode with 16 query heads per kv head: one MMA tile
  CHECK(dec::m_tiles(17) == 2);
  CHECK(dec::m_blocks(dec::packed_rows(16, 8), 2) == 4);  // 16 positions x 8 heads = 128 rows
}

TEST_CASE("a quantized cache's CTA: Q in fp16 and byte stages only, its resident CTAs fit an SM, the merge fits") {
  // hdim 128, one m-tile: Q 16 x 128 fp16, then kStagesQuant stages of K and V bytes (64 x 128 each)
  // and 2 x 64 float scales: no fp16 copy of K or V.
  CHECK(dec::smem_bytes_quant(1, 128) == 16u * 128 * 2 + dec::kStagesQuant * (2u * 64 * 128 + 2 * 64 * 4));
  CHECK(dec::smem_bytes_quant(2, 64) == 32u * 64 * 2 + dec::kStagesQuant * (2u * 64 * 64 + 2 * 64 * 4));
  CHECK(dec::kStagesQuant >= 3);  // two tiles in flight while one is read
  for (int hdim : {64, 128})
    for (int mt : {1, dec::kMaxMTiles}) {
      INFO("hdim " << hdim << " m-tiles " << mt);
      const size_t per_cta = dec::smem_bytes_quant(mt, hdim) + kReservedPerCtaBytes;
      CHECK(static_cast<size_t>(dec::kQuantCtasPerSm) * per_cta <= kSmemPerSmBytes);
      CHECK(dec::merge_bytes(mt, hdim) <= dec::smem_bytes_quant(mt, hdim));  // the merge takes Q's rows too
      // Registers: the launch bounds' CTAs per SM leave each thread 255.
      CHECK(dec::kQuantCtasPerSm * dec::kThreads * 255 <= 65536);
    }
  CHECK(dec::merge_fits_quant(64));
  CHECK(dec::merge_fits_quant(128));
}

TEST_CASE("a quantized cache at batch 64, 8k keys: one split, its 512 CTAs two even waves of the H200's slots") {
  // The plan sees kQuantCtasPerSm slots per SM (decode.cu's plan_for).
  const dec::Plan p = dec::plan(64, 32, 8, 1, 8192, 0, kH200Sms * dec::kQuantCtasPerSm);
  CHECK(p.splits == 1);
  CHECK(p.ctas == 512);
  CHECK(p.ctas <= 2 * kH200Sms * dec::kQuantCtasPerSm);
}

TEST_CASE("splits are whole key tiles, none empty, covering every tile once") {
  for (int64_t tiles : {1, 2, 3, 10, 64, 513, 2048})
    for (int64_t requested : {1, 2, 3, 4, 6, 7, 64, 128}) {
      INFO("tiles " << tiles << " requested " << requested);
      const int64_t splits = dec::effective_splits(tiles, std::min(requested, tiles));
      const int64_t per = dec::tiles_per_split(tiles, splits);
      CHECK(splits >= 1);
      CHECK(splits <= std::min(requested, tiles));
      CHECK((splits - 1) * per < tiles);  // the last split is not empty
      CHECK(splits * per >= tiles);       // and together they cover every tile
    }
  CHECK(dec::effective_splits(10, 6) == 5);  // 2 tiles each: the sixth would be empty
  CHECK(dec::effective_splits(64, 3) == 3);
}

TEST_CASE("the split heuristic gives every SM a CTA at small batch and does not split a grid that does") {
  // Batch 1, 8 kv heads: 8 CTAs unsplit would stream from 8 of the H200's 132 SMs. 16 splits put one
  // CTA on 128 SMs; 32 would put two on most of them for the same share of the stream each, plus a
  // second CTA's fixed cost.
  for (int64_t keys : {8192, 32768, 131072}) {
    INFO("keys " << keys);
    const dec::Plan one = dec::plan(1, 32, 8, 1, keys, 0, kH200Sms);
    CHECK(one.splits == 16);
    CHECK(one.ctas == 128);
    CHECK(one.combine_rows == 32);
  }
  // Short context: never fewer than kMinTilesPerSplit tiles per split (16 tiles: 8 splits of 2).
  const dec::Plan short_ctx = dec::plan(1, 32, 8, 1, 1024, 0, kH200Sms);
  CHECK(short_ctx.tiles == 16);
  CHECK(short_ctx.splits == 8);
  CHECK(short_ctx.tiles_per_split == dec::kMinTilesPerSplit);
  // Batch 16 x 8 kv heads = 128 CTAs: one per SM already at any context, no split and no combine.
  for (int64_t keys : {1024, 8192, 32768, 131072}) CHECK(dec::plan(16, 32, 8, 1, keys, 0, kH200Sms).splits == 1);
  // Batch 64 x 8 kv heads = 512 CTAs: about four per SM, no split.
  const dec::Plan full = dec::plan(64, 32, 8, 1, 32768, 0, kH200Sms);
  CHECK(full.splits == 1);
  CHECK(full.combine_rows == 0);
  CHECK(dec::workspace_bytes(full, 128) == 0);
  // A grid one CTA over the SM count: unsplit, one SM streams two whole ranges while the others idle
  // through the second; splitting evens the SMs' work out.
  CHECK(dec::choose_splits(133, 2048, kH200Sms) > 1);
  CHECK(dec::split_cost(133, 2048, kH200Sms, dec::choose_splits(133, 2048, kH200Sms)) < 0.6 * dec::split_cost(133, 2048, kH200Sms, 1));
  // The axis overrides the heuristic (and is capped at the tile count).
  CHECK(dec::plan(1, 32, 8, 1, 32768, 5, kH200Sms).splits == 5);
  CHECK(dec::plan(1, 32, 8, 1, 100, 9, kH200Sms).splits == 2);
  // Workspace: O and LSE of every query row per split, fp32, then one arrival counter per
  // (batch, kv head, row block): 2 x 8 x 1 here.
  const dec::Plan four = dec::plan(2, 32, 8, 1, 32768, 4, kH200Sms);
  CHECK(four.row_blocks == 16);
  CHECK(dec::partials_bytes(four, 128) == 4u * 2 * 32 * 1 * 129 * sizeof(float));
  CHECK(dec::workspace_bytes(four, 128) == 4u * 2 * 32 * 1 * 129 * sizeof(float) + 16 * sizeof(uint32_t));
  // Speculative decoding: 16 positions x a group of 8 = 128 packed rows, in row blocks of 32.
  const dec::Plan spec = dec::plan(1, 64, 8, 16, 32768, 4, kH200Sms);
  CHECK(spec.m_blocks == 4);
  CHECK(spec.row_blocks == 1 * 8 * 4);
  CHECK(dec::workspace_bytes(spec, 64) == dec::partials_bytes(spec, 64) + 32 * sizeof(uint32_t));
}

TEST_CASE("the heuristic's choice is the cheapest split count of the cost model, the smallest of equals") {
  for (int64_t ctas : {1, 7, 8, 33, 64, 100, 128, 131, 133, 263, 512})
    for (int64_t tiles : {1, 4, 16, 64, 128, 513, 2048}) {
      INFO("ctas " << ctas << " tiles " << tiles);
      const int64_t s = dec::choose_splits(ctas, tiles, kH200Sms);
      CHECK(s >= 1);
      CHECK(s <= std::max<int64_t>(1, std::min<int64_t>(dec::kMaxSplits, tiles / dec::kMinTilesPerSplit)));
      CHECK(dec::effective_splits(tiles, s) == s);  // no empty split
      const double cost = dec::split_cost(ctas, tiles, kH200Sms, s);
      for (int64_t n = 1; n <= std::min<int64_t>(dec::kMaxSplits, tiles / dec::kMinTilesPerSplit); ++n) {
        if (dec::effective_splits(tiles, n) != n) continue;
        CHECK(cost <= dec::split_cost(ctas, tiles, kH200Sms, n) + 1e-9);
        if (n < s) CHECK(dec::split_cost(ctas, tiles, kH200Sms, n) > cost);
      }
    }
  // The model by hand: 8 CTAs, 512 tiles, 132 SMs. s = 16: 128 CTAs, one per SM, 32 tiles each;
  // s = 32: two per SM on 124 SMs, 16 tiles each.
  CHECK(dec::split_cost(8, 512, kH200Sms, 16) == 1 * (32 + dec::kCtaFixedTiles) + dec::kCombineTiles);
  CHECK(dec::split_cost(8, 512, kH200Sms, 32) == 2 * (16 + dec::kCtaFixedTiles) + dec::kCombineTiles);
  CHECK(dec::split_cost(8, 512, kH200Sms, 1) == 512 + dec::kCtaFixedTiles);
}

TEST_CASE("the shuffled block table is a permutation of the pool's pages, fixed by its seed") {
  core::Shape s;
  s.batch = 5;
  s.kv_heads = 2;
  s.heads = 8;
  s.seq_q = 1;
  s.seq_k = 1000;
  s.page_size = 16;
  const auto table = attnprof::kernels::shuffled_block_table(s, 42);
  REQUIRE(table.size() == static_cast<size_t>(5 * 63));
  std::set<int32_t> pages(table.begin(), table.end());
  CHECK(pages.size() == table.size());
  CHECK(*pages.begin() == 0);
  CHECK(*pages.rbegin() == static_cast<int32_t>(table.size()) - 1);
  CHECK(table == attnprof::kernels::shuffled_block_table(s, 42));
  CHECK(table != attnprof::kernels::shuffled_block_table(s, 43));
  // Shuffled: most logical neighbours are not physical neighbours.
  int adjacent = 0;
  for (size_t i = 1; i < table.size(); ++i) adjacent += table[i] == table[i - 1] + 1;
  CHECK(adjacent < 10);
  // The offset of logical (b, h, j, d): page j / 16 of sequence b, row j % 16 of head h in that page.
  const int64_t off = attnprof::kernels::paged_offset(table.data(), 63, 2, 16, 64, 3, 1, 37, 5);
  CHECK(off == ((table[3 * 63 + 2] * 2 + 1) * 16 + 5) * 64 + 5);
}

TEST_CASE("decode with a sliding window streams only the key tiles of the window, split exactly once") {
  for (int64_t seq_q : {1, 4, 16})
    for (int64_t seq_k : {1, 63, 64, 1000, 32768})
      for (int64_t window : {0, 1, 16, 64, 65, 4096, 100000})
        for (int64_t requested : {0, 1, 3, 8}) {
          const dec::Plan p = dec::plan(2, 32, 8, seq_q, seq_k, requested, kH200Sms, window);
          INFO("seq " << seq_q << "x" << seq_k << " window " << window << " splits " << requested);
          core::Shape s;
          s.seq_q = seq_q;
          s.seq_k = seq_k;
          s.window = window;
          // The first key any position sees (causal or not: the range ends at seq_k either way).
          int64_t lo = seq_k;
          for (bool causal : {false, true}) {
            s.causal = causal;
            for (int64_t i = 0; i < seq_q; ++i) {
              const core::KeyRange r = s.keys_of_row(i);
              if (r.size() > 0) lo = std::min(lo, r.begin);
              CHECK(r.end <= (p.first_tile + p.tiles) * dec::kBlockN);
            }
          }
          CHECK(p.first_tile * dec::kBlockN <= lo);
          CHECK(lo < (p.first_tile + 1) * dec::kBlockN);  // the first streamed tile holds a seen key
          CHECK(p.first_tile + p.tiles == dec::key_tiles(seq_k));
          REQUIRE(p.tiles >= 1);
          // The splits cut the streamed tiles into non-empty whole-tile ranges.
          CHECK(p.splits <= p.tiles);
          CHECK((p.splits - 1) * p.tiles_per_split < p.tiles);
          CHECK(p.splits * p.tiles_per_split >= p.tiles);
        }
  // Decode at 32k context with a 4096-key window: 64 of 512 tiles, so the heuristic's split count
  // is sized to 64 tiles, not 512.
  const dec::Plan local = dec::plan(1, 32, 8, 1, 32768, 0, kH200Sms, 4096);
  CHECK(local.first_tile == (32768 - 4096) / dec::kBlockN);
  CHECK(local.tiles == 4096 / dec::kBlockN);
  CHECK(dec::plan(1, 32, 8, 1, 32768, 0, kH200Sms).tiles == 512);
}

TEST_CASE("decode's shared-memory layouts: swizzled rows hdim wide by default, padded rows, unknown names refused") {
  CHECK(dec::parse_layout("") == dec::SmemLayout::swizzled);
  CHECK(dec::parse_layout("padded") == dec::SmemLayout::padded);
  CHECK(dec::parse_layout("swizzled") == dec::SmemLayout::swizzled);
  CHECK_FALSE(dec::parse_layout("Swizzled").has_value());
  CHECK_FALSE(dec::parse_layout("xor").has_value());
  for (auto layout : {dec::SmemLayout::padded, dec::SmemLayout::swizzled})
    CHECK(dec::parse_layout(dec::to_string(layout)) == layout);
  // hdim 128, one m-tile, 2-byte elements: (16 + 2 x 3 x 64) rows of 136 or 128 elements.
  CHECK(dec::smem_bytes(1, 128, 2, dec::SmemLayout::padded) == 400u * 136 * 2);
  CHECK(dec::smem_bytes(1, 128, 2) == 400u * 128 * 2);
  // Two CTAs of either layout fit the H200's 228 KB per SM (1 KB reserved per CTA).
  for (auto layout : {dec::SmemLayout::padded, dec::SmemLayout::swizzled})
    for (int mt : {1, 2}) CHECK(2 * (dec::smem_bytes(mt, 128, 2, layout) + 1024) <= 228u * 1024);
  CHECK(dec::merge_fits(128, dec::SmemLayout::swizzled));
}

TEST_CASE("the kernel's addressing: contiguous, one page per tile for pages of whole tiles, else per row") {
  using dec::KvAddressing;
  CHECK(dec::addressing(0) == KvAddressing::contiguous);
  for (int64_t page : {64, 128, 256, 1024}) CHECK(dec::addressing(page) == KvAddressing::page_tiles);
  for (int64_t page : {1, 16, 32, 48, 96, 100}) {
    INFO("page " << page);
    CHECK(dec::addressing(page) == KvAddressing::page_rows);
  }
  static_assert(dec::kBlockN == 64, "page_tiles needs pages of a multiple of the key tile");
}
