// The index maps of the decode kernel's quantized-cache path (decode_kernel.cuh), which reads K's and
// V's bytes from shared memory straight into the B fragments of mma.sync m16n8k16 and converts them to
// fp16 in registers. Plain constexpr functions of the lane's coordinates, shared by the kernel and the
// host tests (tests/kernels/decode/test_decode_fragments.cpp), which replay the MMA's fragment layout
// through them and compare with a plain matmul.
//
// Lane (g = lane / 4, t = lane % 4) of m16n8k16 (f16 operands) holds:
//   A (16 x 16, row-major)  a[0] (row g, k 2t, 2t+1), a[1] (row g+8, same k), a[2] (row g, k 2t+8, 2t+9),
//                           a[3] (row g+8, k 2t+8, 2t+9)
//   B (16 x 8, col-major)   b[0] (k 2t, 2t+1, column g), b[1] (k 2t+8, 2t+9, column g)
//   C (16 x 8)              c[0], c[1] (row g, columns 2t, 2t+1), c[2], c[3] (row g+8, same columns)
// Element e = 0..3 of a lane's k pairs (b[0]'s two, then b[1]'s; a[0] or a[1]'s, then a[2] or a[3]'s)
// is MMA index k = mma_k(t, e).
//
// S = Q K^T sums over d, so any order of d applied to Q and K alike gives the same S. The kernel takes
// element e of k-step ks of lane t from d = qk_dim(hdim, t, ks, e): a lane's K elements over all the
// k-steps are hdim / 4 consecutive bytes of its key row (16-byte reads), and Q's A fragments take the
// same d (Q is read once per CTA). The key order is not permuted: S's column n of n8 tile nt is key
// 8 nt + n of the warp's 16.
//
// O = P V (k = key, n = d): the B fragment of lane g is column g of an n8 tile at keys mma_k(t, e).
// The kernel gives column c of O's n8 tile j the head dim d = pv_dim(hdim, j, c): lane g then finds
// its column of every tile in hdim / 8 consecutive bytes of a V row, byte j for tile j, and takes the
// (key 2t, key 2t+1) and (key 2t+8, key 2t+9) byte pairs of each tile with byte permutes
// (interleave_keys). The warps' merge writes O's accumulators back at their d (natural order).
//
// Byte tiles (kBlockN rows of hdim bytes, one per stage of K and of V): 16-byte chunks XOR-swizzled
// inside each 128-byte line (byte_tile_offset), so that each 128-byte line of the K/V stream lands in
// one aligned 128-byte segment of shared memory, and so that the K reads (rows g, bytes at t) and the
// V reads (rows mma_k(t, e), bytes at g) of a warp are free of bank conflicts.
#pragma once
#include <cstdint>

#include "kernels/common/random.hpp"  // ATTNPROF_HD

namespace attnprof::kernels::decode::frag {

inline constexpr int kLineBytes = 128;  // one shared-memory bank line; one L2 line of the stream
inline constexpr int kChunkBytes = 16;  // the unit of cp.async and of the swizzle

// The head dims the byte tiles are laid out for: a row is half a line or a whole one.
constexpr bool byte_tile_hdim(int hdim) { return hdim == 64 || hdim == 128; }

// MMA k index (0..15) of element e (0..3) of quad column t's k pairs.
ATTNPROF_HD constexpr int mma_k(int t, int e) { return 2 * t + e % 2 + 8 * (e / 2); }

// S = Q K^T: the head dim of element e of k-step ks (of hdim / 16) of quad column t.
ATTNPROF_HD constexpr int qk_dim(int hdim, int t, int ks, int e) { return hdim / 4 * t + 4 * ks + e; }

// O = P V: the head dim of column c (0..7) of O's n8 tile j (of hdim / 8).
ATTNPROF_HD constexpr int pv_dim(int hdim, int j, int c) { return hdim / 8 * c + j; }

// Byte offset in a byte tile (rows of hdim bytes) of byte `col` of row `row`: chunk k of 128-byte line
// L is stored at chunk k ^ mask, with mask the line's first row % 8 (each line holds 128 / hdim whole
// rows, and a line's rows share its mask).
ATTNPROF_HD constexpr uint32_t byte_tile_offset(int hdim, int row, int col) {
  const int rows_per_line = kLineBytes / hdim;
  const int mask = (row & 7) & ~(rows_per_line - 1);
  const int flat = row * hdim + col;
  const int chunk = (flat / kChunkBytes) % (kLineBytes / kChunkBytes);
  return static_cast<uint32_t>((flat / kLineBytes) * kLineBytes + (chunk ^ mask) * kChunkBytes + flat % kChunkBytes);
}

// The 16 bytes lane t reads from K row `row` (one of the warp's keys) for k-steps 4 i .. 4 i + 3: 32-bit
// word q of them is k-step 4 i + q, its bytes the elements e = 0..3.
ATTNPROF_HD constexpr uint32_t k_lane_offset(int hdim, int row, int t, int i) {
  return byte_tile_offset(hdim, row, qk_dim(hdim, t, 4 * i, 0));
}
// The hdim / 8 bytes lane g reads from V row `row`: byte j is column g of O's n8 tile j.
ATTNPROF_HD constexpr uint32_t v_lane_offset(int hdim, int row, int g) {
  return byte_tile_offset(hdim, row, pv_dim(hdim, 0, g));
}

// __byte_perm: byte n of the result is byte (s >> 4 n) & 7 of the eight bytes of y:x (x's first).
ATTNPROF_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t bytes = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t out = 0;
  for (int n = 0; n < 4; ++n) out |= static_cast<uint32_t>((bytes >> (8 * ((s >> (4 * n)) & 7))) & 0xFF) << (8 * n);
  return out;
#endif
}

// Two keys' words of V bytes (w0 of the lower key) as byte pairs: pairs_lo holds (w0.byte 0, w1.byte 0,
// w0.byte 1, w1.byte 1), pairs_hi the same of bytes 2 and 3. Each 16-bit half is one B register's pair
// (lower key in the low byte) of one n8 tile.
ATTNPROF_HD void interleave_keys(uint32_t w0, uint32_t w1, uint32_t& pairs_lo, uint32_t& pairs_hi) {
  pairs_lo = byte_perm(w0, w1, 0x5140u);
  pairs_hi = byte_perm(w0, w1, 0x7362u);
}

// int8 bytes b (two's complement) as fp16 bits 0x6400 | (b + 128): the fp16 value 1152 + b, exact for
// every b in [-128, 127]. lo holds bytes 0 and 1, hi bytes 2 and 3 (the lower byte in the lower half);
// less kInt8HalfBias (fp16 bits kInt8HalfBiasBits) each half is b.
inline constexpr uint16_t kInt8HalfBiasBits = 0x6480;  // 1152 = 2^10 + 128
inline constexpr int kInt8HalfBias = 1152;
ATTNPROF_HD void int8_as_biased_halves(uint32_t bytes, uint32_t& lo, uint32_t& hi) {
  constexpr uint32_t kExponents = 0x64646464u;  // the high byte of 1024 + x, x < 1024
  const uint32_t biased = bytes ^ 0x80808080u;  // b + 128 in each byte
  lo = byte_perm(biased, kExponents, 0x5140u);
  hi = byte_perm(biased, kExponents, 0x7362u);
}

}  // namespace attnprof::kernels::decode::frag
