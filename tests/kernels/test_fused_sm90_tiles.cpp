// Host-side checks of the fused-sm90 kernel's causal work-tile order (kernels/fused_sm90/
// fused_sm90_tiles.hpp): both orders visit every query block of every head exactly once, and the
// plan balances the static round robin at the fa-bench causal shapes. No CUDA runtime needed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <utility>

#include "kernels/fused_sm90/fused_sm90_tiles.hpp"

namespace f3 = attnprof::kernels::fused_sm90;

namespace {
constexpr int kH200Sms = 132;
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
      const f3::GridPlan plan = f3::plan_grid(seq, seq, batch_heads, true, kH200Sms);
      const auto plain = f3::causal_round_robin_load(seq, seq, batch_heads, kH200Sms, false);
      const auto chosen = f3::causal_round_robin_load(seq, seq, batch_heads, kH200Sms, plan.rotated);
      INFO("hdim " << hdim << " seq " << seq << ": grid " << plan.grid << " rotated " << plan.rotated << " busiest "
                   << chosen.busiest << " (plain " << plain.busiest << ") greedy bound " << chosen.greedy_bound);
      CHECK(chosen.busiest <= plain.busiest);
      if (plan.grid == kH200Sms) CHECK(static_cast<double>(chosen.busiest) <= 1.15 * chosen.greedy_bound);
    }
  }
  // seq 512 (4 blocks per head, 132 = 33 * 4): plain gives a quarter of the CTAs only the heaviest
  // block (15.5 tiles of 4 + 2 key tiles); rotated is within a tile of the mean.
  const f3::GridPlan seq512 = f3::plan_grid(512, 512, 32 * 16, true, kH200Sms);
  CHECK(seq512.grid == kH200Sms);
  CHECK(seq512.rotated);
  CHECK(f3::causal_round_robin_load(512, 512, 32 * 16, kH200Sms, false).busiest == 96);
  CHECK(f3::causal_round_robin_load(512, 512, 32 * 16, kH200Sms, true).busiest == 72);
  // b1 h16 s16384 d128: 1.27x the bound even rotated: one CTA per tile, as measured best.
  CHECK(f3::plan_grid(16384, 16384, 16, true, kH200Sms).grid == 128 * 16);
}

TEST_CASE("fused-sm90: non-causal shapes keep the persistent grid; small ones one CTA per tile") {
  CHECK(f3::plan_grid(2048, 2048, 128, false, kH200Sms).grid == kH200Sms);
  CHECK_FALSE(f3::plan_grid(2048, 2048, 128, false, kH200Sms).rotated);
  CHECK(f3::plan_grid(128, 128, 3, true, kH200Sms).grid == 3);
  CHECK(f3::plan_grid(4096, 4096, 8, true, 0).grid == 32 * 8);
}

TEST_CASE("fused-sm90: windowed tile range and masking agree with the brute-force mask") {
  for (long long seq_q : {1LL, 100LL, 128LL, 129LL, 700LL})
    for (long long seq_k : {1LL, 127LL, 128LL, 300LL, 1000LL})
      for (bool causal : {false, true})
        for (long long window : {1LL, 64LL, 128LL, 129LL, 500LL, 5000LL})
          for (long long mb = 0; mb < f3::m_blocks(seq_q); ++mb) {
            const long long m0 = mb * f3::kBlockM;
            const long long first = f3::first_key_tile(m0, seq_q, seq_k, causal, window);
            const long long tiles = f3::key_tiles(m0, seq_q, seq_k, causal, window);
            INFO("seq " << seq_q << "x" << seq_k << (causal ? " causal" : "") << " window " << window << " m0 " << m0);
            REQUIRE(first + tiles <= (seq_k + f3::kBlockN - 1) / f3::kBlockN);
            for (long long i = m0; i < std::min(seq_q, m0 + f3::kBlockM); ++i) {
              const long long p = i + seq_k - seq_q;
              for (long long j = 0; j < seq_k; ++j) {
                const bool sees = p - window < j && (causal ? j <= p : j < p + window);
                const long long tile = j / f3::kBlockN;
                const bool visited = tile >= first && tile < first + tiles;
                if (sees) CHECK(visited);
                // An unmasked visited tile holds only keys the row sees.
                if (visited && !f3::tile_needs_mask(m0, tile, seq_q, seq_k, causal, window)) CHECK(sees);
              }
            }
          }
}

TEST_CASE("fused-sm90: a window makes the tiles' costs differ, and the plan balances them") {
  // b1 h32 s32768 causal, window 4096: each query block sees at most 33 key tiles, the first 32
  // blocks fewer; without the window the costs would run from 1 to 256.
  const long long blocks = f3::m_blocks(32768);
  CHECK(f3::key_tiles((blocks - 1) * f3::kBlockM, 32768, 32768, true, 4096) == 4096 / f3::kBlockN + 1);
  CHECK(f3::key_tiles(0, 32768, 32768, true, 4096) == 1);
  for (bool causal : {false, true}) {
    const f3::GridPlan plan = f3::plan_grid(32768, 32768, 32, causal, kH200Sms, 4096);
    const auto chosen = f3::causal_round_robin_load(32768, 32768, 32, plan.grid, plan.rotated, causal, 4096);
    INFO("causal " << causal << " grid " << plan.grid << " rotated " << plan.rotated);
    CHECK(static_cast<double>(chosen.busiest) <= f3::kMaxStaticImbalance * chosen.greedy_bound);
  }
  // Without a mask or a window every tile costs the same: the persistent grid, natural order.
  CHECK(f3::plan_grid(32768, 32768, 32, false, kH200Sms, 0).grid == kH200Sms);
  CHECK_FALSE(f3::plan_grid(32768, 32768, 32, false, kH200Sms, 0).rotated);
}
