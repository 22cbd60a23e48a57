// core::trim and core::split, the pieces every text grammar is cut with.
#include <catch2/catch.hpp>

#include <string_view>
#include <vector>

#include "core/strings.hpp"

using attnprof::core::split;
using attnprof::core::trim;
using Parts = std::vector<std::string_view>;

TEST_CASE("trim drops spaces, tabs, carriage returns and newlines at both ends only") {
  CHECK(trim("  seq=64 \t") == "seq=64");
  CHECK(trim("\t\r\n a b \r\n") == "a b");
  CHECK(trim(" \t\r\n") == "");
  CHECK(trim("") == "");
  CHECK(trim("x") == "x");
  static_assert(trim(" constexpr ") == "constexpr");
}

TEST_CASE("split keeps every piece, empty ones too, untrimmed") {
  CHECK(split("a,b,c", ',') == Parts{"a", "b", "c"});
  CHECK(split("a,,b", ',') == Parts{"a", "", "b"});
  CHECK(split(" a , b ", ',') == Parts{" a ", " b "});
  CHECK(split(",", ',') == Parts{"", ""});
  CHECK(split("", ',') == Parts{""});
  CHECK(split("uniform:1:8", ':') == Parts{"uniform", "1", "8"});
}
