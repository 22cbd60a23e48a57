// Tile shapes and shared-memory layout of the fused-sm90 kernel, as constexpr functions usable from the
// host (launch configuration) and the device.
//
// CTA: one producer warpgroup (one thread issues every TMA load) and two consumer warpgroups of 64
// query rows each, so work tiles of 128 query rows of one (batch, head); a CTA runs several in turn. K and V go through a ring of
// kv_stages(hdim) stages of block_n(hdim) keys. Every tile is stored as 64-column panels of 128-byte rows
// with TMA's 128-byte swizzle, which is also the layout wgmma's descriptors read.
//
// Head dims: the tile's width is a whole number of 64-column panels (tile_hdim): 64, 128, 192, 256.
// hdim 32 and 96 run the 64- and 128-column tiles: TMA zero-fills the columns past hdim on every load
// (so they add nothing to Q K^T) and clips them on the O store, at the price of MMAs on zeros (half of
// them at hdim 32, a quarter at 96). Above 128 columns the O accumulators (hdim / 2 registers per
// consumer thread) and shared memory leave room for narrower key tiles only (block_n), and none for an
// O staging buffer: O is stored from registers.
// The tile headers live in src/core/tiles (not beside their kernels) because the diagnosis reads the
// same shapes to judge the kernel that ran (core/work_split.cpp): kernels include core, never the reverse.
#pragma once
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/tiles/key_span.hpp"

