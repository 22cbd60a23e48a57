// Host checks of the decode kernel's quantized-cache fragment maps (kernels/decode/decode_fragments.hpp):
// the head-dim permutations and the byte tiles' swizzle are bijections; S = Q K^T and O = P V computed
// through them and a host model of mma.sync m16n8k16's fragment layout (PTX ISA, f16 operands) equal a
// plain matmul, O un-permuted as the kernel's merge writes it; the warps' shared-memory reads and the
// tile's cp.async writes are free of bank conflicts; the int8 bytes' fp16 bit trick is exact.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "core/shape.hpp"
#include "kernels/common/quant.hpp"
#include "kernels/common/random.hpp"
#include "kernels/decode/decode_fragments.hpp"
#include "kernels/decode/decode_plan.hpp"

namespace dec = attnprof::kernels::decode;
namespace frag = attnprof::kernels::decode::frag;
using attnprof::core::KvDType;

namespace {

constexpr int kLanes = 32;
constexpr int kHdims[] = {64, 128};

// One lane's operands of m16n8k16: A's four registers, B's two, C's four values (two halves each for
// the operands).
struct LaneA {
  double v[4][2] = {};
};
struct LaneB {
  double v[2][2] = {};
};
struct LaneC {
  double v[4] = {};
};

// c += A B with the fragment layout of mma.sync.m16n8k16.row.col (lane g = lane / 4, t = lane % 4):
// A register r holds (row g + 8 (r % 2), k 2t + h + 8 (r / 2)), B register r holds (k 2t + h + 8 r,
// column g), C value r is (row g + 8 (r / 2), column 2t + r % 2). Every element of A and B must be
// given by exactly one lane.
void mma_m16n8k16(const std::array<LaneA, kLanes>& a, const std::array<LaneB, kLanes>& b,
                  std::array<LaneC, kLanes>& c) {
  double A[16][16] = {}, B[16][8] = {};
  int a_seen[16][16] = {}, b_seen[16][8] = {};
  for (int lane = 0; lane < kLanes; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) {
        const int row = g + 8 * (r % 2), k = 2 * t + h + 8 * (r / 2);
        A[row][k] = a[lane].v[r][h];
        ++a_seen[row][k];
      }
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) {
        const int k = 2 * t + h + 8 * r;
        B[k][g] = b[lane].v[r][h];
        ++b_seen[k][g];
      }
  }
  for (auto& row : a_seen)
    for (int n : row) REQUIRE(n == 1);
  for (auto& row : b_seen)
    for (int n : row) REQUIRE(n == 1);
  for (int lane = 0; lane < kLanes; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; ++r) {
      const int row = g + 8 * (r / 2), col = 2 * t + r % 2;
      for (int k = 0; k < 16; ++k) c[lane].v[r] += A[row][k] * B[k][col];
    }
  }
}

// The value of a stored byte, as the kernel's fp16 conversion gives it (exact for both codes).
double byte_value(KvDType kv, uint8_t code) {
  return kv == KvDType::int8 ? static_cast<double>(static_cast<int8_t>(code)) : attnprof::kernels::decode_e4m3(code);
}

// A random stored byte: any int8, any E4M3 but NaN.
uint8_t random_code(KvDType kv, uint64_t& state) {
  for (;;) {
    state = attnprof::kernels::splitmix64(state);
    const auto code = static_cast<uint8_t>(state >> 56);
    if (kv == KvDType::int8 || (code & 0x7F) != 0x7F) return code;
  }
}

// A random multiple of 1/8 in [-2, 2] (exact in fp16, and its products with the codes exact in double).
double random_value(uint64_t& state) {
  state = attnprof::kernels::splitmix64(state);
  return static_cast<double>(static_cast<int>(state >> 59) - 16) / 8.0;
}

// A byte tile of kBlockN rows of hdim stored bytes, laid out as the kernel's cp.async writes it:
// 16-byte chunk (row, col) at frag::byte_tile_offset(hdim, row, col).
std::vector<uint8_t> stage_tile(const std::vector<uint8_t>& rows, int hdim) {
  std::vector<uint8_t> tile(rows.size(), 0);
  std::vector<int> written(rows.size(), 0);
  for (int row = 0; row < dec::kBlockN; ++row)
    for (int col = 0; col < hdim; col += frag::kChunkBytes) {
      const uint32_t dst = frag::byte_tile_offset(hdim, row, col);
      REQUIRE(dst + frag::kChunkBytes <= tile.size());
      std::memcpy(&tile[dst], &rows[static_cast<size_t>(row) * hdim + col], frag::kChunkBytes);
      for (int b = 0; b < frag::kChunkBytes; ++b) ++written[dst + b];
    }
  for (int n : written) REQUIRE(n == 1);
  return tile;
}

