// The paged KV cache every paged kernel and testbed shares (core/shape.hpp describes the layout):
// a pool of pages [pages, kv_heads, page_size, hdim] and an int32 block table [batch, pages_per_seq].
// The table is a seeded shuffle of all the pool's pages, so consecutive logical pages of a sequence
// land far apart as they do under a serving engine's allocator after some churn; it is a pure
// function of (shape, seed), computed the same on every run.
#pragma once
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/shape.hpp"
#include "kernels/common/random.hpp"

namespace attnprof::kernels {

// Element offset in the pool of logical element (batch b, kv head h, key j, dim d).
ATTNPROF_HD int64_t paged_offset(const int32_t* table, int64_t pages_per_seq, int64_t kv_heads, int64_t page_size,
                                 int64_t hdim, int64_t b, int64_t h, int64_t j, int64_t d) {
  const int64_t page = table[b * pages_per_seq + j / page_size];
  return ((page * kv_heads + h) * page_size + j % page_size) * hdim + d;
}

// Entry b * pages_per_seq + p: the physical page of sequence b's logical page p; every page of the
// pool appears exactly once (Fisher-Yates with splitmix64 under `seed`).
inline std::vector<int32_t> shuffled_block_table(const core::Shape& s, uint64_t seed) {
  std::vector<int32_t> table(static_cast<size_t>(s.block_table_elems()));
  std::iota(table.begin(), table.end(), 0);
  uint64_t state = seed ^ 0x70616765ull;  // "page"
  for (size_t i = table.size(); i > 1; --i) {
    state = splitmix64(state);
    const size_t j = static_cast<size_t>(state % i);
    std::swap(table[i - 1], table[j]);
  }
  return table;
}

}  // namespace attnprof::kernels
