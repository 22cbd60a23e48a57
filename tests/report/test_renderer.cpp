// The renderer list (src/report/renderer.cpp) and golden outputs, google-benchmark style: every renderer of report::renderers() writes, for the fixed
// fixture tests/report/fixtures/synthetic_results.json (annotated as `attnprof report` does), exactly
// the file committed as tests/report/golden/synthetic_results.<format>, compared line by line. The
// outputs are deterministic: every date, host and revision in them comes from the fixture.
//
// After an intended change of a renderer's output, regenerate the files and review the diff:
//   ATTNPROF_UPDATE_GOLDEN=1 build/tests/report/test_report "[golden]"
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/diagnosis.hpp"
#include "core/results.hpp"
#include "render_helpers.hpp"
#include "report/report.hpp"

using namespace attnprof;
using report_test::lines_of;
namespace fs = std::filesystem;

namespace {

const fs::path kGoldenDir = fs::path(ATTNPROF_SOURCE_DIR) / "tests/report/golden";

core::Results fixture() {
  core::Results results = core::read_results(report_test::kFixture);
  core::annotate(results);
  return results;
}

// Compares `actual` with `expected` line by line (CSV's CRLF stays in the lines); the first line that
// differs is named with both versions.
void check_lines(const std::string& expected, const std::string& actual) {
  const auto want = lines_of(expected), got = lines_of(actual);
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    INFO("line " << i + 1);
    REQUIRE(got[i] == want[i]);
  }
  CHECK(got.size() == want.size());
  CHECK(actual == expected);  // the same bytes, the last line end included
}

}  // namespace

TEST_CASE("golden: every renderer's output for the fixture is the committed file", "[golden]") {
  const core::Results results = fixture();
  const bool update = std::getenv("ATTNPROF_UPDATE_GOLDEN") != nullptr;
  REQUIRE(report::renderers().size() == 5);
  for (const report::Renderer* renderer : report::renderers()) {
    const fs::path golden = kGoldenDir / ("synthetic_results." + std::string(renderer->format()));
    INFO(golden.string());
    const std::string actual = report::render(*renderer, results);
    if (update) {
      std::ofstream(golden, std::ios::binary) << actual;
      WARN("rewrote " << golden.string());
      continue;
    }
    REQUIRE(fs::exists(golden));
    check_lines(report_test::slurp(golden.string()), actual);
  }
}

TEST_CASE("golden: rendering is deterministic and a changed point changes the output", "[golden]") {
  core::Results results = fixture();
  const std::string once = report::render(report::renderer("markdown"), results);
  CHECK(report::render(report::renderer("markdown"), fixture()) == once);
  results.records.front().latency.p50_us *= 2;
  CHECK(report::render(report::renderer("markdown"), results) != once);
}

TEST_CASE("renderers: one per format, found by name") {
  std::vector<std::string> formats;
  for (const report::Renderer* r : report::renderers()) formats.emplace_back(r->format());
  CHECK(formats == std::vector<std::string>{"terminal", "markdown", "csv", "html", "openmetrics"});
  CHECK(report::renderer("csv").format() == "csv");
  CHECK_THROWS_AS(report::renderer("pdf"), std::out_of_range);
}
