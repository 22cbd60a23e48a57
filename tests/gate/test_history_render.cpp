// gate/history_render.cpp: the history's terminal table, Markdown and HTML, from build_history on
// synthetic runs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>

#include "core/stats.hpp"
#include "gate/history.hpp"
#include "gate_fixtures.hpp"

using namespace attnprof;
using namespace attnprof::gate;


TEST_CASE("history: the terminal table shows control characters of the files as visible escapes") {
  std::mt19937_64 rng(5);
  // A regression, so that the worst-regressions lines (shape and kernel) are printed too.
  std::vector<core::Results> runs = {test::history_run(rng, 100, 400, "rev\none", "2026-01-01\x1b[2J"),
                                     test::history_run(rng, 120, 400, "rev\rtwo\x1b]0;title\x07", "2026-01-02")};
  for (auto& r : runs)
    for (auto& rec : r.records) rec.kernel = "fu\x1b[31msed\nx";
  const History h = build_history(runs, {"a\n.json", "b.json"}, Options{});
  const std::string text = render_history_terminal(h);
  INFO(text);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find('\x07') == std::string::npos);
  // Every line is one of the table's own: the header, two runs, the change points, one regression.
  CHECK(std::count(text.begin(), text.end(), '\n') == 6);
  CHECK(text.find("run 1: a\\n.json (revision rev\\none, 2026-01-01\\x1b[2J)") != std::string::npos);
  CHECK(text.find("run 2: b.json (revision rev\\rtwo\\x1b]0;title\\x07, 2026-01-02)") != std::string::npos);
  CHECK(text.find("| fu\\x1b[31msed\\nx: run 2 slower") != std::string::npos);
}
