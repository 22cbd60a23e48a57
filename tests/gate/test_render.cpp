#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/results.hpp"
#include "gate/compare.hpp"
#include "gate/history.hpp"
#include "gate/render.hpp"
#include "gate_fixtures.hpp"
#include "report/golden.hpp"
#include "xml_check.hpp"

using namespace attnprof;
using gate::Verdict;
using test::latency_samples;
using test::make_record;
using test::make_results;

namespace {

// One point of each kind: slower, same, faster, noisy, failing error, missing, new.
gate::Comparison mixed_comparison(const std::string& odd_kernel = "fused") {
  std::mt19937_64 rng(21);
  std::vector<core::Record> base, cand;
  auto pair = [&](const std::string& kernel, int64_t seq, double factor, double cand_noise) {
    base.push_back(make_record(kernel, latency_samples(rng, 30, 100.0, 0.01), seq));
    cand.push_back(make_record(kernel, latency_samples(rng, 30, 100.0 * factor, cand_noise), seq));
  };
  pair(odd_kernel, 512, 1.20, 0.01);  // slower
  pair("fused", 1024, 1.00, 0.01);    // same
  pair("fused", 2048, 0.80, 0.01);    // faster
  pair("fused", 4096, 1.00, 0.30);    // noisy
  pair("reference", 512, 1.00, 0.01); // error in the candidate
  cand.back().status = core::Status::incorrect;
  cand.back().reason = "O error 0.5 > tolerance <0.01> & \"rows\" 'x'\x01";
  base.push_back(make_record("reference", latency_samples(rng, 30, 100.0, 0.01), 8192));  // missing
  cand.push_back(make_record("reference", latency_samples(rng, 30, 100.0, 0.01), 16384)); // new
  return gate::compare(make_results(base), make_results(cand), {}, "base <1>.json", "cand&2.json");
}

}  // namespace

TEST_CASE("the mixed fixture reaches every latency and bookkeeping verdict") {
  const auto cmp = mixed_comparison();
  REQUIRE(cmp.points.size() == 7);
  CHECK(cmp.points[0].verdict == Verdict::slower);
  CHECK(cmp.points[1].verdict == Verdict::same);
  CHECK(cmp.points[2].verdict == Verdict::faster);
  CHECK(cmp.points[3].verdict == Verdict::noisy);
  CHECK(cmp.points[4].verdict == Verdict::error);
  CHECK(cmp.points[5].verdict == Verdict::missing);
  CHECK(cmp.points[6].verdict == Verdict::added);
  CHECK(cmp.exit_code == kExitRegression);
  CHECK(cmp.summary.starts_with("FAIL"));
}

