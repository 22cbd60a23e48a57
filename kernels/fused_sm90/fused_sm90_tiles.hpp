// Tile shapes and shared-memory layout of the fused-sm90 kernel, as constexpr functions usable from the
// host (launch configuration) and the device.
//
// CTA: one producer warpgroup (one thread issues every TMA load) and two consumer warpgroups of 64
// query rows each, so 128 query rows of one (batch, head) per CTA. K and V go through a ring of
// kv_stages(hdim) stages of kBlockN keys. Every tile is stored as 64-column panels of 128-byte rows
// with TMA's 128-byte swizzle, which is also the layout wgmma's descriptors read.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace attnprof::kernels::fused_sm90 {

// overlap: S of the next key tile is computed by the tensor cores while the softmax of the current
// tile runs. pingpong (the default): overlap, plus the two consumer warpgroups take turns issuing
// their MMAs (named barriers), so that one's softmax runs under the other's MMAs; on the H200 it was
// 1-2% faster than overlap at hdim 128 and 16-22% at hdim 64 (bf16, batch 4, 16 heads, seq 2048 and
// 8192). serial: each consumer warpgroup waits for every MMA before the softmax (the plain reference
// schedule, kept to tell a scheduling bug from a layout bug).
enum class Schedule { overlap, pingpong, serial };

constexpr int kBlockM = 128;            // query rows per CTA
constexpr int kBlockN = 128;            // keys per K/V tile
constexpr int kConsumerWarpgroups = 2;  // 64 query rows each
constexpr int kWarpgroupThreads = 128;
constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
constexpr int kConsumerThreads = kWarpgroupThreads * kConsumerWarpgroups;
constexpr int kPanelCols = 64;          // elements per 128-byte swizzled row
constexpr int kProducerRegs = 24;       // setmaxnreg after the role split
constexpr int kConsumerRegs = 240;      // 128 * 24 + 256 * 240 <= 65536

constexpr bool supported_hdim(int hdim) { return hdim == 64 || hdim == 128; }
constexpr int kv_stages(int hdim) { return hdim <= 64 ? 3 : 2; }
constexpr int panels(int hdim) { return hdim / kPanelCols; }

constexpr uint32_t q_panel_bytes() { return kBlockM * 128; }
constexpr uint32_t kv_panel_bytes() { return kBlockN * 128; }
constexpr uint32_t q_bytes(int hdim) { return panels(hdim) * q_panel_bytes(); }
constexpr uint32_t kv_tile_bytes(int hdim) { return panels(hdim) * kv_panel_bytes(); }

// Shared memory, from a 1024-byte aligned base: Q | K stages | V stages | mbarriers.
constexpr uint32_t k_offset(int hdim) { return q_bytes(hdim); }
constexpr uint32_t v_offset(int hdim) { return k_offset(hdim) + kv_stages(hdim) * kv_tile_bytes(hdim); }
constexpr uint32_t barrier_offset(int hdim) { return v_offset(hdim) + kv_stages(hdim) * kv_tile_bytes(hdim); }
// Q full, then per stage: K full, V full, K/V empty.
constexpr int barrier_count(int hdim) { return 1 + 3 * kv_stages(hdim); }
constexpr size_t kAlignSlack = 1024;  // the dynamic shared memory base is rounded up to 1024 bytes
constexpr size_t smem_bytes(int hdim) {
  return barrier_offset(hdim) + 8 * static_cast<size_t>(barrier_count(hdim)) + kAlignSlack;
}

constexpr long long m_blocks(long long seq_q) { return (seq_q + kBlockM - 1) / kBlockM; }

// Key tiles the CTA starting at query row m0 visits: with the bottom-right causal mask, row i sees
// keys j <= i + seq_k - seq_q, so tiles past the last row's limit are skipped; 0 when no row sees a key.
constexpr long long key_tiles(long long m0, long long seq_q, long long seq_k, bool causal) {
  const long long all = (seq_k + kBlockN - 1) / kBlockN;
  if (!causal) return all;
  const long long last_visible_key = m0 + kBlockM - 1 + seq_k - seq_q;
  if (last_visible_key < 0) return 0;
  const long long needed = last_visible_key / kBlockN + 1;
  return needed < all ? needed : all;
}

// ATTNPROF_FUSED_SM90_CONFIG: unset, "" or "pingpong" -> pingpong; "overlap"; "serial"; else nullopt.
constexpr std::optional<Schedule> parse_schedule(std::string_view text) {
  if (text.empty() || text == "pingpong") return Schedule::pingpong;
  if (text == "overlap") return Schedule::overlap;
  if (text == "serial") return Schedule::serial;
  return std::nullopt;
}
constexpr std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::overlap: return "overlap";
    case Schedule::pingpong: return "pingpong";
    case Schedule::serial: return "serial";
  }
  return "?";
}

static_assert(smem_bytes(128) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(smem_bytes(64) <= 227 * 1024, "fits the sm_90 shared-memory limit per block");
static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumerThreads <= 65536,
              "the register file holds both roles after setmaxnreg");

}  // namespace attnprof::kernels::fused_sm90
