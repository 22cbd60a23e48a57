// One key tile of the online softmax of the mma.sync kernels (fused/ and decode/), for the rows a lane
// holds: 2 * kMTiles rows, rows quad_row and quad_row + 8 of each of kMTiles m16 MMA tiles ([2 mt +
// half] below), each row's scores spread over the 4 lanes of a quad.
//
// With a lazy max (move_lazy_max, kernels/common/device_math.cuh): P = exp2(scale_log2 * (s - max))
// against a running row max that moves only when a score of the warp's rows would make some P exceed
// 2^kLazyMaxLog2. Once the maxima have settled (after a row's first few key tiles), a tile needs
// neither the quad shuffles of the max nor the O rescale: one warp vote instead. The row sums stay
// per lane (this lane's share of the row's keys); the kernel reduces them over the quad once, at the
// end.
#pragma once
#include <cmath>

#include "kernels/common/device_math.cuh"

namespace attnprof::kernels {

// acc_s: the tile's raw scores S in C-fragment layout, (16 * kMTiles rows, 8 * kNTilesS keys), masked
// scores -inf; overwritten with P. acc_o: O so far, (16 * kMTiles rows, 8 * kNTilesO columns), rescaled
// when a max moves. row_max: each row's running max of raw scores (-inf before its first key).
// row_sum: this lane's running sum of P for each row.
template <int kMTiles, int kNTilesS, int kNTilesO>
__device__ __forceinline__ void online_softmax_tile(float (&acc_s)[kMTiles][kNTilesS][4],
                                                    float (&acc_o)[kMTiles][kNTilesO][4],
                                                    float (&row_max)[kMTiles * 2], float (&row_sum)[kMTiles * 2],
                                                    float scale_log2) {
  // This lane's max of each row's scores in the tile; then the lazy max moves (or not).
  float lane_max[kMTiles * 2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float m = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kNTilesS; ++nt)
        m = fmaxf(m, fmaxf(acc_s[mt][nt][half * 2], acc_s[mt][nt][half * 2 + 1]));
      lane_max[2 * mt + half] = m;
    }
  float rescale[kMTiles * 2];
  if (move_lazy_max(row_max, lane_max, scale_log2, rescale)) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNTilesO; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] *= rescale[2 * mt + e / 2];
  }
  // P = exp2(s * scale_log2 - max * scale_log2), and the row sums rescaled and grown by the tile's P.
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      // A row with no visible key so far keeps max -inf; subtracting 0 keeps exp2(-inf) = 0.
      const float max = row_max[2 * mt + half];
      const float max_scaled = max == -INFINITY ? 0.f : max * scale_log2;
      float tile_sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < kNTilesS; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& s = acc_s[mt][nt][half * 2 + e];
          s = fast_exp2(fmaf(s, scale_log2, -max_scaled));
          tile_sum += s;
        }
      row_sum[2 * mt + half] = row_sum[2 * mt + half] * rescale[2 * mt + half] + tile_sum;
    }
}

}  // namespace attnprof::kernels