TEST_CASE("the XML escaping (core::escape::xml) escapes markup and replaces characters XML cannot carry") {
  using core::escape::xml;
  CHECK(xml("a<b>&\"c\"'d'") == "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  CHECK(xml(std::string("x\x01y\tz\n")) == "x\xEF\xBF\xBDy\tz\n");
  CHECK(xml(std::string("bad \xff byte")) == "bad \xEF\xBF\xBD byte");
  CHECK(xml("b8 h16/16 s2048x2048 d128 causal bf16") == "b8 h16/16 s2048x2048 d128 causal bf16");
}

TEST_CASE("the checker used below rejects malformed XML") {
  CHECK(test::check_xml("<a><b/></a>").ok);
  CHECK_FALSE(test::check_xml("<a><b></a>").ok);
  CHECK_FALSE(test::check_xml("<a x=\"1<2\"/>").ok);
  CHECK_FALSE(test::check_xml("<a>1 & 2</a>").ok);
  CHECK_FALSE(test::check_xml("<a>\x01</a>").ok);
  CHECK_FALSE(test::check_xml("<a/><b/>").ok);
}

TEST_CASE("JUnit: well-formed, escaped, one testcase per point, failures for regressions") {
  const auto cmp = mixed_comparison("fu<sed>&");
  const std::string xml = gate::render_junit(cmp);
  const auto check = test::check_xml(xml);
  INFO(check.error << "\n" << xml);
  REQUIRE(check.ok);
  CHECK(check.elements.at("testsuites") == 1);
  CHECK(check.elements.at("testcase") == 7);
  CHECK(check.elements.at("failure") == 3);  // slower, error, missing
  CHECK(check.elements.at("skipped") == 2);  // noisy, new
  CHECK(xml.find("tests=\"7\" failures=\"3\"") != std::string::npos);
  CHECK(xml.find("classname=\"attnprof.compare.fu&lt;sed&gt;&amp;\"") != std::string::npos);
  CHECK(xml.find("&lt;0.01&gt; &amp; &quot;rows&quot; &#39;x&#39;") != std::string::npos);
  CHECK(xml.find("<failure type=\"slower\"") != std::string::npos);
  CHECK(xml.find("<failure type=\"error\"") != std::string::npos);
  CHECK(xml.find("base &lt;1&gt;.json") != std::string::npos);
}

TEST_CASE("terminal table: every column, geomean row, reasons, summary") {
  const auto cmp = mixed_comparison();
  const std::string t = gate::render_terminal(cmp);
  for (const char* col : {"shape", "kernel", "base p50 us", "cand p50 us", "change", "CI of ratio", "p",
                          "spread b/c", "verdict"})
    CHECK(t.find(col) != std::string::npos);
  CHECK(t.find("geomean") != std::string::npos);
  CHECK(t.find("slower FAIL") != std::string::npos);
  CHECK(t.find("missing") != std::string::npos);
  CHECK(t.find("new") != std::string::npos);
  CHECK(t.find(cmp.summary) != std::string::npos);
  // Every table line has the same column start for the verdict: the table is aligned.
  const auto header_end = t.find('\n', t.find("shape"));
  const std::string header = t.substr(t.rfind('\n', t.find("shape")) + 1, header_end - t.rfind('\n', t.find("shape")) - 1);
  const auto verdict_col = header.find("verdict");
  const auto slower_line_start = t.rfind('\n', t.find("slower FAIL")) + 1;
  CHECK(t.find("slower FAIL") - slower_line_start == verdict_col);
}

TEST_CASE("Markdown: failures first, pipes escaped, unchanged folded") {
  const auto cmp = mixed_comparison("fu|sed");
  const std::string md = gate::render_markdown(cmp);
  CHECK(md.starts_with("### :x: attnprof compare: FAIL"));
  CHECK(md.find("| shape | kernel |") != std::string::npos);
  CHECK(md.find("<details>") != std::string::npos);
  CHECK(md.find("| fu\\|sed |") != std::string::npos);  // a '|' in a cell does not split it
  CHECK(md.find("| slower FAIL |") < md.find("| noisy |"));
  CHECK(md.find("geometric mean") != std::string::npos);
}

TEST_CASE("JSON verdicts round-trip through nlohmann and carry the numbers") {
  const auto cmp = mixed_comparison();
  const auto j = nlohmann::json::parse(gate::render_json(cmp));
  CHECK(j.at("exit_code") == 1);
  REQUIRE(j.at("points").size() == 7);
  CHECK(j["points"][0]["verdict"] == "slower");
  CHECK(j["points"][0]["latency"]["ratio"].get<double>() == Approx(1.2).margin(0.02));
  CHECK(j["points"][6]["verdict"] == "new");
  CHECK(j["counts"]["slower"] == 1);
  CHECK(j["options"]["alpha"] == 0.01);
}

TEST_CASE("device mismatch allowed is printed in every output") {
  std::mt19937_64 rng(22);
  const auto b = make_results({make_record("fused", latency_samples(rng, 30, 100.0, 0.01))});
  auto c = make_results({make_record("fused", latency_samples(rng, 30, 100.0, 0.01))});
  c.context.device.driver_version = "575.51.03";
  gate::Options o;
  o.allow_device_mismatch = true;
  const auto cmp = gate::compare(b, c, o);
  CHECK(gate::render_terminal(cmp).find("DEVICE MISMATCH ALLOWED") != std::string::npos);
  CHECK(gate::render_markdown(cmp).find("DEVICE MISMATCH ALLOWED") != std::string::npos);
  CHECK(gate::render_junit(cmp).find("device_mismatch") != std::string::npos);
  CHECK(gate::render_json(cmp).find("575.51.03") != std::string::npos);
}

TEST_CASE("Markdown and terminal: markup and escapes from the results are inert") {
  const auto cmp = mixed_comparison("<script>alert(1)</script>\x1b[2J");
  const std::string md = gate::render_markdown(cmp);
  CHECK(md.find("<script") == std::string::npos);
  CHECK(md.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(md.find('\x1b') == std::string::npos);
  const std::string t = gate::render_terminal(cmp);
  CHECK(t.find('\x1b') == std::string::npos);
  CHECK(t.find("\\x1b[2J") != std::string::npos);
}

TEST_CASE("points unsupported in both runs: one line in the PR outputs, every one in JSON and JUnit") {
  std::mt19937_64 rng(23);
  constexpr int kUnsupported = 24;
  std::vector<core::Record> base, cand;
  base.push_back(make_record("fused", latency_samples(rng, 30, 100.0, 0.01)));
  cand.push_back(make_record("fused", latency_samples(rng, 30, 100.0, 0.01)));
  for (int i = 0; i < kUnsupported; ++i) {
    auto r = make_record("fused-sm90", {}, 64 * (i + 1));
    r.status = core::Status::unsupported;
    r.reason = "no sm90 path for this shape";
    base.push_back(r);
    cand.push_back(r);
  }
  const auto cmp = gate::compare(make_results(base), make_results(cand), {});
  CHECK(cmp.exit_code == kExitOk);
  CHECK(cmp.counts.at(Verdict::unsupported) == kUnsupported);

  const std::string md = gate::render_markdown(cmp);
  INFO(md);
  CHECK(md.find("fused-sm90") == std::string::npos);  // no row, no reason line
  CHECK(md.find("24 points unsupported by their kernel in both runs, not compared") != std::string::npos);
  CHECK(md.find("No point changed.") != std::string::npos);
  const std::string t = gate::render_terminal(cmp);
  CHECK(t.find("fused-sm90") == std::string::npos);
  CHECK(t.find("24 points unsupported by their kernel in both runs") != std::string::npos);

  const auto j = nlohmann::json::parse(gate::render_json(cmp));
  REQUIRE(j.at("points").size() == kUnsupported + 1);
  CHECK(j["points"][1]["verdict"] == "unsupported");
  CHECK(j["points"][1]["fails"] == false);
  CHECK(j["counts"]["unsupported"] == kUnsupported);
  const std::string xml = gate::render_junit(cmp);
  const auto check = test::check_xml(xml);
  REQUIRE(check.ok);
  CHECK(check.elements.at("testcase") == kUnsupported + 1);
  CHECK(check.elements.at("skipped") == kUnsupported);
  CHECK(check.elements.count("failure") == 0);
}

// Golden outputs (report/golden.hpp) of `attnprof compare` and `attnprof history` for the committed runs
// tests/gate/fixtures/run_{1,2,3}.json: run 2 against run 1 has a point of each verdict (slower, same,
// faster, noisy, an incorrect point with markup in its reason, missing, new, unsupported in both).
namespace {

const std::filesystem::path kGateDir = std::filesystem::path(ATTNPROF_SOURCE_DIR) / "tests/gate";

core::Results run_fixture(int n) {
  return core::read_results((kGateDir / fmt::format("fixtures/run_{}.json", n)).string());
}

}  // namespace

TEST_CASE("golden: compare's terminal table, PR comment, JUnit and JSON", "[golden]") {
  const gate::Comparison cmp = gate::compare(run_fixture(1), run_fixture(2), {}, "run_1.json", "run_2.json");
  golden::check(kGateDir / "golden/compare.terminal", gate::render_terminal(cmp));
  golden::check(kGateDir / "golden/compare.markdown", gate::render_markdown(cmp));
  golden::check(kGateDir / "golden/compare.junit.xml", gate::render_junit(cmp));
  golden::check(kGateDir / "golden/compare.json", gate::render_json(cmp));
}

TEST_CASE("golden: history's terminal summary, Markdown and HTML", "[golden]") {
  const gate::History h = gate::build_history({run_fixture(1), run_fixture(2), run_fixture(3)},
                                              {"run_1.json", "run_2.json", "run_3.json"}, {});
  golden::check(kGateDir / "golden/history.terminal", gate::render_history_terminal(h));
  golden::check(kGateDir / "golden/history.markdown", gate::render_history_markdown(h));
  golden::check(kGateDir / "golden/history.html", gate::render_history_html(h));
}
