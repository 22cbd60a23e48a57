// Host-side checks of the fused kernel's constexpr tile heuristics (core/tiles/fused_tiles.hpp):
// tile shapes are consistent, fit in shared memory, and the causal tile skipping / masking decisions
// agree with a brute-force walk over the bottom-right causal mask. No CUDA runtime needed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>

#include "core/shape.hpp"
#include "kernels/common/launch_params.hpp"
#include "kernels/common/lazy_max.hpp"
#include "kernels/common/random.hpp"
#include "core/tiles/fused_tiles.hpp"

namespace fused = attnprof::kernels::fused;

namespace {

constexpr auto& kVariants = fused::kTileVariants;
static_assert(std::size(fused::kTileVariants) == 7);
static_assert(fused::kTileVariants[3] == fused::TileVariant::m64n32 && fused::kTileVariants[4] == fused::TileVariant::m64n64);
static_assert(fused::kTileVariants[5] == fused::TileVariant::padded && fused::kTileVariants[6] == fused::TileVariant::m64n64sw);
constexpr size_t kSmemPerSmBytes = 227 * 1024;  // usable by one CTA on sm_90
// sm_90: 228 KB of shared memory per SM, of which the runtime reserves 1 KB per resident CTA.
constexpr size_t kSmemSmTotalBytes = 228 * 1024, kSmemReservedPerCtaBytes = 1024;

// Last key row i may see under the bottom-right causal mask (negative: none).
long long last_visible_key(long long i, long long seq_q, long long seq_k, bool causal) {
  return causal ? std::min(seq_k - 1, i + seq_k - seq_q) : seq_k - 1;
}

}  // namespace

TEST_CASE("fused tile configurations are consistent and fit in shared memory") {
  for (int hdim : fused::kHeadDims)
    for (fused::TileVariant v : kVariants) {
      if (!fused::supported_variant(hdim, v)) continue;
      const fused::TileConfig c = fused::tile_config(hdim, v);
      INFO("hdim " << hdim << " variant " << fused::to_string(v));
      // What the kernel's static_asserts and load loops need.
      CHECK(hdim % 16 == 0);
      CHECK(c.block_m * (hdim / 8) % fused::threads_of(c) == 0);
      CHECK(c.block_n * (hdim / 8) % fused::threads_of(c) == 0);
      // O accumulators (hdim / 2 per row tile) and S accumulators (block_n / 2 per row tile) per thread
      // stay under the register cap __launch_bounds__ sets (64K / (threads * min blocks), at most 255).
      const int cap = std::min(255, 65536 / (fused::threads_of(c) * c.min_blocks_per_sm));
      CHECK(c.m_tiles_per_warp * (hdim / 2 + c.block_n / 2) <= cap - 40);
      CHECK(c.block_m == fused::kMmaRows * c.warps * c.m_tiles_per_warp);
      CHECK(c.block_n % 16 == 0);
      CHECK(fused::threads_of(c) == 32 * c.warps);
      CHECK(fused::smem_bytes(c, hdim, 2) * c.min_blocks_per_sm <= kSmemPerSmBytes);
      CHECK((c.kv_buffers == 1 || c.kv_buffers == 2));
      // min_blocks_per_sm CTAs really fit in one SM's shared memory, the runtime's reserve included.
      CHECK((fused::smem_bytes(c, hdim, 2) + kSmemReservedPerCtaBytes) * c.min_blocks_per_sm <= kSmemSmTotalBytes);
    }
  // The default keeps two 4-warp CTAs per SM for both head dims.
  static_assert(fused::tile_config(128, fused::TileVariant::fast).min_blocks_per_sm == 2);
  static_assert(fused::smem_bytes(fused::tile_config(128, fused::TileVariant::fast), 128, 2) == (128 + 4 * 32) * 128 * 2);
  static_assert(fused::smem_bytes(fused::tile_config(96, fused::TileVariant::fast), 96, 2) == (128 + 4 * 64) * (96 + 8) * 2);
  // small really is smaller: fewer query rows and keys per CTA.
  static_assert(fused::tile_config(128, fused::TileVariant::small).block_m <
                fused::tile_config(128, fused::TileVariant::fast).block_m);
  CHECK(fused::supported_hdim(64));
  CHECK(fused::supported_hdim(128));
  CHECK(fused::supported_hdim(96));
  CHECK(fused::supported_hdim(256));
  CHECK_FALSE(fused::supported_hdim(80));
  CHECK_FALSE(fused::supported_hdim(512));
  CHECK(fused::supported_variant(256, fused::TileVariant::fast));
  CHECK_FALSE(fused::supported_variant(256, fused::TileVariant::small));
  CHECK_FALSE(fused::supported_variant(96, fused::TileVariant::warps8));
}

