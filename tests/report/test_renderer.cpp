// The renderer list (src/report/renderer.cpp), the one path from results to every output (analyse,
// then render_all) and golden outputs (report/golden.hpp): every renderer of report::renderers()
// writes, for the fixed fixture tests/report/fixtures/synthetic_results.json (analysed as `attnprof
// report` and `attnprof sweep` analyse it), exactly the file committed as
// tests/report/golden/synthetic_results.<format>; the results file a sweep writes (the analysed
// results as JSON) is golden too. The outputs are deterministic: every date, host and revision in
// them comes from the fixture. The HTML's inline style sheet and script (html_assets.cpp, tested in
// a browser by browser_test.py) are replaced by a marker in the golden file, which keeps it small.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>

#include <unistd.h>

#include <fmt/format.h>

#include "core/files.hpp"
#include "core/results.hpp"
#include "render_helpers.hpp"
#include "report/golden.hpp"
#include "report/html_assets.hpp"
#include "report/report.hpp"

using namespace attnprof;
namespace fs = std::filesystem;

namespace {

const fs::path kGoldenDir = fs::path(ATTNPROF_SOURCE_DIR) / "tests/report/golden";

core::Results fixture() {
  core::Results results = core::read_results(report_test::kFixture);
  report::analyse(results);
  return results;
}

// The text with the first occurrence of `part` replaced by `marker`.
std::string replace_once(std::string text, std::string_view part, std::string_view marker) {
  if (const size_t at = text.find(part); !part.empty() && at != std::string::npos)
    text.replace(at, part.size(), marker);
  return text;
}

// What is compared with the golden file: the output, the HTML's inline assets replaced by markers.
std::string comparable(std::string_view format, std::string text) {
  if (format != "html") return text;
  text = replace_once(std::move(text), report::detail::report_css(), "/* report_css() */");
  return replace_once(std::move(text), report::detail::report_js(), "/* report_js() */");
}

}  // namespace

TEST_CASE("golden: every renderer's output for the fixture is the committed file", "[golden]") {
  const core::Results results = fixture();
  REQUIRE(report::renderers().size() == 5);
  for (const report::Renderer* renderer : report::renderers()) {
    const std::string format(renderer->format());
    golden::check(kGoldenDir / ("synthetic_results." + format),
                  comparable(format, report::render(*renderer, results)));
  }
}

TEST_CASE("golden: a CPU sweep's terminal table and Markdown speak of the CPU", "[golden]") {
  core::Results results = core::read_results(ATTNPROF_SOURCE_DIR "/tests/report/fixtures/cpu_results.json");
  report::analyse(results);
  for (const char* format : {"terminal", "markdown"}) {
    INFO(format);
    const std::string text = report::render(report::renderer(format), results);
    golden::check(kGoldenDir / (std::string("cpu_results.") + format), text);
    // A CPU's words and units: DRAM, cores, GFLOP/s and GB/s; none of a GPU's.
    for (const char* gpu_word : {"HBM", "TFLOP/s", "TB/s", "SMs", "counters-unavailable"}) {
      INFO(gpu_word);
      CHECK(text.find(gpu_word) == std::string::npos);
    }
    CHECK_THAT(text, Catch::Contains("DRAM 28 GB/s") && Catch::Contains("GFLOP/s") && Catch::Contains("% DRAM"));
  }
}

TEST_CASE("golden: the results file of a sweep (the analysed results as JSON)", "[golden]") {
  golden::check(kGoldenDir / "synthetic_results.json", core::dump_json(nlohmann::json(fixture()), 1) + "\n");
}

TEST_CASE("golden: rendering is deterministic and a changed point changes the output", "[golden]") {
  core::Results results = fixture();
  const std::string once = report::render(report::renderer("markdown"), results);
  CHECK(report::render(report::renderer("markdown"), fixture()) == once);
  results.records.front().latency.p50_us *= 2;
  CHECK(report::render(report::renderer("markdown"), results) != once);
}

TEST_CASE("render_all writes every file, then the table; the same bytes as each renderer alone") {
  const core::Results results = fixture();
  const fs::path dir = fs::temp_directory_path() / fmt::format("attnprof-render-all-{}", ::getpid());
  fs::remove_all(dir);
  std::ostringstream table;
  report::render_all(results, {.files = {{"markdown", "--md", (dir / "s.md").string()},
                                         {"csv", "--csv", (dir / "p.csv").string()}},
                               .missing_folder = report::MissingFolder::create,
                               .terminal = &table});
  CHECK(table.str() == report::render(report::renderer("terminal"), results));
  CHECK(golden::read(dir / "s.md") == report::render(report::renderer("markdown"), results));
  CHECK(golden::read(dir / "p.csv") == report::render(report::renderer("csv"), results));
  std::ostringstream quiet;
  report::render_all(results, {.files = {}, .missing_folder = report::MissingFolder::fail, .terminal = nullptr});
  CHECK(quiet.str().empty());
  fs::remove_all(dir);
}

TEST_CASE("analyse diagnoses every measured point once; renderers show what it stored") {
  core::Results results = core::read_results(report_test::kFixture);
  for (auto& r : results.records) r.diagnosis.reset();
  // Not analysed: timings, and "-" where the diagnosis would be.
  const std::string raw = report::render(report::renderer("terminal"), results);
  CHECK(raw.find("compute-bound") == std::string::npos);
  report::analyse(results);
  for (const auto& r : results.records)
    CHECK(r.diagnosis.has_value() == (r.status == core::Status::ok || r.status == core::Status::incorrect));
  CHECK(report::render(report::renderer("terminal"), results).find("compute-bound") != std::string::npos);
}

TEST_CASE("renderers: one per format, found by name") {
  std::vector<std::string> formats;
  for (const report::Renderer* r : report::renderers()) formats.emplace_back(r->format());
  CHECK(formats == std::vector<std::string>{"terminal", "markdown", "csv", "html", "openmetrics"});
  CHECK(report::renderer("csv").format() == "csv");
  CHECK_THROWS_AS(report::renderer("pdf"), std::out_of_range);
}
