// Host-side checks of the fused-sm90 kernel's causal work-tile order (kernels/fused_sm90/
// fused_sm90_tiles.hpp): both orders visit every query block of every head exactly once, and the
// plan balances the static round robin at the fa-bench causal shapes. No CUDA runtime needed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/tiles/fused_sm90_tiles.hpp"

namespace f3 = attnprof::kernels::fused_sm90;

namespace {
constexpr int kH200Sms = 132;
constexpr int kBn = f3::block_n(128);  // keys per K/V tile up to hdim 128
}  // namespace

TEST_CASE("fused-sm90: the causal tile orders are permutations of each head's query blocks") {
  const bool rotated = GENERATE(false, true);
  for (long long blocks : {1, 2, 3, 4, 8, 11, 32, 128}) {
    for (long long heads : {1, 5, 64}) {
      std::set<std::pair<long long, long long>> seen;  // (head, block)
      for (long long t = 0; t < blocks * heads; ++t) {
        const long long m = f3::causal_m_index(t, blocks, rotated);
        REQUIRE(m >= 0);
        REQUIRE(m < blocks);
        seen.insert({t / blocks, m});
      }
      INFO("blocks " << blocks << " heads " << heads);
      REQUIRE(seen.size() == static_cast<size_t>(blocks * heads));
    }
  }
}

TEST_CASE("fused-sm90: the planned round robin is balanced at the fa-bench causal shapes") {
  // fa-bench: batch * seq = 16384, heads = 2048 / hdim. The plan's busiest CTA stays within 15% of the
  // greedy bound and is never heavier than the plain order's.
  for (long long hdim : {64, 128}) {
    for (long long seq = 512; seq <= 16384; seq *= 2) {
      const long long batch_heads = (16384 / seq) * (2048 / hdim);
      const f3::GridPlan plan = f3::plan_grid(seq, seq, batch_heads, true, kH200Sms, 0, kBn);
      const auto plain = f3::causal_round_robin_load(seq, seq, batch_heads, kH200Sms, false, true, 0, kBn);
      const auto chosen = f3::causal_round_robin_load(seq, seq, batch_heads, kH200Sms, plan.rotated, true, 0, kBn);
      INFO("hdim " << hdim << " seq " << seq << ": grid " << plan.grid << " rotated " << plan.rotated << " busiest "
                   << chosen.busiest << " (plain " << plain.busiest << ") greedy bound " << chosen.greedy_bound);
      CHECK(chosen.busiest <= plain.busiest);
      if (plan.grid == kH200Sms) CHECK(static_cast<double>(chosen.busiest) <= 1.15 * chosen.greedy_bound);
    }
  }
  // seq 512 (4 blocks per head, 132 = 33 * 4): plain gives a quarter of the CTAs only the heaviest
  // block (15.5 tiles of 4 + 2 key tiles); rotated is within a tile of the mean.
  const f3::GridPlan seq512 = f3::plan_grid(512, 512, 32 * 16, true, kH200Sms, 0, kBn);
  CHECK(seq512.grid == kH200Sms);
  CHECK(seq512.rotated);
  CHECK(f3::causal_round_robin_load(512, 512, 32 * 16, kH200Sms, false, true, 0, kBn).busiest == 96);
  CHECK(f3::causal_round_robin_load(512, 512, 32 * 16, kH200Sms, true, true, 0, kBn).busiest == 72);
  // b1 h16 s16384 d128: 1.27x the bound even rotated: one CTA per tile, as measured best.
  CHECK(f3::plan_grid(16384, 16384, 16, true, kH200Sms, 0, kBn).grid == 128 * 16);
}

TEST_CASE("fused-sm90: non-causal shapes keep the persistent grid; small ones one CTA per tile") {
  CHECK(f3::plan_grid(2048, 2048, 128, false, kH200Sms, 0, kBn).grid == kH200Sms);
  CHECK_FALSE(f3::plan_grid(2048, 2048, 128, false, kH200Sms, 0, kBn).rotated);
  CHECK(f3::plan_grid(128, 128, 3, true, kH200Sms, 0, kBn).grid == 3);
  CHECK(f3::plan_grid(4096, 4096, 8, true, 0, 0, kBn).grid == 32 * 8);
}