TEST_CASE("the hdim-192/256 alternatives run two 64-row CTAs per SM") {
  using fused::TileVariant;
  for (TileVariant v : {TileVariant::m64n32, TileVariant::m64n64}) {
    INFO("variant " << fused::to_string(v));
    for (int hdim : fused::kHeadDims)
      CHECK(fused::supported_variant(hdim, v) == (hdim == 192 || hdim == 256));
    CHECK(fused::variant_hdims_text(v) == "192 and 256");
    for (int hdim : {192, 256}) {
      const fused::TileConfig c = fused::tile_config(hdim, v);
      CHECK(c.block_m == 64);
      CHECK(c.warps == 4);
      CHECK(c.m_tiles_per_warp == 1);
      CHECK_FALSE(c.q_in_registers);
      CHECK(c.min_blocks_per_sm == 2);
      // Two CTAs fit: at hdim 256, 99 KB each (fast's one 8-warp CTA takes 198 KB).
      CHECK(2 * (fused::smem_bytes(c, hdim, 2) + kSmemReservedPerCtaBytes) <= kSmemSmTotalBytes);
      // At hdim 256 one more K/V buffer pair of either tile would not fit two CTAs per SM (why m64n64
      // has one buffer of each and m64n32 only 32-key tiles).
      fused::TileConfig deeper = c;
      deeper.kv_buffers += 1;
      if (hdim == 256) CHECK(2 * (fused::smem_bytes(deeper, hdim, 2) + kSmemReservedPerCtaBytes) > kSmemSmTotalBytes);
    }
    // Nor would a 64-key double-buffered tile at hdim 256: (64 + 4 * 64) rows of 528 bytes.
    fused::TileConfig wider = fused::tile_config(256, v);
    wider.block_n = 64;
    wider.kv_buffers = 2;
    CHECK(2 * (fused::smem_bytes(wider, 256, 2) + kSmemReservedPerCtaBytes) > kSmemSmTotalBytes);
  }
  // m64n32: double-buffered 32-key tiles; m64n64: one K and one V buffer of 64 keys (FlashAttention-2's
  // hdim-256 tile on H100); the same shared memory at hdim 256.
  constexpr fused::TileConfig n32 = fused::tile_config(256, TileVariant::m64n32);
  constexpr fused::TileConfig n64 = fused::tile_config(256, TileVariant::m64n64);
  static_assert(n32.block_n == 32 && n32.kv_buffers == 2);
  static_assert(n64.block_n == 64 && n64.kv_buffers == 1);
  static_assert(fused::smem_bytes(n32, 256, 2) == (64 + 4 * 32) * (256 + 8) * 2);
  static_assert(fused::smem_bytes(n64, 256, 2) == (64 + 2 * 64) * (256 + 8) * 2);
  static_assert(fused::smem_bytes(n64, 256, 2) == 101376);
  // The default is unchanged: one 8-warp, 128-row CTA per SM, double-buffered 64-key tiles.
  constexpr fused::TileConfig fast = fused::tile_config(256, TileVariant::fast);
  static_assert(fast.block_m == 128 && fast.block_n == 64 && fast.warps == 8 && fast.kv_buffers == 2);
  static_assert(fused::smem_bytes(fast, 256, 2) == (128 + 4 * 64) * 256 * 2);
  CHECK(fused::variant_hdims_text(TileVariant::small) == "64 and 128");
}

