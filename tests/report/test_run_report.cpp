// `attnprof report` (src/report/run_report.cpp): bad input, the files it writes, --quiet.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "core/errors.hpp"
#include "core/results.hpp"
#include "render_helpers.hpp"
#include "report/report.hpp"

using namespace attnprof;
using namespace attnprof::core;
using nlohmann::json;
using namespace attnprof::report_test;

TEST_CASE("run_report: bad input is an InputError; files are written") {
  report::ReportOptions options;
  options.results_path = "no-such-results.json";
  std::ostringstream out;
  CHECK_THROWS_AS(report::run_report(options, out), InputError);

  const std::string wrong = "report_test_wrong_version.json";
  {
    std::ofstream f(wrong);
    f << R"({"schema_version": "9.0", "context": {}, "records": []})";
  }
  options.results_path = wrong;
  CHECK_THROWS_AS(report::run_report(options, out), InputError);
  std::remove(wrong.c_str());

  options.results_path = kFixture;
  options.outputs = {{"html", "--html", "report_test.html"},
                     {"markdown", "--md", "report_test.md"},
                     {"csv", "--csv", "report_test.csv"}};
  CHECK(report::run_report(options, out) == 0);
  CHECK_THAT(out.str(), Catch::Contains("memory-bound"));
  for (const auto& output : options.outputs) {
    std::ifstream f(output.path);
    CHECK(f.good());
    std::remove(output.path.c_str());
  }
  options.quiet = true;
  options.outputs.clear();
  std::ostringstream quiet;
  report::run_report(options, quiet);
  CHECK(quiet.str().empty());
}