TEST_CASE("fused-sm90: every head dim runs on a tile of whole 64-column panels that fits the SM") {
  constexpr size_t kSmemPerBlockBytes = 227 * 1024;
  constexpr int kRegisterFile = 65536;
  for (int hdim : f3::kHeadDims) {
    const int tile = f3::tile_hdim(hdim);
    INFO("hdim " << hdim << " tile " << tile);
    CHECK(f3::supported_hdim(hdim));
    CHECK(tile >= hdim);
    CHECK(tile - hdim < f3::kPanelCols);
    CHECK(tile % f3::kPanelCols == 0);
    CHECK(f3::smem_bytes(tile) <= kSmemPerBlockBytes);
    // The consumer's accumulators: O (tile / 2), S (block_n / 2) and P (block_n / 4) per thread, under
    // the registers setmaxnreg gives it, with room for addresses and softmax state.
    CHECK(tile / 2 + f3::block_n(tile) / 2 + f3::block_n(tile) / 4 <= f3::kConsumerRegs - 48);
    CHECK(f3::block_n(tile) % 16 == 0);
  }
  CHECK(f3::kProducerRegs * f3::kWarpgroupThreads + f3::kConsumerRegs * f3::kConsumerThreads <= kRegisterFile);
  CHECK(f3::tile_hdim(32) == 64);
  CHECK(f3::tile_hdim(96) == 128);
  CHECK(f3::tile_hdim(192) == 192);
  CHECK(f3::stages_o(128));
  CHECK_FALSE(f3::stages_o(256));
  CHECK(f3::o_stage_bytes(192) == 0);
  CHECK_FALSE(f3::supported_hdim(80));
  CHECK_FALSE(f3::supported_hdim(512));
}

TEST_CASE("fused-sm90: key tiles of 64 keys cover every visible key of a causal block") {
  for (int bn : {64, 128})
    for (long long seq_q : {1, 100, 128, 129, 777})
      for (long long seq_k : {1, 63, 64, 65, 1000})
        for (long long m0 = 0; m0 < seq_q; m0 += f3::kBlockM) {
          const long long last_row = std::min(seq_q, m0 + f3::kBlockM) - 1;
          const long long last_key = std::min(seq_k - 1, last_row + seq_k - seq_q);
          const long long tiles = f3::key_tiles(m0, seq_q, seq_k, true, 0, bn);
          INFO("bn " << bn << " seq " << seq_q << "x" << seq_k << " m0 " << m0);
          CHECK(tiles == (last_key < 0 ? 0 : last_key / bn + 1));
          CHECK(f3::key_tiles(m0, seq_q, seq_k, false, 0, bn) == (seq_k + bn - 1) / bn);
        }
}

TEST_CASE("fused-sm90: windowed tile range and masking agree with the brute-force mask") {
  for (long long seq_q : {1LL, 100LL, 128LL, 129LL, 700LL})
    for (long long seq_k : {1LL, 127LL, 128LL, 300LL, 1000LL})
      for (bool causal : {false, true})
        for (long long window : {1LL, 64LL, 128LL, 129LL, 500LL, 5000LL})
          for (long long mb = 0; mb < f3::m_blocks(seq_q); ++mb) {
            const long long m0 = mb * f3::kBlockM;
            const long long first = f3::first_key_tile(m0, seq_q, seq_k, causal, window, kBn);
            const long long tiles = f3::key_tiles(m0, seq_q, seq_k, causal, window, kBn);
            INFO("seq " << seq_q << "x" << seq_k << (causal ? " causal" : "") << " window " << window << " m0 " << m0);
            REQUIRE(first + tiles <= (seq_k + kBn - 1) / kBn);
            for (long long i = m0; i < std::min(seq_q, m0 + f3::kBlockM); ++i) {
              const long long p = i + seq_k - seq_q;
              for (long long j = 0; j < seq_k; ++j) {
                const bool sees = p - window < j && (causal ? j <= p : j < p + window);
                const long long tile = j / kBn;
                const bool visited = tile >= first && tile < first + tiles;
                if (sees) CHECK(visited);
                // An unmasked visited tile holds only keys the row sees.
                if (visited && !f3::tile_needs_mask(m0, tile, seq_q, seq_k, causal, window, kBn)) CHECK(sees);
              }
            }
          }
}

TEST_CASE("fused-sm90: a window makes the tiles' costs differ, and the plan balances them") {
  // b1 h32 s32768 causal, window 4096: each query block sees at most 33 key tiles, the first 32
  // blocks fewer; without the window the costs would run from 1 to 256.
  const long long blocks = f3::m_blocks(32768);
  CHECK(f3::key_tiles((blocks - 1) * f3::kBlockM, 32768, 32768, true, 4096, kBn) == 4096 / kBn + 1);
  CHECK(f3::key_tiles(0, 32768, 32768, true, 4096, kBn) == 1);
  for (bool causal : {false, true}) {
    const f3::GridPlan plan = f3::plan_grid(32768, 32768, 32, causal, kH200Sms, 4096, kBn);
    const auto chosen = f3::causal_round_robin_load(32768, 32768, 32, plan.grid, plan.rotated, causal, 4096, kBn);
    INFO("causal " << causal << " grid " << plan.grid << " rotated " << plan.rotated);
    CHECK(static_cast<double>(chosen.busiest) <= f3::kMaxStaticImbalance * chosen.greedy_bound);
  }
  // Without a mask or a window every tile costs the same: the persistent grid, natural order.
  CHECK(f3::plan_grid(32768, 32768, 32, false, kH200Sms, 0, kBn).grid == kH200Sms);
  CHECK_FALSE(f3::plan_grid(32768, 32768, 32, false, kH200Sms, 0, kBn).rotated);
}