TEST_CASE("fast stages O in shared memory at every head dim but 128, m64n64sw too, the other variants never") {
  using fused::TileVariant;
  for (int hdim : fused::kHeadDims) {
    INFO("hdim " << hdim);
    const fused::TileConfig f = fused::tile_config(hdim, TileVariant::fast);
    CHECK(f.staged_o == (hdim != 128));
    // The staging reuses the CTA's Q rows: each warp's own 16 x m-tiles rows, whole 16-byte chunks that
    // the warp's 32 lanes share evenly.
    CHECK(fused::kMmaRows * f.m_tiles_per_warp * (hdim / 8) % 32 == 0);
    for (TileVariant v : fused::kTileVariants) {
      if (v == TileVariant::fast || v == TileVariant::padded || !fused::supported_variant(hdim, v)) continue;
      INFO("variant " << fused::to_string(v));
      CHECK(fused::tile_config(hdim, v).staged_o == (v == TileVariant::m64n64sw));
    }
  }
}

TEST_CASE("tiles are copied by lines everywhere but fast's tile at hdim 256, and the kernel can do so") {
  using fused::TileVariant;
  for (int hdim : fused::kHeadDims) {
    for (TileVariant v : fused::kTileVariants) {
      if (!fused::supported_variant(hdim, v)) continue;
      const fused::TileConfig c = fused::tile_config(hdim, v);
      INFO("hdim " << hdim << ", variant " << fused::to_string(v));
      const bool fast_tile = v == TileVariant::fast || v == TileVariant::padded;
      CHECK(c.copy_by_lines == !(fast_tile && hdim == 256));
      if (!c.copy_by_lines || hdim % 64 != 0) continue;  // hdim 32 and 96: rows of 4 or 12 chunks
      // load_tile_async's line order: threads / 8 rows per pass, a multiple of 8 (a thread's rows share
      // row % 8, so its swizzled addresses are one base plus constants), dividing Q's and K/V's rows.
      const int rows_per_pass = fused::threads_of(c) / 8;
      CHECK(rows_per_pass % 8 == 0);
      CHECK(c.block_m % rows_per_pass == 0);
      CHECK(c.block_n % rows_per_pass == 0);
    }
  }
}

TEST_CASE("fast loads fragments one MMA step ahead at hdim 128 only, within one k-step of S everywhere") {
  using fused::TileVariant;
  for (int hdim : fused::kHeadDims) {
    INFO("hdim " << hdim);
    CHECK(fused::tile_config(hdim, TileVariant::fast).fragment_lookahead == (hdim == 128 ? 1 : 0));
    for (TileVariant v : fused::kTileVariants) {
      if (!fused::supported_variant(hdim, v)) continue;
      const fused::TileConfig c = fused::tile_config(hdim, v);
      INFO("variant " << fused::to_string(v));
      CHECK(c.fragment_lookahead >= 0);
      CHECK(c.fragment_lookahead < c.block_n / 16);  // the A fragments' two buffers suffice
    }
  }
}