uint32_t word_at(const std::vector<uint8_t>& tile, uint32_t offset) {
  uint32_t w = 0;
  std::memcpy(&w, &tile[offset], 4);  // little-endian: byte 0 is the word's lowest
  return w;
}
uint8_t byte_of(uint32_t word, int b) { return static_cast<uint8_t>(word >> (8 * b)); }

// The fp16 value of normal or zero fp16 bits.
double half_value(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
  REQUIRE(exponent > 0);
  REQUIRE(exponent < 31);
  const double magnitude = std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

// Shared-memory bank conflicts of one warp-wide access of `width` bytes per lane (4, 8 or 16): the
// hardware serves 128 bytes per wavefront, so 32 / 16 / 8 lanes at a time; within those, two lanes
// conflict when they touch different 32-bit words of one of the 32 banks. Returns the largest number of
// distinct words any bank serves in one such group (1: conflict-free).
int conflict_degree(const std::vector<uint32_t>& lane_bytes, int width) {
  const int group = 128 / width;
  int worst = 0;
  for (size_t first = 0; first < lane_bytes.size(); first += group) {
    std::map<uint32_t, std::set<uint32_t>> words_of_bank;
    for (size_t lane = first; lane < first + group && lane < lane_bytes.size(); ++lane)
      for (int b = 0; b < width; b += 4) {
        const uint32_t word = (lane_bytes[lane] + b) / 4;
        words_of_bank[word % 32].insert(word);
      }
    for (const auto& [bank, words] : words_of_bank) worst = std::max(worst, static_cast<int>(words.size()));
  }
  return worst;
}

}  // namespace

TEST_CASE("decode fragments: the head-dim orders of S and O and the MMA's k index are bijections") {
  std::set<int> ks_of_lane;
  for (int t = 0; t < 4; ++t)
    for (int e = 0; e < 4; ++e) ks_of_lane.insert(frag::mma_k(t, e));
  CHECK(ks_of_lane.size() == 16);
  CHECK(*ks_of_lane.rbegin() == 15);
  for (int hdim : kHdims) {
    INFO("hdim " << hdim);
    std::vector<int> qk(hdim, 0), pv(hdim, 0);
    for (int t = 0; t < 4; ++t)
      for (int ks = 0; ks < hdim / 16; ++ks)
        for (int e = 0; e < 4; ++e) {
          const int d = frag::qk_dim(hdim, t, ks, e);
          REQUIRE(d >= 0);
          REQUIRE(d < hdim);
          ++qk[d];
        }
    for (int j = 0; j < hdim / 8; ++j)
      for (int c = 0; c < 8; ++c) {
        const int d = frag::pv_dim(hdim, j, c);
        REQUIRE(d >= 0);
        REQUIRE(d < hdim);
        ++pv[d];
      }
    CHECK(std::count(qk.begin(), qk.end(), 1) == hdim);
    CHECK(std::count(pv.begin(), pv.end(), 1) == hdim);
    // A lane's K bytes of four k-steps are 16 consecutive bytes; its V bytes of all n8 tiles hdim / 8.
    for (int t = 0; t < 4; ++t)
      for (int ks = 0; ks < hdim / 16; ++ks)
        for (int e = 0; e < 4; ++e)
          CHECK(frag::qk_dim(hdim, t, ks, e) == frag::qk_dim(hdim, t, ks - ks % 4, 0) + 4 * (ks % 4) + e);
    for (int g = 0; g < 8; ++g)
      for (int j = 0; j < hdim / 8; ++j) CHECK(frag::pv_dim(hdim, j, g) == frag::pv_dim(hdim, 0, g) + j);
  }
}

