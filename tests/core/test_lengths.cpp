#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

#include "core/errors.hpp"
#include "core/lengths.hpp"

using namespace attnprof;
using namespace attnprof::core;

namespace {

void require_bad(const std::string& text, const std::string& token) {
  INFO("lengths: " << text);
  try {
    parse_lengths(text);
    FAIL("no InputError for '" << text << "'");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(msg.find(token) != std::string::npos);
    CHECK(msg.find(text) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

}  // namespace

TEST_CASE("lengths: the three distributions parse") {
  const auto u = parse_lengths("uniform:512:4096");
  CHECK(u.kind == LengthDistribution::Kind::uniform);
  CHECK(u.lo == 512);
  CHECK(u.hi == 4096);
  CHECK(u.text == "uniform:512:4096");
  const auto z = parse_lengths(" zipf:1.5:64:8192 ");
  CHECK(z.kind == LengthDistribution::Kind::zipf);
  CHECK(z.exponent == 1.5);
  CHECK(z.lo == 64);
  CHECK(z.hi == 8192);
  CHECK(z.text == "zipf:1.5:64:8192");
  const auto l = parse_lengths("list:512/1024/4096");
  CHECK(l.is_list());
  CHECK(l.list == std::vector<int64_t>{512, 1024, 4096});
  CHECK(parse_lengths("uniform:7:7").hi == 7);
}

TEST_CASE("lengths: malformed distributions are one-line InputErrors quoting the text") {
  require_bad("uniform:4096:512", "greater than");
  require_bad("uniform:0:8", "below 1");
  require_bad("uniform:-3:8", "below 1");
  require_bad("uniform:1.5:8", "not an integer");
  require_bad("uniform:a:8", "not an integer");
  require_bad("uniform:8", "uniform:LO:HI");
  require_bad("uniform:1:2:3", "uniform:LO:HI");
  require_bad("zipf:0:1:8", "must be positive");
  require_bad("zipf:-1:1:8", "must be positive");
  require_bad("zipf:x:1:8", "not a number");
  require_bad("zipf:inf:1:8", "must be positive");
  require_bad("zipf:1:9:8", "greater than");
  require_bad("zipf:1:1:8000000", "zipf range");
  require_bad("zipf:1:8", "zipf:S:LO:HI");
  require_bad("list:", "at least one length");
  require_bad("list:8//16", "not an integer");
  require_bad("list:8/0", "below 1");
  require_bad("list:8/x", "not an integer");
  require_bad("normal:1:8", "unknown distribution");
  require_bad("512", "unknown distribution");
}

TEST_CASE("lengths: a draw is deterministic for a seed and stays within [LO, HI]") {
  for (const char* text : {"uniform:512:4096", "zipf:1.2:16:2048", "uniform:1:1", "zipf:3:1:4"}) {
    INFO(text);
    const auto d = parse_lengths(text);
    const auto a = draw_lengths(d, 500, 7);
    CHECK(a == draw_lengths(d, 500, 7));
    CHECK(a.size() == 500);
    CHECK(*std::min_element(a.begin(), a.end()) >= d.lo);
    CHECK(*std::max_element(a.begin(), a.end()) <= d.hi);
    // A prefix of a longer draw: draw i depends on i and the seed only.
    const auto b = draw_lengths(d, 100, 7);
    CHECK(std::equal(b.begin(), b.end(), a.begin()));
  }
  const auto u = parse_lengths("uniform:512:4096");
  CHECK(draw_lengths(u, 64, 1) != draw_lengths(u, 64, 2));
  // The draw is pinned: a change of algorithm would relabel every results file's points.
  CHECK(draw_lengths(u, 4, 1) == std::vector<int64_t>{3678, 1488, 2460, 3101});
  CHECK(draw_lengths(parse_lengths("zipf:1.2:16:2048"), 4, 1) == std::vector<int64_t>{847, 39, 123, 309});
  // A list is its lengths, whatever count and seed.
  CHECK(draw_lengths(parse_lengths("list:3/1/2"), 10, 9) == std::vector<int64_t>{3, 1, 2});
}

TEST_CASE("lengths: uniform covers its range, zipf favours short lengths") {
  const auto u = draw_lengths(parse_lengths("uniform:1:4"), 4000, 3);
  std::map<int64_t, int> seen;
  for (int64_t len : u) ++seen[len];
  REQUIRE(seen.size() == 4);
  for (const auto& [len, n] : seen) CHECK(n > 850);  // 1000 expected each
  // zipf:1:1:8: P(1) = 1 / H_8 = 0.368, P(8) = 0.046.
  const auto z = draw_lengths(parse_lengths("zipf:1:1:8"), 4000, 3);
  const auto ones = std::count(z.begin(), z.end(), 1), eights = std::count(z.begin(), z.end(), 8);
  CHECK(ones > 1300);
  CHECK(ones < 1650);
  CHECK(eights > 120);
  CHECK(eights < 260);
}

TEST_CASE("lengths: a tokens budget draws until the sum reaches it, the last length clipped") {
  const auto d = parse_lengths("uniform:512:4096");
  const auto lens = draw_lengths_to_tokens(d, 16384, 1);
  CHECK(std::accumulate(lens.begin(), lens.end(), int64_t{0}) == 16384);
  for (size_t i = 0; i + 1 < lens.size(); ++i) {
    CHECK(lens[i] >= 512);
    CHECK(lens[i] <= 4096);
  }
  // The same draws as a batch of that many, but for the clipped last one.
  const auto batch = draw_lengths(d, static_cast<int64_t>(lens.size()), 1);
  CHECK(std::equal(lens.begin(), lens.end() - 1, batch.begin()));
  CHECK(lens.back() <= batch.back());
  // A budget below one length is one clipped sequence.
  CHECK(draw_lengths_to_tokens(d, 100, 1) == std::vector<int64_t>{100});
  CHECK_THROWS_AS(draw_lengths_to_tokens(parse_lengths("list:4/4"), 8, 1), InputError);
  CHECK_THROWS_AS(draw_lengths_to_tokens(parse_lengths("uniform:1:1"), kMaxVarlenSequences + 1, 1), InputError);
  CHECK_THROWS_AS(draw_lengths(d, kMaxVarlenSequences + 1, 1), InputError);
}