TEST_CASE("fast keeps rows of whole 128-byte lines swizzled; padded is its tile on padded rows") {
  using fused::TileVariant;
  for (int hdim : fused::kHeadDims) {
    INFO("hdim " << hdim);
    const bool whole_lines = hdim * 2 % 128 == 0;
    const fused::TileConfig f = fused::tile_config(hdim, TileVariant::fast);
    CHECK(f.swizzled == whole_lines);
    CHECK(fused::smem_row_elems(f, hdim) == (whole_lines ? hdim : hdim + fused::kSmemPadElems));
    CHECK(fused::supported_variant(hdim, TileVariant::padded) == whole_lines);
    CHECK(fused::supported_variant(hdim, TileVariant::m64n64sw) == (hdim == 192 || hdim == 256));
    if (!whole_lines) continue;
    fused::TileConfig p = fused::tile_config(hdim, TileVariant::padded);
    CHECK_FALSE(p.swizzled);
    CHECK(fused::smem_row_elems(p, hdim) == hdim + fused::kSmemPadElems);
    p.swizzled = true;  // otherwise fast's tile
    CHECK(p == f);
  }
  // The comparison variants keep padded rows; m64n64sw is m64n64 on swizzled rows.
  for (TileVariant v : {TileVariant::small, TileVariant::warps8}) CHECK_FALSE(fused::tile_config(128, v).swizzled);
  for (TileVariant v : {TileVariant::m64n32, TileVariant::m64n64}) CHECK_FALSE(fused::tile_config(256, v).swizzled);
  CHECK(fused::tile_config(256, TileVariant::m64n64sw).swizzled);
  CHECK(fused::variant_hdims_text(TileVariant::padded) == "64, 128, 192 and 256");
  CHECK(fused::variant_hdims_text(TileVariant::m64n64sw) == "192 and 256");
  static_assert(fused::smem_bytes(fused::tile_config(256, TileVariant::m64n64sw), 256, 2) == (64 + 2 * 64) * 256 * 2);
  static_assert(fused::smem_bytes(fused::tile_config(256, TileVariant::padded), 256, 2) == (128 + 4 * 64) * (256 + 8) * 2);
  CHECK(2 * (fused::smem_bytes(fused::tile_config(256, TileVariant::m64n64sw), 256, 2) + kSmemReservedPerCtaBytes) <=
        kSmemSmTotalBytes);
}

TEST_CASE("ATTNPROF_FUSED_CONFIG values parse") {
  CHECK(fused::parse_variant("") == fused::TileVariant::fast);
  CHECK(fused::parse_variant("fast") == fused::TileVariant::fast);
  CHECK(fused::parse_variant("small") == fused::TileVariant::small);
  CHECK(fused::parse_variant("warps8") == fused::TileVariant::warps8);
  CHECK(fused::parse_variant("m64n32") == fused::TileVariant::m64n32);
  CHECK(fused::parse_variant("m64n64") == fused::TileVariant::m64n64);
  CHECK(fused::parse_variant("padded") == fused::TileVariant::padded);
  CHECK(fused::parse_variant("m64n64sw") == fused::TileVariant::m64n64sw);
  CHECK_FALSE(fused::parse_variant("Fast").has_value());
  CHECK_FALSE(fused::parse_variant("m64").has_value());
  for (size_t i = 0; i < std::size(kVariants); ++i) {  // in the enum's order, each name read back as itself
    CHECK(static_cast<size_t>(kVariants[i]) == i);
    CHECK(fused::parse_variant(fused::to_string(kVariants[i])) == kVariants[i]);
  }
  CHECK_FALSE(fused::parse_variant("Small").has_value());
  CHECK_FALSE(fused::parse_variant("fastest").has_value());
}

TEST_CASE("the default variant is m64n64sw at hdim 192 and 256 with the causal mask or up to 2048 keys, else fast") {
  using fused::TileVariant;
  static_assert(fused::kTwoCtaUnmaskedKeys == 2048);
  for (int hdim : fused::kHeadDims)
    for (long long keys : {1LL, 1024LL, 2048LL, 2049LL, 4096LL, 8192LL, 32768LL})
      for (bool causal : {false, true}) {
        INFO("hdim " << hdim << ", keys " << keys << ", causal " << causal);
        const bool two_ctas = (hdim == 192 || hdim == 256) && (causal || keys <= 2048);
        const TileVariant chosen = fused::default_variant(hdim, hdim, causal, keys, false, false);
        CHECK(chosen == (two_ctas ? TileVariant::m64n64sw : TileVariant::fast));
        CHECK(fused::supported_variant(hdim, chosen));
        // A window, a packed batch or a different value head dim keeps fast.
        CHECK(fused::default_variant(hdim, hdim, causal, keys, true, false) == TileVariant::fast);
        CHECK(fused::default_variant(hdim, hdim, causal, keys, false, true) == TileVariant::fast);
        CHECK(fused::default_variant(hdim, 128, causal, keys, false, false) == TileVariant::fast);
      }
  // m64n64sw stages O as fast does at both head dims.
  for (int hdim : {192, 256})
    CHECK(fused::tile_config(hdim, TileVariant::m64n64sw).staged_o == fused::tile_config(hdim, TileVariant::fast).staged_o);
}