TEST_CASE("decode fragments: the byte tile's swizzle keeps chunks whole, lines in place, and row r + 8 eight rows on") {
  for (int hdim : kHdims) {
    INFO("hdim " << hdim);
    const uint32_t tile_bytes = static_cast<uint32_t>(dec::kBlockN * hdim);
    std::vector<int> seen(tile_bytes, 0);
    for (int row = 0; row < dec::kBlockN; ++row)
      for (int col = 0; col < hdim; ++col) {
        const uint32_t at = frag::byte_tile_offset(hdim, row, col);
        const uint32_t plain = static_cast<uint32_t>(row * hdim + col);
        REQUIRE(at < tile_bytes);
        ++seen[at];
        CHECK(at / frag::kLineBytes == plain / frag::kLineBytes);  // a line of the stream: one aligned segment
        CHECK(at % frag::kChunkBytes == plain % frag::kChunkBytes);  // 16-byte chunks whole (cp.async)
        if (row + 8 < dec::kBlockN) CHECK(frag::byte_tile_offset(hdim, row + 8, col) == at + 8u * hdim);
      }
    CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(tile_bytes));
  }
}

TEST_CASE("decode fragments: __byte_perm's host twin and the key interleave") {
  CHECK(frag::byte_perm(0x33221100u, 0x77665544u, 0x5140u) == 0x55114400u);
  CHECK(frag::byte_perm(0x33221100u, 0x77665544u, 0x7362u) == 0x77336622u);
  CHECK(frag::byte_perm(0x33221100u, 0x77665544u, 0x3210u) == 0x33221100u);
  CHECK(frag::byte_perm(0x33221100u, 0x77665544u, 0xFEDCu) == 0x77665544u);  // the selector's bit 3 is ignored
  uint32_t lo = 0, hi = 0;
  frag::interleave_keys(0xD3D2D1D0u, 0xE3E2E1E0u, lo, hi);
  CHECK(lo == 0xE1D1E0D0u);  // (key 0, key 1) of byte 0, then of byte 1
  CHECK(hi == 0xE3D3E2D2u);
}

TEST_CASE("decode fragments: int8 bytes as fp16 bits of 1152 + b, exact for every byte at every position") {
  CHECK(half_value(frag::kInt8HalfBiasBits) == frag::kInt8HalfBias);
  for (int code = 0; code < 256; ++code)
    for (int position = 0; position < 4; ++position) {
      const uint32_t filler = 0x5A5A5A5Au & ~(0xFFu << (8 * position));
      const uint32_t bytes = filler | (static_cast<uint32_t>(code) << (8 * position));
      uint32_t lo = 0, hi = 0;
      frag::int8_as_biased_halves(bytes, lo, hi);
      const uint32_t word = position < 2 ? lo : hi;
      const auto bits = static_cast<uint16_t>(word >> (16 * (position % 2)));
      INFO("byte " << code << " at " << position);
      CHECK(half_value(bits) - frag::kInt8HalfBias == static_cast<int8_t>(code));
    }
}

