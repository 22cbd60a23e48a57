// The keys a block of query rows sees, as a pure constexpr function that the tile heuristics of the
// fused kernels (fused_tiles.hpp, fused_sm90_tiles.hpp) share with the host tests.
// The tile headers live in src/core/tiles (not beside their kernels) because the diagnosis reads the
// same shapes to judge the kernel that ran (core/work_split.cpp): kernels include core, never the reverse.
#pragma once

namespace attnprof::kernels {

// Keys [begin, end) that rows m0 .. m0 + rows - 1 see together under core/shape.hpp's masks (p = i +
// seq_k - seq_q): from the first row's window start, p - window + 1, to the last row's limit, p + 1
// causal, p + window with a window (and no causal mask), else seq_k. Both ends grow with the row and
// consecutive rows' ranges touch, so the union is this one range. Empty (begin >= end) when no row
// sees a key. window 0 is no window.
struct KeySpan {
  long long begin = 0, end = 0;
};
constexpr KeySpan rows_key_span(long long m0, long long rows, long long seq_q, long long seq_k, bool causal,
                                long long window) {
  const long long p_first = m0 + seq_k - seq_q, p_last = m0 + rows - 1 + seq_k - seq_q;
  long long end = causal ? p_last + 1 : window > 0 ? p_last + window : seq_k;
  end = end < seq_k ? end : seq_k;
  long long begin = window > 0 ? p_first - window + 1 : 0;
  begin = begin > 0 ? begin : 0;
  return {begin, end};
}

}  // namespace attnprof::kernels
