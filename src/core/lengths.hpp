// Sequence-length distributions of a variable-length (packed) batch, the sweep axis `lengths`
// (docs/sweep-spec.md#variable-length-batches):
//   uniform:LO:HI     every length in [LO, HI] equally likely (integers, inclusive)
//   zipf:S:LO:HI      P(len) proportional to len^-S on [LO, HI], S > 0 (many short, few long)
//   list:A/B/C        exactly these lengths; the list's length is the batch
// A draw is a pure function of (distribution, count or token budget, seed): draw i uses the i-th
// output of a splitmix64 counter (kernels/common/random.hpp's mixer), so the same spec gives the same
// lengths on every machine and in every run.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnprof::core {

// Most sequences one packed batch may hold (a tokens budget of short sequences could otherwise ask
// for millions), and the widest zipf range (its inverse CDF is a table of HI - LO + 1 doubles).
inline constexpr int64_t kMaxVarlenSequences = int64_t{1} << 16;
inline constexpr int64_t kMaxZipfRange = int64_t{1} << 20;
// Most sequence lengths a whole sweep may draw (32 MiB of lengths): a range of batch sizes times a
// distribution would otherwise hold gigabytes of them.
inline constexpr int64_t kMaxSweepSequences = int64_t{1} << 22;

struct LengthDistribution {
  enum class Kind { uniform, zipf, list };
  Kind kind = Kind::uniform;
  int64_t lo = 1, hi = 1;     // uniform and zipf: the inclusive range
  double exponent = 0;        // zipf: S
  std::vector<int64_t> list;  // list: the lengths
  std::string text;           // as written, trimmed: the point's label quotes it
  // zipf: the cumulative weights of LO .. HI, built once by parse_lengths (a sweep draws from one
  // distribution for many points).
  std::shared_ptr<const std::vector<double>> zipf_cdf;
  bool is_list() const { return kind == Kind::list; }
};

// Throws InputError with a one-line message quoting `text`: an unknown kind, a missing or extra
// field, a non-number, LO > HI, a length < 1, S <= 0 (or not finite), an empty list, a zipf range
// wider than kMaxZipfRange, a list longer than kMaxVarlenSequences.
LengthDistribution parse_lengths(std::string_view text);

// `count` lengths drawn with `seed` (a list's own lengths, whatever count and seed are).
std::vector<int64_t> draw_lengths(const LengthDistribution&, int64_t count, uint64_t seed);
// Lengths drawn with `seed` until their sum reaches `tokens` (the last one clipped so that the sum is
// exactly `tokens`, which may leave it below LO). Throws InputError for a list (it sets the batch) and
// past kMaxVarlenSequences lengths.
std::vector<int64_t> draw_lengths_to_tokens(const LengthDistribution&, int64_t tokens, uint64_t seed);

}  // namespace attnprof::core
