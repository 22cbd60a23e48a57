// Decode in its own terms. A decode step reads the whole KV cache to produce a few query rows per
// sequence: it is memory-bound by nature, so its figures are bandwidth and bytes per generated token,
// not FLOP/s. This file says which points are decode points (whatever kernel ran: attnprof's
// `decode`, `fused`, a vendor kernel through the Python bridge, a plugin) and computes the quantities
// they are judged by; core::diagnose (diagnosis.cpp, diagnosis_decode.cpp) and the renderers use them.
// docs/diagnosis.md ("Decode points") states the rules and their constants.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/results.hpp"

namespace attnprof::core {

// A decode point: at most kDecodeMaxSeqQ query rows per sequence (one generated token, or up to 16
// draft tokens of speculative decoding: the decode kernel's range) against at least
// kDecodeMinKeysPerQuery keys per query row, so the KV cache, not Q, is what the call moves. A
// backward point (Shape::pass) is never one.
inline constexpr int64_t kDecodeMaxSeqQ = 16;
inline constexpr int64_t kDecodeMinKeysPerQuery = 16;
bool is_decode(const Shape&);

// Tokens one call generates: batch x seq_q (every sequence's query rows).
int64_t generated_tokens(const Shape&);

// Bytes of the KV cache one call reads: K and V, batch x kv_heads x seq_k x (hdim + hdim_v) elements of
// the dtype (2 x ... x hdim when V is as wide as K), or with a sliding window only the keys some query position sees (cost_model's keys_seen)
// instead of seq_k (the block table of a paged cache is not part of it; the cost model's minimum adds it).
double kv_cache_bytes(const Shape&);

// The combine stage of a split-KV call: the stage (or else the launch) whose name holds "combine",
// with its share of the call's time: the stage's share of the P50 sum (Record::stages), else its share
// of the recorded launches' GPU time (Record::launches), named then by the kernel's function name
// without namespace, template arguments or parameters. nullopt when the call has no such stage.
struct CombineShare {
  std::string name;
  double time_share = 0;
};
std::optional<CombineShare> combine_share(const Record&);

// Keys per K/V tile of the kernel that ran, when its plan records one (Record::plan "block_n":
// attnprof's decode kernel); nullopt for kernels whose tile is not known.
std::optional<int64_t> kv_tile_keys(const Record&);

}  // namespace attnprof::core
