// Length distributions of packed batches (lengths.hpp): parsing and the seeded, platform-independent
// draw (no std:: distribution, whose algorithms differ between standard libraries).
#include "core/lengths.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/strings.hpp"

namespace attnprof::core {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct LengthParser {
  std::string_view text;

  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(fmt::format("bad lengths '{}': {}", text, why));
  }

  int64_t length(std::string_view field, std::string_view what) const {
    int64_t v = 0;
    const char* end = field.data() + field.size();
    const auto [ptr, ec] = std::from_chars(field.data(), end, v);
    if (field.empty() || ec != std::errc() || ptr != end) fail(fmt::format("{} '{}' is not an integer", what, field));
    if (v < 1) fail(fmt::format("{} {} is below 1 (a sequence holds at least one token)", what, v));
    return v;
  }

  double exponent(std::string_view field) const {
    double v = 0;
    const char* end = field.data() + field.size();
    const auto [ptr, ec] = std::from_chars(field.data(), end, v);
    if (field.empty() || ec != std::errc() || ptr != end) fail(fmt::format("exponent S '{}' is not a number", field));
    if (!std::isfinite(v) || v <= 0) fail(fmt::format("exponent S {} must be positive", field));
    return v;
  }

  void range(LengthDistribution& d, std::string_view lo, std::string_view hi) const {
    d.lo = length(lo, "LO");
    d.hi = length(hi, "HI");
    if (d.lo > d.hi) fail(fmt::format("LO {} is greater than HI {}", d.lo, d.hi));
  }
};

// The i-th draw of `seed`: 64 uniform bits.
uint64_t draw_bits(uint64_t seed, uint64_t i) { return splitmix64(splitmix64(seed) ^ splitmix64(i + 1)); }

// One length: uniform by multiply-shift (Lemire), zipf by the inverse of the CDF table.
class Sampler {
 public:
  explicit Sampler(const LengthDistribution& d) : d_(d) {
    if (d.kind == LengthDistribution::Kind::zipf && !d.zipf_cdf)
      throw std::logic_error("lengths: a zipf distribution that parse_lengths did not build");
  }
  int64_t operator()(uint64_t bits) const {
    if (d_.kind == LengthDistribution::Kind::uniform) {
      const auto span = static_cast<unsigned __int128>(d_.hi - d_.lo + 1);
      return d_.lo + static_cast<int64_t>((span * bits) >> 64);
    }
    const std::vector<double>& cdf = *d_.zipf_cdf;
    const double u = static_cast<double>(bits >> 11) * 0x1p-53 * cdf.back();  // [0, total)
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    return d_.lo + std::min<int64_t>(it - cdf.begin(), d_.hi - d_.lo);
  }

 private:
  const LengthDistribution& d_;
};

}  // namespace

LengthDistribution parse_lengths(std::string_view raw) {
  const std::string_view text = trim(raw);
  const LengthParser p{text};
  LengthDistribution d;
  d.text = std::string(text);
  const size_t colon = text.find(':');
  const std::string_view kind = colon == std::string_view::npos ? text : text.substr(0, colon);
  std::vector<std::string_view> fields;
  if (colon != std::string_view::npos)
    for (std::string_view field : split(text.substr(colon + 1), ':')) fields.push_back(trim(field));
  if (kind == "uniform") {
    d.kind = LengthDistribution::Kind::uniform;
    if (fields.size() != 2) p.fail("expected uniform:LO:HI");
    p.range(d, fields[0], fields[1]);
  } else if (kind == "zipf") {
    d.kind = LengthDistribution::Kind::zipf;
    if (fields.size() != 3) p.fail("expected zipf:S:LO:HI");
    d.exponent = p.exponent(fields[0]);
    p.range(d, fields[1], fields[2]);
    if (d.hi - d.lo + 1 > kMaxZipfRange)
      p.fail(fmt::format("a zipf range of more than {} lengths", kMaxZipfRange));
    auto cdf = std::make_shared<std::vector<double>>();
    cdf->reserve(static_cast<size_t>(d.hi - d.lo + 1));
    double sum = 0;
    for (int64_t len = d.lo; len <= d.hi; ++len) {
      sum += std::pow(static_cast<double>(len), -d.exponent);
      cdf->push_back(sum);
    }
    d.zipf_cdf = std::move(cdf);
  } else if (kind == "list") {
    d.kind = LengthDistribution::Kind::list;
    if (fields.size() != 1 || fields[0].empty()) p.fail("expected list:A/B/C with at least one length");
    for (std::string_view item : split(fields[0], '/')) {
      if (static_cast<int64_t>(d.list.size()) >= kMaxVarlenSequences)
        p.fail(fmt::format("more than {} lengths", kMaxVarlenSequences));
      d.list.push_back(p.length(trim(item), "length"));
    }
  } else {
    p.fail(fmt::format("unknown distribution '{}' (expected uniform:LO:HI, zipf:S:LO:HI or list:A/B/C)", kind));
  }
  return d;
}

std::vector<int64_t> draw_lengths(const LengthDistribution& d, int64_t count, uint64_t seed) {
  if (d.is_list()) return d.list;
  if (count > kMaxVarlenSequences)
    throw InputError(fmt::format("lengths '{}': a batch of {} sequences is more than {}", d.text, count,
                                 kMaxVarlenSequences));
  const Sampler sample(d);
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = sample(draw_bits(seed, i));
  return out;
}

std::vector<int64_t> draw_lengths_to_tokens(const LengthDistribution& d, int64_t tokens, uint64_t seed) {
  if (d.is_list())
    throw InputError(fmt::format("lengths '{}' is a list: it sets the batch, and takes no tokens budget", d.text));
  const Sampler sample(d);
  std::vector<int64_t> out;
  int64_t sum = 0;
  for (uint64_t i = 0; sum < tokens; ++i) {
    if (static_cast<int64_t>(out.size()) >= kMaxVarlenSequences)
      throw InputError(fmt::format("lengths '{}' with tokens={}: more than {} sequences", d.text, tokens,
                                   kMaxVarlenSequences));
    const int64_t len = sample(draw_bits(seed, i));
    out.push_back(std::min(len, tokens - sum));
    sum += out.back();
  }
  return out;
}

}  // namespace attnprof::core