TEST_CASE("causal tile skipping and masking agree with the brute-force mask") {
  const long long lengths[] = {1, 17, 63, 64, 65, 128, 130, 333};
  for (fused::TileVariant v : kVariants) {
    const fused::TileConfig c = fused::tile_config(128, v);
    for (long long seq_q : lengths)
      for (long long seq_k : lengths)
        for (bool causal : {false, true})
          for (long long mb = 0; mb < fused::m_blocks(c, seq_q); ++mb) {
            const long long m0 = mb * c.block_m;
            const long long rows_end = std::min(seq_q, m0 + c.block_m);
            const long long tiles = fused::key_tiles(c, m0, seq_q, seq_k, causal);
            const long long all_tiles = (seq_k + c.block_n - 1) / c.block_n;
            INFO("variant " << fused::to_string(v) << " seq " << seq_q << "x" << seq_k
                            << (causal ? " causal" : "") << " m0 " << m0);
            REQUIRE(tiles >= 0);
            REQUIRE(tiles <= all_tiles);
            // Every key a row of the block sees lies in a visited tile.
            long long max_key = -1;
            for (long long i = m0; i < rows_end; ++i)
              max_key = std::max(max_key, last_visible_key(i, seq_q, seq_k, causal));
            CHECK(max_key < tiles * c.block_n);
            // A tile visited without masking has every key visible to every row of the block.
            for (long long t = 0; t < tiles; ++t) {
              if (fused::tile_needs_mask(c, m0, t, seq_q, seq_k, causal)) continue;
              const long long tile_last_key = t * c.block_n + c.block_n - 1;
              CHECK(tile_last_key < seq_k);
              for (long long i = m0; i < rows_end; ++i)
                CHECK(last_visible_key(i, seq_q, seq_k, causal) >= tile_last_key);
            }
          }
  }
  // seq_k < seq_q with a causal mask: the first rows see nothing, so their block visits no tile.
  const fused::TileConfig fast = fused::tile_config(64, fused::TileVariant::fast);
  CHECK(fused::key_tiles(fast, 0, 1000, 100, true) == 0);
  CHECK(fused::key_tiles(fast, 0, 100, 1000, false) == (1000 + fast.block_n - 1) / fast.block_n);
}