TEST_CASE("decode fragments: S = Q K^T through the lane maps and the MMA layout equals the matmul") {
  for (KvDType kv : {KvDType::fp8_e4m3, KvDType::int8})
    for (int hdim : kHdims)
      for (uint64_t seed : {1u, 2u, 3u}) {
        INFO("kv " << attnprof::core::to_string(kv) << " hdim " << hdim << " seed " << seed);
        uint64_t state = seed * 7919 + static_cast<uint64_t>(hdim);
        std::vector<double> q(16 * static_cast<size_t>(hdim));  // (16 rows, hdim): one MMA tile of Q
        for (double& x : q) x = random_value(state);
        std::vector<uint8_t> k_rows(static_cast<size_t>(dec::kBlockN) * hdim);  // (kBlockN keys, hdim)
        for (uint8_t& b : k_rows) b = random_code(kv, state);
        const std::vector<uint8_t> tile = stage_tile(k_rows, hdim);
        for (int warp = 0; warp < dec::kWarps; ++warp) {
          std::array<LaneC, kLanes> s[2] = {};  // n8 tiles of the warp's 16 keys
          for (int ks = 0; ks < hdim / 16; ++ks)
            for (int nt = 0; nt < 2; ++nt) {
              std::array<LaneA, kLanes> a{};
              std::array<LaneB, kLanes> b{};
              for (int lane = 0; lane < kLanes; ++lane) {
                const int g = lane / 4, t = lane % 4;
                // Q: the kernel's 16-byte read of row g (and g + 8) at fp16 chunk qk_dim(t, 2m, 0) / 8
                // holds k-steps 2m and 2m + 1, four values each.
                const int chunk = frag::qk_dim(hdim, t, ks - ks % 2, 0) / 8;
                for (int half = 0; half < 2; ++half)
                  for (int h = 0; h < 2; ++h) {
                    const double* row = &q[static_cast<size_t>(g + 8 * half) * hdim + chunk * 8 + (ks % 2) * 4];
                    a[lane].v[half][h] = row[h];
                    a[lane].v[2 + half][h] = row[2 + h];
                  }
                // K: word ks % 4 of the 16 bytes at k_lane_offset(row, t, ks / 4), row + 8 for tile 1.
                const uint32_t word = word_at(tile, frag::k_lane_offset(hdim, warp * dec::kKeysPerWarp + g, t, ks / 4) +
                                                        static_cast<uint32_t>(nt * 8 * hdim + 4 * (ks % 4)));
                for (int r = 0; r < 2; ++r)
                  for (int h = 0; h < 2; ++h) b[lane].v[r][h] = byte_value(kv, byte_of(word, 2 * r + h));
              }
              mma_m16n8k16(a, b, s[nt]);
            }
          for (int nt = 0; nt < 2; ++nt)
            for (int lane = 0; lane < kLanes; ++lane)
              for (int r = 0; r < 4; ++r) {
                const int row = lane / 4 + 8 * (r / 2);
                const int key = warp * dec::kKeysPerWarp + nt * 8 + 2 * (lane % 4) + r % 2;  // keys not permuted
                double want = 0;
                for (int d = 0; d < hdim; ++d) {
                  const size_t at = static_cast<size_t>(row) * hdim + d, k_at = static_cast<size_t>(key) * hdim + d;
                  want += q[at] * byte_value(kv, k_rows[k_at]);
                }
                INFO("warp " << warp << " row " << row << " key " << key);
                REQUIRE(s[nt][lane].v[r] == want);
              }
        }
      }
}

TEST_CASE("decode fragments: O = P V through the lane maps, byte permutes and MMA layout equals the matmul") {
  for (KvDType kv : {KvDType::fp8_e4m3, KvDType::int8})
    for (int hdim : kHdims)
      for (uint64_t seed : {1u, 2u, 3u}) {
        INFO("kv " << attnprof::core::to_string(kv) << " hdim " << hdim << " seed " << seed);
        uint64_t state = seed * 104729 + static_cast<uint64_t>(hdim);
        std::vector<uint8_t> v_rows(static_cast<size_t>(dec::kBlockN) * hdim);  // (kBlockN keys, hdim)
        for (uint8_t& b : v_rows) b = random_code(kv, state);
        const std::vector<uint8_t> tile = stage_tile(v_rows, hdim);
        const int words = hdim / 8 / 4;  // 32-bit words of a lane's bytes of one V row
        for (int warp = 0; warp < dec::kWarps; ++warp) {
          double p[16][16];  // (rows, the warp's 16 keys): P, the A operand as the S accumulators give it
          for (auto& row : p)
            for (double& x : row) x = random_value(state);
          std::array<LaneA, kLanes> a{};
          for (int lane = 0; lane < kLanes; ++lane)
            for (int r = 0; r < 4; ++r)
              for (int h = 0; h < 2; ++h)
                a[lane].v[r][h] = p[lane / 4 + 8 * (r % 2)][frag::mma_k(lane % 4, 2 * (r / 2) + h)];
          std::vector<std::array<LaneC, kLanes>> o(static_cast<size_t>(hdim / 8));  // O's n8 tiles
          for (int w = 0; w < words; ++w) {
            std::array<LaneB, kLanes> b[4] = {};  // tiles 4 w .. 4 w + 3
            for (int lane = 0; lane < kLanes; ++lane) {
              const int g = lane / 4, t = lane % 4;
              uint32_t key_words[4];  // keys mma_k(t, e): 2t, 2t + 1, 2t + 8, 2t + 9
              for (int e = 0; e < 4; ++e) {  // keys 2t + 8 and 2t + 9 eight rows after 2t and 2t + 1
                const int row = warp * dec::kKeysPerWarp + frag::mma_k(t, e % 2);
                const auto rows_on = static_cast<uint32_t>((e / 2) * 8 * hdim + 4 * w);
                key_words[e] = word_at(tile, frag::v_lane_offset(hdim, row, g) + rows_on);
              }
              uint32_t low_keys[2], high_keys[2];
              frag::interleave_keys(key_words[0], key_words[1], low_keys[0], low_keys[1]);
              frag::interleave_keys(key_words[2], key_words[3], high_keys[0], high_keys[1]);
              for (int h = 0; h < 2; ++h)
                for (int j = 0; j < 2; ++j)  // tile 4 w + 2 h + j: the 16-bit half j of each pairs word
                  for (int x = 0; x < 2; ++x) {
                    b[2 * h + j][lane].v[0][x] = byte_value(kv, byte_of(low_keys[h], 2 * j + x));
                    b[2 * h + j][lane].v[1][x] = byte_value(kv, byte_of(high_keys[h], 2 * j + x));
                  }
            }
            for (int j = 0; j < 4; ++j) mma_m16n8k16(a, b[j], o[static_cast<size_t>(4 * w + j)]);
          }
          // The merge's write: value r of tile j goes to row g + 8 (r / 2), head dim pv_dim(j, 2t + r % 2).
          std::vector<int> written(16 * static_cast<size_t>(hdim), 0);
          for (int j = 0; j < hdim / 8; ++j)
            for (int lane = 0; lane < kLanes; ++lane)
              for (int r = 0; r < 4; ++r) {
                const int row = lane / 4 + 8 * (r / 2);
                const int d = frag::pv_dim(hdim, j, 2 * (lane % 4) + r % 2);
                ++written[static_cast<size_t>(row) * hdim + d];
                double want = 0;
                for (int key = 0; key < 16; ++key) {
                  const size_t v_at = static_cast<size_t>(warp * dec::kKeysPerWarp + key) * hdim + d;
                  want += p[row][key] * byte_value(kv, v_rows[v_at]);
                }
                INFO("warp " << warp << " row " << row << " d " << d);
                REQUIRE(o[static_cast<size_t>(j)][lane].v[r] == want);
              }
          CHECK(std::count(written.begin(), written.end(), 1) == 16 * hdim);
        }
      }
}