namespace attnprof::kernels::fused_sm90 {

// overlap: S of the next key tile is computed by the tensor cores while the softmax of the current
// tile runs. pingpong: overlap, plus the two consumer warpgroups take turns issuing their MMAs (named
// barriers), so that one's softmax runs under the other's MMAs. serial: each consumer warpgroup waits
// for every MMA before the softmax (the plain schedule, kept to tell a scheduling bug from a layout
// bug). The default picks per shape (default_schedule).
enum class Schedule { overlap, pingpong, serial };

constexpr int kBlockM = 128;            // query rows per CTA
constexpr int kConsumerWarpgroups = 2;  // 64 query rows each
constexpr int kWarpgroupThreads = 128;
constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
constexpr int kConsumerThreads = kWarpgroupThreads * kConsumerWarpgroups;
constexpr int kPanelCols = 64;          // elements per 128-byte swizzled row
constexpr int kProducerRegs = 24;       // setmaxnreg after the role split
constexpr int kConsumerRegs = 240;      // 128 * 24 + 256 * 240 <= 65536

inline constexpr int kHeadDims[] = {32, 64, 96, 128, 192, 256};
constexpr bool supported_hdim(int hdim) {
  for (int h : kHeadDims)
    if (h == hdim) return true;
  return false;
}
// The functions below take the tile's width (tile_hdim(hdim)), which is what the kernel is
// instantiated for.
constexpr int tile_hdim(int hdim) { return (hdim + kPanelCols - 1) / kPanelCols * kPanelCols; }
// Keys per K/V tile: 128 up to 128 columns; 64 at 192 (three stages); 80 at 256, the most that two
// stages of K and V (4 x 80 rows x 512 bytes) and Q (64 KB) leave room for.
constexpr int block_n(int tile) { return tile <= 128 ? 128 : tile == 192 ? 64 : 80; }
constexpr int kv_stages(int tile) { return tile == 128 || tile == 256 ? 2 : 3; }
constexpr bool stages_o(int tile) { return tile <= 128; }  // O leaves through shared memory and TMA
constexpr int panels(int tile) { return tile / kPanelCols; }

constexpr uint32_t q_panel_bytes() { return kBlockM * 128; }
constexpr uint32_t kv_panel_bytes(int tile) { return block_n(tile) * 128; }
constexpr uint32_t q_bytes(int tile) { return panels(tile) * q_panel_bytes(); }
constexpr uint32_t kv_tile_bytes(int tile) { return panels(tile) * kv_panel_bytes(tile); }

// O of one consumer warpgroup (64 rows) staged for its TMA store, in the same swizzled panels.
constexpr uint32_t o_panel_bytes() { return 64 * 128; }
constexpr uint32_t o_stage_bytes(int tile) { return stages_o(tile) ? panels(tile) * o_panel_bytes() : 0; }

// Shared memory, from a 1024-byte aligned base: Q | K stages | V stages | O staging (one per consumer
// warpgroup, when staged) | mbarriers.
constexpr uint32_t k_offset(int tile) { return q_bytes(tile); }
constexpr uint32_t v_offset(int tile) { return k_offset(tile) + kv_stages(tile) * kv_tile_bytes(tile); }
constexpr uint32_t o_offset(int tile) { return v_offset(tile) + kv_stages(tile) * kv_tile_bytes(tile); }
constexpr uint32_t barrier_offset(int tile) { return o_offset(tile) + kConsumerWarpgroups * o_stage_bytes(tile); }
// Q full, Q empty, then per stage: K full, V full, K/V empty.
constexpr int barrier_count(int hdim) { return 2 + 3 * kv_stages(hdim); }
constexpr size_t kAlignSlack = 1024;  // the dynamic shared memory base is rounded up to 1024 bytes
constexpr size_t smem_bytes(int hdim) {
  return barrier_offset(hdim) + 8 * static_cast<size_t>(barrier_count(hdim)) + kAlignSlack;
}

constexpr long long m_blocks(long long seq_q) { return (seq_q + kBlockM - 1) / kBlockM; }

// The first key tile the work tile starting at query row m0 visits, in tiles of bn keys: 0, or with a
// window the tile of its first row's first key (tiles wholly before every row's window are never loaded).
constexpr long long first_key_tile(long long m0, long long seq_q, long long seq_k, bool causal, long long window,
                                   int bn) {
  const KeySpan span = rows_key_span(m0, kBlockM, seq_q, seq_k, causal, window);
  return span.end > span.begin ? span.begin / bn : 0;
}

// Key tiles the work tile starting at query row m0 visits, from first_key_tile on: with the
// bottom-right causal mask, row i sees keys j <= i + seq_k - seq_q, so tiles past the last row's limit
// are skipped (and with a window the tiles before the first row's window); 0 when no row sees a key.
constexpr long long key_tiles(long long m0, long long seq_q, long long seq_k, bool causal, long long window,
                              int bn) {
  const KeySpan span = rows_key_span(m0, kBlockM, seq_q, seq_k, causal, window);
  if (span.end <= span.begin) return 0;
  return (span.end + bn - 1) / bn - span.begin / bn;
}

// Whether key tile n_block needs per-element masking for the work tile starting at m0 (the same
// test as fused::tile_needs_mask): it runs past seq_k, past the first row's causal or window limit, or
// starts before the last row's window.
constexpr bool tile_needs_mask(long long m0, long long n_block, long long seq_q, long long seq_k, bool causal,
                               long long window, int bn) {
  const long long n0 = n_block * bn;
  if (n0 + bn > seq_k) return true;
  const long long p_first = m0 + seq_k - seq_q, p_last = m0 + kBlockM - 1 + seq_k - seq_q;
  if (causal && n0 + bn - 1 > p_first) return true;
  if (window <= 0) return false;
  if (!causal && n0 + bn - 1 >= p_first + window) return true;
  return n0 <= p_last - window;
}

// Work tiles are the query-row blocks of every (batch, head), bh-major: the blocks of one head are
// adjacent, so CTAs running at the same time share its K/V in L2. The grid is persistent by default:
// sm_count CTAs, CTA b walking tiles b, b + grid, b + 2 grid, ... (a static round robin), so that the
// loads of a CTA's next tile overlap the end of its current one.
//
// With a causal mask or a sliding window the tiles' costs differ (n key tiles, key_tiles with the
// window, plus a fixed part, taken as kTileOverheadKeyTiles), and the order of a head's query blocks
// decides how the round robin spreads them. Two orders, both heaviest block first within a head when
// causal (without the causal mask a window's blocks keep their natural order, light at both ends):
// - plain: position p of every head is block p. A grid that is a multiple of the blocks per head
//   (132 SMs, 4 blocks at seq 512) then hands each CTA the same block of every head it visits, so a
//   quarter of the CTAs carry only the heaviest tiles (1.33x the mean at seq 512).
// - rotated: position p of head h is block (p + h) mod blocks, so each CTA's blocks cycle through
//   every cost; better at short sequences, worse at some long ones (seq 4096-8192 at 132 SMs).
// plan_grid evaluates both and takes the lighter busiest CTA. When even that CTA carries more than
// kMaxStaticImbalance times the greedy bound (total / grid + heaviest tile), the grid is one CTA per
// tile, in plain order (the hardware then hands out tiles dynamically, heaviest first). Measured on
// the H200 with the plain order: b1 h16 s16384 d128 causal ran at 390 TFLOP/s persistent (busiest
// 1.38x the bound) and 559-564 with one CTA per tile; shapes within 1.07x of it ran best persistent.
constexpr long long kTileOverheadKeyTiles = 2;
constexpr double kMaxStaticImbalance = 1.15;

// Position of tile t's query block within its head's order (causal: heaviest first, 0 = the head's
// last block; a window without the causal mask: 0 = the head's first block).
constexpr long long causal_m_index(long long tile, long long blocks, bool rotated) {
  return rotated ? (tile % blocks + tile / blocks) % blocks : tile % blocks;
}

// The query block work tile t covers within its head, in the kernel's tile order.
constexpr long long work_tile_m_block(long long tile, long long blocks, bool causal, bool rotated) {
  const long long position = causal_m_index(tile, blocks, rotated);
  return causal ? blocks - 1 - position : position;
}

// What the static round robin weighs work tile t with: the key tiles it visits plus the fixed part.
constexpr long long work_tile_cost(long long tile, long long seq_q, long long seq_k, bool causal, long long window,
                                   bool rotated, int bn) {
  const long long m_block = work_tile_m_block(tile, m_blocks(seq_q), causal, rotated);
  return key_tiles(m_block * kBlockM, seq_q, seq_k, causal, window, bn) + kTileOverheadKeyTiles;
}

// The static round robin's busiest CTA and the greedy bound, in key tiles.
struct RoundRobinLoad {
  long long busiest = 0;
  double greedy_bound = 0;
};
inline RoundRobinLoad causal_round_robin_load(long long seq_q, long long seq_k, long long batch_heads,
                                              long long grid, bool rotated, bool causal, long long window,
                                              int bn) {
  const long long blocks = m_blocks(seq_q);
  const long long tiles = blocks * batch_heads;
  auto cost = [&](long long t) { return work_tile_cost(t, seq_q, seq_k, causal, window, rotated, bn); };
  long long total = 0, heaviest = 0;
  RoundRobinLoad load;
  for (long long t = 0; t < blocks; ++t) heaviest = std::max(heaviest, cost(t));
  for (long long b = 0; b < grid; ++b) {
    long long mine = 0;
    for (long long t = b; t < tiles; t += grid) mine += cost(t);
    total += mine;
    load.busiest = std::max(load.busiest, mine);
  }
  load.greedy_bound = static_cast<double>(total) / static_cast<double>(grid) + static_cast<double>(heaviest);
  return load;
}

struct GridPlan {
  long long grid = 0;    // CTAs launched
  bool rotated = false;  // tile order of a causal or windowed shape (causal_m_index)
};

inline GridPlan plan_grid(long long seq_q, long long seq_k, long long batch_heads, bool causal, int sm_count,
                          long long window, int bn) {
  const long long tiles = m_blocks(seq_q) * batch_heads;
  if (sm_count <= 0 || tiles <= sm_count) return {tiles, false};
  if (!causal && window <= 0) return {sm_count, false};  // every tile costs the same
  const RoundRobinLoad plain =
      causal_round_robin_load(seq_q, seq_k, batch_heads, sm_count, false, causal, window, bn);
  const RoundRobinLoad rotated =
      causal_round_robin_load(seq_q, seq_k, batch_heads, sm_count, true, causal, window, bn);
  const bool rotate = rotated.busiest < plain.busiest;
  const RoundRobinLoad& best = rotate ? rotated : plain;
  if (static_cast<double>(best.busiest) > kMaxStaticImbalance * best.greedy_bound) return {tiles, false};
  return {sm_count, rotate};
}

// Measured on the H200 (fa-bench, bf16, persistent grid, one run each): without a causal mask at
// hdim 128 overlap beat pingpong from seq 4096 up (583 vs 578, 607 vs 580, 590 vs 576 TFLOP/s at 4k,
// 8k, 16k) and tied below; at hdim 64 without a mask they were within 2% from seq 1024 up and
// pingpong 5% ahead at 512; with a causal mask pingpong was level or ahead (+5% at hdim 64, 16k).
// At 256 columns (16k tokens, seq 1k-8k, bf16) serial beat both, causal or not: 540-668 TFLOP/s against
// 487-577 (overlap) without a mask, 399-530 against 366-485 (pingpong) with one; there the O
// accumulators leave no registers for the next tile's S and P that the overlapped schedules keep live.
// At 192 columns overlap and pingpong were within 2% and serial 3-9% behind.
constexpr Schedule default_schedule(int tile, bool causal) {
  if (tile >= 256) return Schedule::serial;
  return tile >= 128 && !causal ? Schedule::overlap : Schedule::pingpong;
}

// ATTNPROF_FUSED_SM90_CONFIG: unset or "" -> nullopt inside a valid choice (default_schedule per
// shape); "overlap", "pingpong", "serial"; anything else is invalid.
struct ScheduleChoice {
  bool valid = false;
  std::optional<Schedule> fixed;  // nullopt: default_schedule
};
constexpr ScheduleChoice parse_schedule(std::string_view text) {
  if (text.empty()) return {true, std::nullopt};
  if (text == "overlap") return {true, Schedule::overlap};
  if (text == "pingpong") return {true, Schedule::pingpong};
  if (text == "serial") return {true, Schedule::serial};
  return {};
}
constexpr std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::overlap: return "overlap";
    case Schedule::pingpong: return "pingpong";
    case Schedule::serial: return "serial";
  }
  return "?";
}

