// Tile shapes of the fused attention kernel, as pure constexpr functions: the kernel instantiates
// them at compile time, and they can be unit-tested on the host without a CUDA runtime.
//
// Work split (FlashAttention-2): one CTA owns block_m query rows of one (batch, head); each warp owns
// m_tiles_per_warp * 16 of those rows, so the softmax statistics of a row never leave one warp's
// quad of lanes. K and V are streamed through shared memory block_n keys at a time, kv_buffers each.
// The tile headers live in src/core/tiles (not beside their kernels) because the diagnosis reads the
// same shapes to judge the kernel that ran (core/work_split.cpp): kernels include core, never the reverse.
#pragma once
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string_view>

#include "core/tiles/key_span.hpp"

namespace attnprof::kernels::fused {

// fast: the default. small: a deliberately smaller tile (half the query rows per CTA, 32 keys per
// step, 16 rows per warp) that is correct but slower; it exists to show that the regression gate
// catches a slower kernel. warps8: 8 warps of 16 rows each (the same 128-row CTA as fast, but every
// warp re-reads all of K and V from shared memory), kept as the measured alternative to fast
// (docs/kernels.md has the numbers).
// m64n32 and m64n64 (hdim 192 and 256 only): the alternatives to fast's one 8-warp CTA per SM there,
// two 4-warp CTAs of 64 query rows per SM, so that one CTA's barriers, softmax, prologue and epilogue
// overlap the other's MMAs. m64n32 keeps the double-buffered pipeline with 32-key tiles; m64n64 is
// FlashAttention-2's hdim-256 tile on H100 (64 x 64, one K and one V buffer, V(n) copied during
// S = Q K^T and K(n+1) during softmax and P V). Both take (64 + 4 * 32) or (64 + 2 * 64) rows of
// shared memory: 99 KB at hdim 256, two CTAs in the SM's 228 KB.
// Shared-memory rows: fast at hdim 64, 128, 192 and 256 (a row of whole 128-byte lines) keeps rows hdim
// wide with the 16-byte chunk c of row r at chunk c ^ (r % 8) (swizzled), so that each 128-byte line a
// cp.async warp instruction copies lands in one aligned 128-byte segment of shared memory: one L2
// request per line. Padded rows (hdim + 8 elements; fast at hdim 32 and 96, and the other variants)
// shift every line by 16 bytes per row, which splits most lines into two requests.
// padded (hdim 64-256): fast's tiles on padded rows, for the layout's A/B. m64n64sw (hdim 192, 256):
// m64n64's tile on swizzled rows, O staged as fast's is.
// New values go at the end: a demangled kernel name carries the enum's number (core/work_split.cpp).
enum class TileVariant { fast, small, warps8, m64n32, m64n64, padded, m64n64sw };
// Every variant, in the enum's order (a demangled name's number indexes it).
inline constexpr TileVariant kTileVariants[] = {TileVariant::fast,   TileVariant::small,    TileVariant::warps8,
                                                TileVariant::m64n32, TileVariant::m64n64,   TileVariant::padded,
                                                TileVariant::m64n64sw};

struct TileConfig {
  int block_m = 0;             // query rows per CTA
  int block_n = 0;             // keys per K/V tile
  int warps = 0;               // warps per CTA
  int m_tiles_per_warp = 0;    // 16-row MMA tiles per warp: block_m = 16 * warps * m_tiles_per_warp
  bool q_in_registers = false; // hold Q's A-operand fragments in registers for the whole CTA
  int min_blocks_per_sm = 1;   // __launch_bounds__ hint: caps registers at 64K / (threads * this)
  // 2: K and V double-buffered, tile n + 1 copied while tile n is computed (one barrier per tile).
  // 1: one K and one V buffer; V(n) is copied during S = Q K^T, K(n + 1) during softmax and P V
  // (two barriers per tile, FlashAttention-2's schedule).
  int kv_buffers = 2;
  // Shared-memory rows hdim wide with XOR-swizzled 16-byte chunks (see TileVariant); else hdim +
  // kSmemPadElems wide.
  bool swizzled = false;
  // The epilogue stages each warp's O rows in shared memory and writes them as whole 16-byte chunks;
  // else every lane stores its fragments' 4-byte pairs straight to global memory.
  bool staged_o = false;
  // MMA steps of S = Q K^T and O += P V whose shared-memory fragments are loaded ahead of the step
  // they feed (0: each step loads its own fragments right before its MMAs).
  int fragment_lookahead = 0;
  // Q, K and V tiles of whole 128-byte rows are copied a line at a time (thread t: chunk t % 8 of a
  // line of row t / 8 + a multiple of threads / 8, so each copy is a per-thread base plus a constant);
  // else each thread copies consecutive chunks of the tile in order (the only order for hdim 32 and 96).
  bool copy_by_lines = true;
  constexpr bool operator==(const TileConfig&) const = default;
};

constexpr int kMmaRows = 16;      // m16n8k16
constexpr int kSmemPadElems = 8;  // 16 bytes of padding per shared-memory row (bank conflicts)

// Head dims with instantiated kernels (one translation unit each, fused_d<hdim>.cu).
inline constexpr int kHeadDims[] = {32, 64, 96, 128, 192, 256};

constexpr bool supported_hdim(int hdim) {
  for (int h : kHeadDims)
    if (h == hdim) return true;
  return false;
}

// small and warps8 are instantiated at hdim 64 and 128 only, m64n32, m64n64 and m64n64sw at 192 and
// 256 only, padded where fast's rows are swizzled (they exist to compare tile shapes and layouts).
constexpr bool supported_variant(int hdim, TileVariant variant) {
  if (!supported_hdim(hdim)) return false;
  switch (variant) {
    case TileVariant::fast: return true;
    case TileVariant::small:
    case TileVariant::warps8: return hdim == 64 || hdim == 128;
    case TileVariant::m64n32:
    case TileVariant::m64n64:
    case TileVariant::m64n64sw: return hdim == 192 || hdim == 256;
    case TileVariant::padded: return hdim % 64 == 0;  // where fast's rows are swizzled
  }
  return false;
}

// The head dims a variant other than fast exists at, for the refusal's message.
constexpr std::string_view variant_hdims_text(TileVariant variant) {
  switch (variant) {
    case TileVariant::fast: return "32, 64, 96, 128, 192 and 256";
    case TileVariant::small:
    case TileVariant::warps8: return "64 and 128";
    case TileVariant::m64n32:
    case TileVariant::m64n64:
    case TileVariant::m64n64sw: return "192 and 256";
    case TileVariant::padded: return "64, 128, 192 and 256";
  }
  return "";
}

constexpr TileConfig tile_config(int hdim, TileVariant variant) {
  switch (variant) {
    case TileVariant::fast:
      // Up to hdim 128: 4 warps x 32 rows, so that K/V fragments loaded from shared memory once serve
      // two MMA row tiles (half the shared-memory traffic per FLOP of 16 rows per warp). Q stays in
      // registers only when it is small enough (hdim <= 64: at most 32 registers) to leave room for the
      // O accumulators (hdim / 2 registers per row tile). At hdim 128 the O accumulators take 128
      // registers and 64-key tiles spilled, so the key tile is 32 there; hdim 96 (96 accumulator
      // registers) keeps 64-key tiles.
      // Above 128 two row tiles per warp no longer fit in 255 registers: 8 warps x 16 rows keep the
      // 128-row CTA (each K/V tile loaded from L2 once per 128 query rows) with hdim / 2 accumulator
      // registers per thread, one CTA per SM (registers and shared memory both allow only one), and
      // 64-key tiles: half the barriers and softmax passes per key of 32-key tiles.
      // O is staged in shared memory for the write except at hdim 128, where it was slower (H200 A/B
      // in docs/kernels.md: staged 0-6% faster at the other head dims, 2% slower at 128).
      // Fragments are loaded one MMA step ahead at hdim 128 only: 0-1.3% faster there, 0.5-5% slower
      // at hdim 32 and 96, no change at 64, 192 and 256 (docs/kernels.md).
      // Tiles are copied by lines except at hdim 256, where it was 1% slower for this tile (by lines
      // 1.3-4% faster at hdim 64, 128 and 192, docs/kernels.md).
      if (hdim > 128) return {128, 64, 8, 1, false, 1, 2, hdim % 64 == 0, true, 0, hdim != 256};
      return {128, hdim <= 96 ? 64 : 32, 4, 2, hdim <= 64, 2, 2, hdim % 64 == 0, hdim != 128, hdim == 128 ? 1 : 0};
    case TileVariant::small:
      return {64, 32, 4, 1, true, 2};
    case TileVariant::warps8:
      return {128, 64, 8, 1, hdim <= 64, 1};
    case TileVariant::m64n32:
      return {64, 32, 4, 1, false, 2, 2};
    case TileVariant::m64n64:
      return {64, 64, 4, 1, false, 2, 1};
    case TileVariant::padded: {
      TileConfig c = tile_config(hdim, TileVariant::fast);
      c.swizzled = false;
      return c;
    }
    case TileVariant::m64n64sw:
      return {64, 64, 4, 1, false, 2, 1, true, true};
  }
  return {};
}

constexpr int threads_of(const TileConfig& c) { return c.warps * 32; }

// Elements per shared-memory row of Q, K and V.
constexpr int smem_row_elems(const TileConfig& c, int hdim) { return c.swizzled ? hdim : hdim + kSmemPadElems; }

// Q tile plus kv_buffers K and as many V tiles.
constexpr size_t smem_bytes(const TileConfig& c, int hdim, int elem_bytes) {
  return static_cast<size_t>(c.block_m + 2 * c.kv_buffers * c.block_n) * smem_row_elems(c, hdim) * elem_bytes;
}

// Query-row blocks of one (batch, head).
constexpr long long m_blocks(const TileConfig& c, long long seq_q) {
  return (seq_q + c.block_m - 1) / c.block_m;
}

// The first key tile the CTA whose first query row is m0 visits: 0, or with a window the tile of
// its first row's first key (tiles wholly before the window are never loaded).
constexpr long long first_key_tile(TileConfig c, long long m0, long long seq_q, long long seq_k, bool causal,
                                   long long window = 0) {
  const KeySpan span = rows_key_span(m0, c.block_m, seq_q, seq_k, causal, window);
  return span.end > span.begin ? span.begin / c.block_n : 0;
}

// Number of key tiles that CTA visits, from first_key_tile on. With the bottom-right causal mask,
// row i sees keys j <= i + seq_k - seq_q, so tiles past the CTA's last row's limit are skipped; a
// window also skips the tiles before its first row's window; zero when no row of the CTA sees any key.
constexpr long long key_tiles(TileConfig c, long long m0, long long seq_q, long long seq_k, bool causal,
                              long long window = 0) {
  const KeySpan span = rows_key_span(m0, c.block_m, seq_q, seq_k, causal, window);
  if (span.end <= span.begin) return 0;
  return (span.end + c.block_n - 1) / c.block_n - span.begin / c.block_n;
}

// Whether key tile n_block needs per-element masking for the CTA starting at m0: it runs past seq_k,
// or some of its keys lie beyond the first row's limit (causal, or a window without it), or before
// the last row's window start.
constexpr bool tile_needs_mask(TileConfig c, long long m0, long long n_block, long long seq_q,
                               long long seq_k, bool causal, long long window = 0) {
  const long long n0 = n_block * c.block_n;
  if (n0 + c.block_n > seq_k) return true;
  const long long p_first = m0 + seq_k - seq_q, p_last = m0 + c.block_m - 1 + seq_k - seq_q;
  if (causal && n0 + c.block_n - 1 > p_first) return true;
  if (window <= 0) return false;
  if (!causal && n0 + c.block_n - 1 >= p_first + window) return true;
  return n0 <= p_last - window;
}

constexpr std::string_view to_string(TileVariant v) {
  switch (v) {
    case TileVariant::fast: return "fast";
    case TileVariant::small: return "small";
    case TileVariant::warps8: return "warps8";
    case TileVariant::m64n32: return "m64n32";
    case TileVariant::m64n64: return "m64n64";
    case TileVariant::padded: return "padded";
    case TileVariant::m64n64sw: return "m64n64sw";
  }
  return "?";
}

// A variant's name (to_string) -> that variant; "" -> fast; else nullopt. (An unset or empty
// ATTNPROF_FUSED_CONFIG runs default_variant's choice for the shape, below.)
constexpr std::optional<TileVariant> parse_variant(std::string_view text) {
  if (text.empty()) return TileVariant::fast;
  for (TileVariant v : kTileVariants)
    if (text == to_string(v)) return v;
  return std::nullopt;
}

// The longest key range at which `fused` runs m64n64sw rather than fast without a mask (with the causal
// mask it runs m64n64sw at any length).
inline constexpr long long kTwoCtaUnmaskedKeys = 2048;

// Whether a shape's head dims have m64n64sw (192 or 256, the value head dim the same).
constexpr bool has_two_cta_tile(int hdim, int value_hdim) {
  return value_hdim == hdim && supported_variant(hdim, TileVariant::m64n64sw);
}

// The variant `fused` runs when ATTNPROF_FUSED_CONFIG is unset: fast, except on a dense batch at hdim 192
// or 256 (value head dim the same) without a window, with the causal mask or at most
// kTwoCtaUnmaskedKeys keys, where m64n64sw's two 64-row CTAs per SM overlap one CTA's prologue, softmax
// and O write with the other's MMAs, and its diagonal tiles mask half as many scores. H200
// (docs/kernels.md), m64n64sw against fast: causal 1.01-1.12x at hdim 192 and 1.00-1.11x at 256 over
// 1k-8k keys; without a mask 1.01-1.03x at 192 and 1.01-1.02x at 256 up to 2048 keys, 0.98-1.01x at
// 4096, 0.94x at 8192.
constexpr TileVariant default_variant(int hdim, int value_hdim, bool causal, long long seq_k, bool windowed,
                                      bool varlen) {
  const bool two_ctas = (causal || seq_k <= kTwoCtaUnmaskedKeys) && !windowed && !varlen;
  return has_two_cta_tile(hdim, value_hdim) && two_ctas ? TileVariant::m64n64sw : TileVariant::fast;
}

// The backward pass (fused_bwd_kernel.cuh, FlashAttention-2's algorithm): one CTA owns block_n keys
// of one (batch, kv head), 16 per warp, and walks every query head of its GQA group and every block of
// block_m query rows that sees one of its keys, accumulating dK and dV of its keys in registers; dQ is
// summed over the key blocks with fp32 atomics into a workspace. dq_warps_m of the warps split dQ's
// block_m rows in dQ += dS K, the rest its columns.
struct BwdTileConfig {
  int block_m = 0;       // query rows per step of a CTA's loop
  int block_n = 0;       // keys per CTA: 16 per warp
  int warps = 0;
  int dq_warps_m = 0;    // warps along dQ's rows in dQ += dS K (warps / dq_warps_m along its columns)
  // S^T, dP^T, dV and dK take a block's rows block_m / query_parts at a time: fewer accumulator
  // registers (the part's S^T and dP^T), for K's and V's fragments loaded once per part.
  int query_parts = 1;
  // Q, dO, K and V tiles are copied a line at a time (load_tile_async in fused_kernel.cuh).
  bool copy_by_lines = true;
  // Each warp loads the A fragments of its 16 rows of K and V once and keeps them in registers
  // (hdim / 2 registers per thread for both) instead of reloading them from shared memory for every
  // S^T and dP^T.
  bool kv_in_registers = false;
  constexpr bool operator==(const BwdTileConfig&) const = default;
};

// Head dims the backward is instantiated at (fused_bwd_d<hdim>.cu).
inline constexpr int kBwdHeadDims[] = {64, 128};

constexpr bool bwd_supported_hdim(int hdim) {
  for (int h : kBwdHeadDims)
    if (h == hdim) return true;
  return false;
}

// 8 warps x 16 keys (FlashAttention-2's 128-key CTA, so that dQ is summed with atomics over seq_k / 128
// key blocks): a warp holds dK and dV of its 16 keys (hdim / 2 registers each per thread) and the
// 16 x 64 tiles S^T and dP^T of a 64-row part in fp32 (32 registers each). The loop's time follows its
// shared-memory wavefronts (ldmatrix.x4 4 each, conflict-free 4-byte stores 1): against
// FlashAttention-2's backward on the H200, ours per MMA over theirs was 1.25 at hdim 64 and 1.18 at
// 128 for speeds of 0.78x and 0.85x at 4096 keys.
// Both head dims: 128 query rows per step in two parts of 64, so that dQ_block += dS K is 128 x hdim
// over the 128 keys split 4 x 2 (a warp 32 rows: 2 A loads per k-step for hdim / 32 B loads and
// hdim / 4 MMAs), and a block takes one barrier pair per 128 rows. Per warp and 128 rows, against
// 64-row steps (dQ split 2 x 4): ldmatrix.x4 for dQ 64 -> 48 at hdim 128 and 48 -> 32 at 64, barriers
// 4 -> 2. At hdim 128 the shared memory is 226 KB, under sm_90's 227 KB for one CTA.
// hdim 64: K's and V's fragments also stay in registers (32 per thread): S^T and dP^T take 4 B loads
// per k-step instead of 1 A + 4 B. Per warp and 128 rows, ldmatrix.x4 192 -> 160 for the same 320 MMAs;
// with dS^T's 32 stores, wavefronts 800 -> 672.
// hdim 128 keeps K and V in shared memory: dK and dV already take 128 registers per thread.
constexpr BwdTileConfig bwd_tile_config(int hdim) {
  if (hdim == 64) return {128, 128, 8, 4, 2, true, true};
  return {128, 128, 8, 4, 2, true, false};
}

constexpr int bwd_threads_of(BwdTileConfig c) { return c.warps * 32; }

// K and V (block_n rows each), two buffers of Q and of dO (block_m rows), hdim-wide swizzled rows;
// dS^T (block_n rows of block_m); two buffers of block_m floats for LSE and for D.
constexpr size_t bwd_smem_bytes(BwdTileConfig c, int hdim, int elem_bytes) {
  return static_cast<size_t>(2 * c.block_n + 4 * c.block_m) * hdim * elem_bytes +
         static_cast<size_t>(c.block_n) * c.block_m * elem_bytes + static_cast<size_t>(4 * c.block_m) * 4;
}

// Key blocks of one (batch, kv head): one CTA each.
constexpr long long bwd_key_blocks(BwdTileConfig c, long long seq_k) {
  return (seq_k + c.block_n - 1) / c.block_n;
}

// Query rows [begin, end) that see at least one of the keys [n0, n0 + keys) under core/shape.hpp's
// masks (p = i + seq_k - seq_q): row i's first visible key, p - window + 1 with a window, and its
// limit, p + 1 causal or p + window with a window alone, both grow with i, so these rows are one
// range: those whose limit passes n0 and whose first key is before n0 + keys. Empty (begin >= end) when
// no row sees one of them.
struct RowSpan {
  long long begin = 0, end = 0;
};
constexpr RowSpan rows_seeing_keys(long long n0, long long keys, long long seq_q, long long seq_k, bool causal,
                                   long long window) {
  const long long offset = seq_k - seq_q;
  long long begin = causal ? n0 - offset : window > 0 ? n0 - window + 1 - offset : 0;
  long long end = window > 0 ? n0 + keys + window - 1 - offset : seq_q;
  begin = begin > 0 ? begin : 0;
  end = end < seq_q ? end : seq_q;
  return {begin, end};
}

// The keys [begin, end) query row i sees under core/shape.hpp's masks, in the kernels' 32-bit
// arithmetic (p = i + seq_k - seq_q): a window starts at p - window + 1; the end is p + 1 causal,
// p + window with a window alone, else seq_k, and at most seq_k; a row past seq_q sees none (end 0).
// Both backward kernels mask a score whose key lies outside.
struct RowKeys {
  int begin = 0, end = 0;
};
constexpr RowKeys row_keys(int i, int seq_q, int seq_k, bool causal, int window) {
  const int pos = i + seq_k - seq_q;
  const int key_end = causal ? pos + 1 : window > 0 ? pos + window : seq_k;
  const int key_limit = i < seq_q ? std::min(seq_k, key_end) : 0;
  const int key_begin = window > 0 ? pos - window + 1 : 0;
  return {key_begin, key_limit};
}

// Whether the block of rows [m0, m0 + block_m) and keys [n0, n0 + block_n) needs per-element masking:
// it runs past seq_q or seq_k, or some key lies beyond the first row's limit (causal, or a window
// without it) or before the last row's window start.
constexpr bool bwd_block_needs_mask(BwdTileConfig c, long long m0, long long n0, long long seq_q,
                                    long long seq_k, bool causal, long long window) {
  if (m0 + c.block_m > seq_q || n0 + c.block_n > seq_k) return true;
  const long long p_first = m0 + seq_k - seq_q, p_last = p_first + c.block_m - 1;
  const long long n_last = n0 + c.block_n - 1;
  if (causal && n_last > p_first) return true;
  if (window <= 0) return false;
  if (!causal && n_last >= p_first + window) return true;
  return n0 <= p_last - window;
}

}  // namespace attnprof::kernels::fused