TEST_CASE("fused-sm90: the default schedule per tile width and mask") {
  CHECK(f3::default_schedule(64, false) == f3::Schedule::pingpong);
  CHECK(f3::default_schedule(128, false) == f3::Schedule::overlap);
  CHECK(f3::default_schedule(128, true) == f3::Schedule::pingpong);
  CHECK(f3::default_schedule(192, false) == f3::Schedule::overlap);
  CHECK(f3::default_schedule(256, false) == f3::Schedule::serial);
  CHECK(f3::default_schedule(256, true) == f3::Schedule::serial);
}

TEST_CASE("fused-sm90 fp8: V^T's key order is the order the P fragments hold the keys in") {
  // Inside every 16 keys the map is a permutation, and it never leaves its 16.
  for (long long base : {0LL, 16LL, 112LL, 4096LL}) {
    std::vector<bool> seen(16, false);
    for (long long c = base; c < base + 16; ++c) {
      const long long key = f3::fp8::vt_source_key(c);
      REQUIRE(key >= base);
      REQUIRE(key < base + 16);
      CHECK_FALSE(seen[static_cast<size_t>(key - base)]);
      seen[static_cast<size_t>(key - base)] = true;
    }
  }
  // The S accumulator of wgmma m64nN gives lane t (of a quad) keys 8 g + 2t and 8 g + 2t + 1 of every
  // 8-key group g; P's register 4 ks + r packs, lowest byte first, those of groups 4 ks + 2 (r / 2) and
  // the next one. The fp8 A fragment reads register r's byte b as k position 16 (r / 2) + 4t + b of
  // the k32 slice ks. V^T must hold at that position the key the byte carries.
  for (int ks = 0; ks < f3::fp8::block_n() / 32; ++ks)
    for (int r = 0; r < 4; ++r)
      for (int t = 0; t < 4; ++t)
        for (int b = 0; b < 4; ++b) {
          const int group = 4 * ks + (r / 2) * 2 + b / 2;
          const long long carried = 8 * group + 2 * t + b % 2;
          const long long position = 32 * ks + 16 * (r / 2) + 4 * t + b;
          INFO("ks " << ks << " register " << r << " lane t " << t << " byte " << b);
          CHECK(f3::fp8::vt_source_key(position) == carried);
        }
}

TEST_CASE("fused-sm90 fp8: write_vt's byte permutes transpose four row words, and its CTAs cover V") {
  // The model of PRMT against the PTX manual's examples: bytes 0-3 of x then 4-7 of y, one selector
  // nibble per result byte (0x3210 is x itself, 0x7654 y, 0x0123 x byte-reversed).
  constexpr auto prmt = f3::fp8::prmt;
  CHECK(prmt(0x33221100u, 0x77665544u, 0x3210u) == 0x33221100u);
  CHECK(prmt(0x33221100u, 0x77665544u, 0x7654u) == 0x77665544u);
  CHECK(prmt(0x33221100u, 0x77665544u, 0x0123u) == 0x00112233u);
  CHECK(prmt(0x33221100u, 0x77665544u, f3::fp8::kInterleaveLow) == 0x55114400u);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t r[4] = {static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()),
                           static_cast<uint32_t>(rng())};
    for (int b = 0; b < 4; ++b) {
      const uint32_t w = f3::fp8::vt_column_word(prmt, r[0], r[1], r[2], r[3], b);
      for (int i = 0; i < 4; ++i) CHECK(((w >> (8 * i)) & 0xff) == ((r[i] >> (8 * b)) & 0xff));
    }
  }
  // Four warps of 32 columns make a CTA's 128; 8 groups of 16 keys its 128 keys, one V^T tile row.
  CHECK(f3::fp8::kVtThreads / 32 * f3::fp8::kVtColsPerThread == f3::fp8::kVtColsPerCta);
  CHECK(8 * 16 == f3::fp8::kVtKeysPerCta);
  CHECK(f3::fp8::kVtKeysPerCta == f3::fp8::block_n());
  CHECK(f3::fp8::kVtColsPerThread % 32 == 0);  // whole 32-byte sectors per key row
  for (int hdim : {128, 256}) CHECK(hdim % f3::fp8::kVtColsPerCta == 0);
  CHECK(f3::fp8::vt_ctas(4097, 256, 6) == 4224 / 128 * 2 * 6);
}