// fp8 prefill (dtype fp8_e4m3: Q, K and V in E4M3, O in bf16). One byte per element, so a 128-byte
// swizzled row holds 128 elements and wgmma takes k = 32 per instruction, with both operands K-major
// (fp8 wgmma has no transpose). S = Q K^T reads Q and K as the 16-bit path does, at twice the elements
// per row. P V needs V K-major: a first launch writes V^T, [batch * kv_heads, hdim, keys padded to
// block_n], and the kernel reads its tiles (hdim rows of 128 keys) with TMA. The P fragment a wgmma takes
// from registers is not the S accumulator's layout: a lane's four bytes of one k32 slice are keys
// 2t, 2t + 1, 2t + 8, 2t + 9 of the accumulator (t = lane % 4), where the MMA reads them as keys 4t .. 4t + 3.
// P V sums over the keys, so V^T holds its keys in that same order (fp8_vt_source_key) and P goes to
// the MMA without a shuffle.
namespace fp8 {
constexpr int kPanelCols = 128;  // elements per 128-byte swizzled row
constexpr bool supported_hdim(int hdim) { return hdim == 128 || hdim == 256; }
constexpr int block_n() { return 128; }  // keys per K tile, and one 128-byte row of a V^T tile
constexpr int kv_stages(int hdim) { return hdim == 128 ? 3 : 2; }
constexpr bool stages_o(int hdim) { return hdim <= 128; }  // O (bf16) leaves through shared memory and TMA
constexpr int panels(int hdim) { return hdim / kPanelCols; }  // of a Q or K row
constexpr uint32_t q_panel_bytes() { return kBlockM * 128; }
constexpr uint32_t k_panel_bytes() { return block_n() * 128; }
constexpr uint32_t q_bytes(int hdim) { return panels(hdim) * q_panel_bytes(); }
// A K tile (block_n keys x hdim bytes) and a V^T tile (hdim rows x block_n keys) are the same size.
constexpr uint32_t kv_tile_bytes(int hdim) { return static_cast<uint32_t>(block_n() * hdim); }
// O of one consumer warpgroup in bf16, staged as the 16-bit path's 64-column panels.
constexpr uint32_t o_stage_bytes(int hdim) { return stages_o(hdim) ? (hdim / 64) * o_panel_bytes() : 0; }
constexpr uint32_t k_offset(int hdim) { return q_bytes(hdim); }
constexpr uint32_t v_offset(int hdim) { return k_offset(hdim) + kv_stages(hdim) * kv_tile_bytes(hdim); }
constexpr uint32_t o_offset(int hdim) { return v_offset(hdim) + kv_stages(hdim) * kv_tile_bytes(hdim); }
constexpr uint32_t barrier_offset(int hdim) { return o_offset(hdim) + kConsumerWarpgroups * o_stage_bytes(hdim); }
constexpr int barrier_count(int hdim) { return 2 + 3 * kv_stages(hdim); }
constexpr size_t smem_bytes(int hdim) {
  return barrier_offset(hdim) + 8 * static_cast<size_t>(barrier_count(hdim)) + kAlignSlack;
}
// Keys of one sequence in V^T: seq_k padded to whole tiles (the padding holds zeros).
constexpr long long vt_keys(long long seq_k) { return (seq_k + block_n() - 1) / block_n() * block_n(); }
// The key of V whose row column c of a V^T row holds: inside every 16 keys, MMA position 4t + j
// (j = 0..3) holds key 2t + (j % 2) + 8 (j / 2), the key the S accumulator keeps in that byte.
constexpr long long vt_source_key(long long c) {
  const long long within = c % 16, t = within / 4, j = within % 4;
  return c - within + 2 * t + (j % 2) + 8 * (j / 2);
}
// write_vt (fused_sm90_vt.cu) builds V^T in registers. A CTA of kVtThreads (four warps) covers 128 keys
// x 128 columns of one (batch, kv head). Lane 4 g + t of a warp reads, for 32 columns (two 16-byte loads
// per key: whole 32-byte sectors), the four keys of 16-key group g that fill positions 4t .. 4t + 3 of V^T
// (vt_source_key(4t + i), i = 0..3), and turns each four row words into four column words (vt_column_word);
// the warp's 32 lanes then write 128 contiguous bytes of a V^T row per store.
constexpr int kVtThreads = 128;
constexpr int kVtKeysPerCta = 128;
constexpr int kVtColsPerCta = 128;
constexpr int kVtColsPerThread = 32;
constexpr long long vt_ctas(long long seq_k, int hdim, long long heads_total) {
  return vt_keys(seq_k) / kVtKeysPerCta * (hdim / kVtColsPerCta) * heads_total;
}
// The byte permutes of the 4 x 4 byte transpose: rows 0 and 1 (and 2 and 3) interleaved byte by byte,
// low or high half, then the two interleaved halves joined. Selectors as PRMT (__byte_perm) reads them:
// byte i of the result is byte (s >> 4 i) & 7 of the pair, x's bytes 0-3 and y's 4-7.
constexpr unsigned kInterleaveLow = 0x5140u, kInterleaveHigh = 0x7362u, kJoinLow = 0x5410u, kJoinHigh = 0x7632u;
// PRMT's default mode (selectors 0-7) as the PTX manual defines it, for the host side of the permutes.
constexpr uint32_t prmt(uint32_t x, uint32_t y, unsigned s) {
  const uint64_t pair = (uint64_t{y} << 32) | x;
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) out |= static_cast<uint32_t>((pair >> (8 * ((s >> (4 * i)) & 7))) & 0xffu) << (8 * i);
  return out;
}
// Column word b (0..3) of four row words: byte i is byte b of row i. `perm` is PRMT (the kernel's
// __byte_perm, or a model of it).
template <class Perm>
constexpr uint32_t vt_column_word(Perm perm, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3, int b) {
  const unsigned interleave = b < 2 ? kInterleaveLow : kInterleaveHigh;
  return perm(perm(r0, r1, interleave), perm(r2, r3, interleave), b % 2 == 0 ? kJoinLow : kJoinHigh);
}
constexpr Schedule default_schedule(int hdim, bool causal) {
  if (hdim >= 256) return Schedule::serial;
  return causal ? Schedule::pingpong : Schedule::overlap;
}
static_assert(smem_bytes(128) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(smem_bytes(256) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
}  // namespace fp8

// The backward's main stage (fused_sm90_bwd_kernel.cuh): one CTA per block of kBlockN keys of one
// (batch, kv head), walking the blocks of kBlockM query rows that see its keys in every query head of
// the GQA group. Warpgroup 0 produces (TMA loads of K, V and each block's Q and dO into a ring of
// kStages; LSE and D; the TMA reductions of each block's dQ into dq_accum), warpgroups 1 and 2
// consume, 64 keys each (wgmma's M), keeping their dK and dV in registers.
namespace bwd {
constexpr int kBlockN = 128;  // keys per CTA
constexpr int kWarpgroups = 2;  // consumer warpgroups
constexpr int kConsumerThreads = kWarpgroups * kWarpgroupThreads;
constexpr int kThreads = kWarpgroupThreads + kConsumerThreads;
constexpr int kStages = 2;     // Q, dO, LSE and D buffers (the producer loads block j + 1 during block j)
constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = 240;
constexpr int kDqPanelCols = 32;  // fp32 columns per 128-byte swizzled row of a dQ tile
inline constexpr int kHeadDims[] = {64, 128};
constexpr bool supported_hdim(int hdim) {
  for (int h : kHeadDims)
    if (h == hdim) return true;
  return false;
}
// Query rows per step (the N of S^T and dP^T, the K of dV and dK). hdim 64: 128, so that each
// warpgroup's S^T and dP^T are m64n128 (twice the MMA per barrier and per dQ reduction), dQ split by
// rows (warpgroup w the block's rows 64 w .. + 63, every column), and one dQ tile: two would pass
// sm_90's 227 KB by 72 bytes. hdim 128: 64 (dK and dV already take 128 registers per thread), dQ
// split by columns (warpgroup w columns w * 64 .. + 63), two dQ tiles: block j's reduction leaves
// while block j + 1 is computed.
constexpr int block_m(int hdim) { return hdim == 64 ? 128 : 64; }
constexpr bool dq_split_rows(int hdim) { return block_m(hdim) == 64 * kWarpgroups; }
constexpr int dq_buffers(int hdim) { return block_m(hdim) == 64 ? 2 : 1; }
// Tiles in 64-column panels of 128-byte swizzled rows (as the forward's, TMA's SWIZZLE_128B): K and V
// (kBlockN rows), kStages buffers each of Q and dO (block_m rows), two of dS^T (kBlockN rows of block_m
// queries: block_m / 64 panels), dq_buffers dQ tiles (block_m rows in panels of 32 fp32 columns), then
// kStages buffers each of LSE and D (block_m floats) and the mbarriers.
constexpr uint32_t kv_panel_bytes() { return kBlockN * 128; }
constexpr uint32_t q_panel_bytes(int hdim) { return block_m(hdim) * 128; }
constexpr uint32_t ds_panel_bytes() { return kBlockN * 128; }
constexpr uint32_t dq_panel_bytes(int hdim) { return block_m(hdim) * 128; }
constexpr uint32_t kv_bytes(int hdim) { return panels(hdim) * kv_panel_bytes(); }
constexpr uint32_t q_bytes(int hdim) { return panels(hdim) * q_panel_bytes(hdim); }
constexpr uint32_t ds_bytes(int hdim) { return kBlockN * block_m(hdim) * 2; }
constexpr uint32_t dq_bytes(int hdim) { return hdim / kDqPanelCols * dq_panel_bytes(hdim); }
constexpr uint32_t k_offset() { return 0; }
constexpr uint32_t v_offset(int hdim) { return kv_bytes(hdim); }
constexpr uint32_t q_offset(int hdim) { return 2 * kv_bytes(hdim); }
constexpr uint32_t do_offset(int hdim) { return q_offset(hdim) + kStages * q_bytes(hdim); }
constexpr uint32_t ds_offset(int hdim) { return do_offset(hdim) + kStages * q_bytes(hdim); }
constexpr uint32_t dq_offset(int hdim) { return ds_offset(hdim) + 2 * ds_bytes(hdim); }
constexpr uint32_t lse_offset(int hdim) { return dq_offset(hdim) + dq_buffers(hdim) * dq_bytes(hdim); }
constexpr uint32_t dsum_offset(int hdim) { return lse_offset(hdim) + kStages * block_m(hdim) * 4; }
constexpr uint32_t barrier_offset(int hdim) { return dsum_offset(hdim) + kStages * block_m(hdim) * 4; }
// K and V loaded; per stage full and empty; per dQ tile full and empty.
constexpr int barriers(int hdim) { return 1 + 2 * kStages + 2 * dq_buffers(hdim); }
constexpr size_t smem_bytes(int hdim) { return barrier_offset(hdim) + 8 * barriers(hdim) + kAlignSlack; }
// Key blocks (CTAs) per (batch, kv head).
constexpr long long key_blocks(long long seq_k) { return (seq_k + kBlockN - 1) / kBlockN; }
static_assert(smem_bytes(64) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(smem_bytes(128) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumerThreads <= 65536,
              "the register file holds both roles after setmaxnreg");
}  // namespace bwd

static_assert(smem_bytes(64) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(smem_bytes(128) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(smem_bytes(192) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(smem_bytes(256) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumerThreads <= 65536,
              "the register file holds both roles after setmaxnreg");

}  // namespace attnprof::kernels::fused_sm90