TEST_CASE("sliding-window tile range and masking agree with the brute-force mask") {
  const long long lengths[] = {1, 17, 64, 65, 130, 333};
  const long long windows[] = {1, 2, 31, 32, 33, 64, 100, 129, 1000};
  for (fused::TileVariant v : kVariants) {
    const fused::TileConfig c = fused::tile_config(128, v);
    for (long long seq_q : lengths)
      for (long long seq_k : lengths)
        for (bool causal : {false, true})
          for (long long window : windows) {
            attnprof::core::Shape s;
            s.seq_q = seq_q;
            s.seq_k = seq_k;
            s.causal = causal;
            s.window = window;
            for (long long mb = 0; mb < fused::m_blocks(c, seq_q); ++mb) {
              const long long m0 = mb * c.block_m;
              const long long rows_end = std::min(seq_q, m0 + c.block_m);
              const long long first = fused::first_key_tile(c, m0, seq_q, seq_k, causal, window);
              const long long tiles = fused::key_tiles(c, m0, seq_q, seq_k, causal, window);
              const long long all_tiles = (seq_k + c.block_n - 1) / c.block_n;
              INFO("variant " << fused::to_string(v) << " seq " << seq_q << "x" << seq_k << (causal ? " causal" : "")
                              << " window " << window << " m0 " << m0);
              REQUIRE(first >= 0);
              REQUIRE(tiles >= 0);
              REQUIRE(first + tiles <= all_tiles);
              // Every key a row of the block sees lies in a visited tile; a block whose rows see
              // nothing visits none.
              long long lo = seq_k, hi = 0;
              for (long long i = m0; i < rows_end; ++i) {
                const attnprof::core::KeyRange r = s.keys_of_row(i);
                if (r.size() == 0) continue;
                lo = std::min<long long>(lo, r.begin);
                hi = std::max<long long>(hi, r.end);
              }
              if (hi <= lo) {
                CHECK(tiles == 0);
                continue;
              }
              CHECK(first * c.block_n <= lo);
              CHECK(hi <= (first + tiles) * c.block_n);
              // The range is tight: its first and last tiles hold a key some row sees.
              CHECK(lo < (first + 1) * c.block_n);
              CHECK(hi > (first + tiles - 1) * c.block_n);
              // A tile visited without masking has every key visible to every row of the block.
              for (long long t = first; t < first + tiles; ++t) {
                if (fused::tile_needs_mask(c, m0, t, seq_q, seq_k, causal, window)) continue;
                for (long long i = m0; i < rows_end; ++i) {
                  const attnprof::core::KeyRange r = s.keys_of_row(i);
                  CHECK(r.begin <= t * c.block_n);
                  CHECK(r.end >= t * c.block_n + c.block_n);
                }
              }
            }
          }
  }
  // Decode-like: one query row against 4096 keys, window 1000 -> keys 3096 .. 4095, tiles 48 .. 63 of 64.
  const fused::TileConfig fast = fused::tile_config(64, fused::TileVariant::fast);
  CHECK(fused::first_key_tile(fast, 0, 1, 4096, true, 1000) == 3096 / 64);
  CHECK(fused::key_tiles(fast, 0, 1, 4096, true, 1000) == 64 - 3096 / 64);
  // Without a window the range starts at tile 0 and matches the causal count.
  CHECK(fused::first_key_tile(fast, 128, 1000, 1000, true) == 0);
  CHECK(fused::key_tiles(fast, 128, 1000, 1000, true, 0) == fused::key_tiles(fast, 128, 1000, 1000, true));
}

TEST_CASE("backward: the query rows a key block visits and its masking agree with the brute-force mask") {
  const long long lengths[] = {1, 17, 64, 65, 130, 333};
  const long long windows[] = {0, 1, 33, 100, 1000};
  for (int hdim : fused::kBwdHeadDims) {
    const fused::BwdTileConfig c = fused::bwd_tile_config(hdim);
    CHECK(c.block_n == 16 * c.warps);
    CHECK(c.block_m % (16 * c.query_parts) == 0);
    // One CTA per SM: its shared memory fits the SM's 227 KB (sm_90) in fp16 and bf16.
    CHECK(fused::bwd_smem_bytes(c, hdim, 2) <= 227u * 1024);
    for (long long seq_q : lengths)
      for (long long seq_k : lengths)
        for (bool causal : {false, true})
          for (long long window : windows) {
            attnprof::core::Shape s;
            s.seq_q = seq_q;
            s.seq_k = seq_k;
            s.causal = causal;
            s.window = window;
            INFO("seq_q " << seq_q << " seq_k " << seq_k << " causal " << causal << " window " << window);
            // Each row's keys as the kernels mask them: the keys keys_of_row gives, none past seq_q.
            for (long long i = 0; i < seq_q + 2; ++i) {
              const fused::RowKeys mine = fused::row_keys(int(i), int(seq_q), int(seq_k), causal, int(window));
              const attnprof::core::KeyRange r = i < seq_q ? s.keys_of_row(i) : attnprof::core::KeyRange{};
              for (long long key = 0; key < seq_k; ++key)
                CHECK((key >= mine.begin && key < mine.end) == (key >= r.begin && key < r.end));
            }
            for (long long n0 = 0; n0 < seq_k; n0 += c.block_n) {
              const long long keys = std::min<long long>(c.block_n, seq_k - n0);
              // The rows that see one of keys [n0, n0 + keys): exactly rows_seeing_keys.
              long long lo = seq_q, hi = -1;
              for (long long i = 0; i < seq_q; ++i) {
                const attnprof::core::KeyRange r = s.keys_of_row(i);
                if (std::max<long long>(r.begin, n0) < std::min<long long>(r.end, n0 + keys)) lo = std::min(lo, i), hi = std::max(hi, i);
              }
              const fused::RowSpan span = fused::rows_seeing_keys(n0, keys, seq_q, seq_k, causal, window);
              if (hi < 0) {
                CHECK(span.end <= span.begin);
              } else {
                CHECK(span.begin == lo);
                CHECK(span.end == hi + 1);
              }
              // A block run without masking has every key visible to every row, all of them real.
              for (long long m0 = 0; m0 < seq_q; m0 += c.block_m) {
                if (fused::bwd_block_needs_mask(c, m0, n0, seq_q, seq_k, causal, window)) continue;
                CHECK(m0 + c.block_m <= seq_q);
                CHECK(n0 + c.block_n <= seq_k);
                for (long long i = m0; i < std::min(seq_q, m0 + c.block_m); ++i) {
                  const attnprof::core::KeyRange r = s.keys_of_row(i);
                  CHECK(r.begin <= n0);
                  CHECK(r.end >= n0 + c.block_n);
                }
              }
            }
          }
  }
}

