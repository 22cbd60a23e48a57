// core/escape.cpp: each destination's escaping on known inputs: terminal lines (controls, C1, bytes that
// are not UTF-8), valid UTF-8 for XML, GitHub Markdown, and the CSV formula guard.
#include <catch2/catch.hpp>

#include <string>

#include "core/escape.hpp"

namespace escape = attnprof::core::escape;
using namespace std::string_literals;

TEST_CASE("one_line: controls become visible escapes, valid UTF-8 passes unchanged") {
  CHECK(escape::one_line("fused\n\r\tx") == "fused\\n\\r\\tx");
  CHECK(escape::one_line("a\x1b[31mb") == "a\\x1b[31mb");
  CHECK(escape::one_line("\x7f"s) == "\\x7f");
  CHECK(escape::one_line("nul\0end"s) == "nul\\x00end");
  CHECK(escape::one_line("\xc2\x9b" "2J") == "\\u009b2J");             // C1 CSI
  CHECK(escape::one_line("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(escape::one_line("\xff\xfe") == "\\xff\\xfe");                  // never UTF-8
  CHECK(escape::one_line("\xc0\xaf") == "\\xc0\\xaf");                  // overlong '/'
  CHECK(escape::one_line("\xed\xa0\x80") == "\\xed\\xa0\\x80");         // a UTF-16 surrogate
  CHECK(escape::one_line("\xe2\x82") == "\\xe2\\x82");                  // truncated
  CHECK(escape::terminal("a\nb") == escape::one_line("a\nb"));
}

TEST_CASE("valid_utf8: every byte that starts no valid sequence becomes U+FFFD") {
  CHECK(escape::valid_utf8("plain \xc3\xa9") == "plain \xc3\xa9");
  CHECK(escape::valid_utf8("a\xff" "b") == "a\xef\xbf\xbd" "b");
  CHECK(escape::valid_utf8("\xf4\x90\x80\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // > U+10FFFF
  CHECK(escape::valid_utf8("tab\tstays") == "tab\tstays");  // controls are XML's business, not this one's
}

TEST_CASE("markdown: markup and table characters escaped, line breaks as spaces, other controls dropped") {
  CHECK(escape::markdown("<b>&</b>") == "&lt;b&gt;&amp;&lt;/b&gt;");
  CHECK(escape::markdown("a|b*c_d`e[f]g\\h") == "a\\|b\\*c\\_d\\`e\\[f\\]g\\\\h");
  CHECK(escape::markdown("one\ntwo\r\tthree") == "one two  three");
  CHECK(escape::markdown("bell\x07 esc\x1b del\x7f") == "bell esc del");
  CHECK(escape::markdown("caf\xc3\xa9") == "caf\xc3\xa9");
}

TEST_CASE("csv_formula_guard: a formula gets a leading quote, a number does not") {
  CHECK(escape::csv_formula_guard("=1+1") == "'=1+1");
  CHECK(escape::csv_formula_guard("+cmd") == "'+cmd");
  CHECK(escape::csv_formula_guard("@SUM(A1)") == "'@SUM(A1)");
  CHECK(escape::csv_formula_guard("-2+3") == "'-2+3");
  CHECK(escape::csv_formula_guard("\tx") == "'\tx");
  CHECK(escape::csv_formula_guard("\rx") == "'\rx");
  CHECK(escape::csv_formula_guard("-1.5") == "-1.5");
  CHECK(escape::csv_formula_guard("-inf") == "-inf");
  CHECK(escape::csv_formula_guard("fused") == "fused");
  CHECK(escape::csv_formula_guard("") == "");
}