TEST_CASE("decode fragments: the warps' K and V reads and the tile's cp.async writes are free of bank conflicts") {
  for (int hdim : kHdims) {
    INFO("hdim " << hdim);
    const int v_width = hdim / 8;
    for (int warp = 0; warp < dec::kWarps; ++warp) {
      for (int nt = 0; nt < 2; ++nt)
        for (int i = 0; i < hdim / 64; ++i) {
          std::vector<uint32_t> k(kLanes);
          for (int lane = 0; lane < kLanes; ++lane)
            k[lane] = frag::k_lane_offset(hdim, warp * dec::kKeysPerWarp + nt * 8 + lane / 4, lane % 4, i);
          CHECK(conflict_degree(k, 16) == 1);
        }
      for (int e = 0; e < 4; ++e) {
        std::vector<uint32_t> v(kLanes), unswizzled(kLanes);
        for (int lane = 0; lane < kLanes; ++lane) {
          const int row = warp * dec::kKeysPerWarp + frag::mma_k(lane % 4, e);
          v[lane] = frag::v_lane_offset(hdim, row, lane / 4);
          unswizzled[lane] = static_cast<uint32_t>(row * hdim + frag::pv_dim(hdim, 0, lane / 4));
        }
        CHECK(conflict_degree(v, v_width) == 1);
        CHECK(conflict_degree(unswizzled, v_width) >= 4);  // the model does see conflicts: rows 2t share banks
      }
    }
    // load_kv_tile_quant: thread x of the CTA copies chunk i * kThreads + x (row-major over the tile).
    const int chunks_per_row = hdim / frag::kChunkBytes;
    for (int i = 0; i < dec::kBlockN * chunks_per_row / dec::kThreads; ++i)
      for (int warp = 0; warp < dec::kWarps; ++warp) {
        std::vector<uint32_t> dst(kLanes);
        for (int lane = 0; lane < kLanes; ++lane) {
          const int chunk = i * dec::kThreads + warp * kLanes + lane;
          dst[lane] = frag::byte_tile_offset(hdim, chunk / chunks_per_row, chunk % chunks_per_row * frag::kChunkBytes);
        }
        CHECK(conflict_degree(dst, 16) == 1);
      }
  }
}