TEST_CASE("fused-sm90 fp8: tiles, padding and shared memory") {
  CHECK(f3::fp8::supported_hdim(128));
  CHECK(f3::fp8::supported_hdim(256));
  CHECK_FALSE(f3::fp8::supported_hdim(64));
  CHECK_FALSE(f3::fp8::supported_hdim(192));
  // A K tile (128 keys of hdim bytes) and a V^T tile (hdim rows of 128 keys) fill the same stage size.
  CHECK(f3::fp8::kv_tile_bytes(128) == 128u * 128u);
  CHECK(f3::fp8::kv_tile_bytes(256) == 128u * 256u);
  CHECK(f3::fp8::vt_keys(1) == 128);
  CHECK(f3::fp8::vt_keys(128) == 128);
  CHECK(f3::fp8::vt_keys(4097) == 4224);
  // Stages and O staging, 1024-byte aligned, within the 227 KB a CTA may have.
  for (int hdim : {128, 256}) {
    CHECK(f3::fp8::k_offset(hdim) % 1024 == 0);
    CHECK(f3::fp8::v_offset(hdim) % 1024 == 0);
    CHECK(f3::fp8::o_offset(hdim) % 1024 == 0);
    CHECK(f3::fp8::smem_bytes(hdim) <= 227u * 1024u);
  }
  CHECK(f3::fp8::o_stage_bytes(128) == 64u * 128u * 2u);
  CHECK(f3::fp8::o_stage_bytes(256) == 0u);
  CHECK(f3::fp8::default_schedule(256, false) == f3::Schedule::serial);
  CHECK(f3::fp8::default_schedule(128, false) == f3::Schedule::overlap);
  CHECK(f3::fp8::default_schedule(128, true) == f3::Schedule::pingpong);
}

TEST_CASE("fused-sm90 backward: tiles, shared memory and the key blocks of its grid") {
  namespace bwd = f3::bwd;
  CHECK(bwd::supported_hdim(64));
  CHECK(bwd::supported_hdim(128));
  CHECK_FALSE(bwd::supported_hdim(96));
  CHECK_FALSE(bwd::supported_hdim(256));
  CHECK(bwd::kThreads == 384);  // a producer warpgroup and two consumer warpgroups
  CHECK(bwd::kBlockN == 64 * bwd::kWarpgroups);  // 64 keys (wgmma's M) per consumer warpgroup
  for (int hdim : {64, 128}) {
    // Every tile a wgmma descriptor or TMA's 128-byte swizzle touches starts on a 1024-byte atom.
    CHECK(bwd::v_offset(hdim) % 1024 == 0);
    CHECK(bwd::q_offset(hdim) % 1024 == 0);
    CHECK(bwd::do_offset(hdim) % 1024 == 0);
    CHECK(bwd::ds_offset(hdim) % 1024 == 0);
    CHECK(bwd::dq_offset(hdim) % 1024 == 0);
    CHECK(bwd::dq_bytes(hdim) % 1024 == 0);
    CHECK(bwd::barrier_offset(hdim) % 8 == 0);
    // Each consumer warpgroup's part of dQ is 64 rows (wgmma's M) of whole 32-column panels.
    const int dq_rows = bwd::dq_split_rows(hdim) ? bwd::block_m(hdim) / bwd::kWarpgroups : bwd::block_m(hdim);
    const int dq_cols = bwd::dq_split_rows(hdim) ? hdim : hdim / bwd::kWarpgroups;
    CHECK(dq_rows == 64);
    CHECK(dq_cols % bwd::kDqPanelCols == 0);
    CHECK(bwd::smem_bytes(hdim) <= 227u * 1024u);
  }
  CHECK(bwd::block_m(64) == 128);
  CHECK(bwd::block_m(128) == 64);
  // hdim 128: K, V: 128 rows; Q, dO: two stages of 64 rows; two dS^T of 128 x 64; two fp32 dQ tiles of
  // 64 rows; two stages of LSE and D; nine mbarriers.
  CHECK(bwd::smem_bytes(128) == 2 * 32768 + 4 * 16384 + 2 * 16384 + 2 * 32768 + 1024 + 72 + f3::kAlignSlack);
  // hdim 64: Q, dO of 128 rows; two dS^T of 128 x 128; one fp32 dQ tile of 128 x 64; seven mbarriers.
  // A second dQ tile (and its two mbarriers) would not fit.
  CHECK(bwd::smem_bytes(64) == 2 * 16384 + 4 * 16384 + 2 * 32768 + 32768 + 2048 + 56 + f3::kAlignSlack);
  CHECK(bwd::smem_bytes(64) + bwd::dq_bytes(64) + 16 > 227u * 1024u);
  CHECK(bwd::key_blocks(1) == 1);
  CHECK(bwd::key_blocks(128) == 1);
  CHECK(bwd::key_blocks(4097) == 33);
}