// The GPU tests' wide inputs (Q x 2^3, kernels/common/random.hpp) must make the fused kernel's lazy max
// move after a row's first key tile, or their check of the rescale would pass vacuously; with the
// default inputs it almost never moves (why the wide case exists). A host walk over the same values.
namespace {

// Key tiles after the first at which a row's lazy max moves (scores in log2 units, 128-key hdim-128 rows).
int lazy_max_moves(uint64_t seed, long long row, int q_scale_log2) {
  constexpr int kHdim = 128, kKeys = 4096;
  constexpr int kBlockN = fused::tile_config(kHdim, fused::TileVariant::fast).block_n;
  attnprof::core::Shape shape;
  shape.hdim = kHdim;
  const double scale_log2 = attnprof::core::softmax_scale(shape) * attnprof::kernels::kLog2e;
  double q[kHdim];
  for (int d = 0; d < kHdim; ++d)
    q[d] = attnprof::kernels::input_value(seed, 0, uint64_t(row * kHdim + d), q_scale_log2);
  double running = -INFINITY;
  int moves = 0;
  for (int n0 = 0; n0 < kKeys; n0 += kBlockN) {
    double tile_max = -INFINITY;
    for (int j = n0; j < n0 + kBlockN; ++j) {
      double dot = 0;
      for (int d = 0; d < kHdim; ++d) dot += q[d] * attnprof::kernels::input_value(seed, 1, uint64_t(j * kHdim + d));
      tile_max = std::max(tile_max, dot * scale_log2);
    }
    if (tile_max - running > attnprof::kernels::kLazyMaxLog2) {
      moves += n0 > 0 ? 1 : 0;
      running = tile_max;
    }
  }
  return moves;
}

}  // namespace

TEST_CASE("wide test inputs move the fused kernel's lazy max after the first key tile", "[fused_tiles]") {
  int rows_moving_wide = 0, rows_moving_default = 0, moves_wide = 0;
  constexpr int kRows = 16;
  for (long long row = 0; row < kRows; ++row) {
    const int wide = lazy_max_moves(7, row * 61, 3);
    moves_wide += wide;
    rows_moving_wide += wide > 0 ? 1 : 0;
    rows_moving_default += lazy_max_moves(7, row * 61, 0) > 0 ? 1 : 0;
  }
  INFO("wide: " << rows_moving_wide << " rows, " << moves_wide << " moves; default: " << rows_moving_default);
  CHECK(rows_moving_wide >= kRows * 3 / 4);
  CHECK(moves_wide >= kRows);
  CHECK(rows_moving_default <= kRows / 4);
}
