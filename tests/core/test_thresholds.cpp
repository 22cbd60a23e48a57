// core/thresholds.hpp against docs/diagnosis.md: every constant has a row in "Every threshold, and
// why", and the value there is the value in the code.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>

#include "core/thresholds.hpp"
#include "file_text.hpp"

using namespace attnprof::core;
namespace fs = std::filesystem;

namespace {

using attnprof::test_support::slurp;

#define ATTNPROF_THRESHOLD(name) {#name, name}
const std::map<std::string, double>& thresholds() {
  static const std::map<std::string, double> kAll = {
      ATTNPROF_THRESHOLD(kThrottledClockFraction),
      ATTNPROF_THRESHOLD(kClockNoteBelowFraction),
      ATTNPROF_THRESHOLD(kClockDipFraction),
      ATTNPROF_THRESHOLD(kNoisyRelStddev),
      ATTNPROF_THRESHOLD(kGateMaxRelStddev),
      ATTNPROF_THRESHOLD(kNoisyP50CiHalfWidth),
      ATTNPROF_THRESHOLD(kGateThrottledShareMax),
      ATTNPROF_THRESHOLD(kGateClockNoteChange),
      ATTNPROF_THRESHOLD(kGraphTimingBelowUs),
      ATTNPROF_THRESHOLD(kGateAlpha),
      ATTNPROF_THRESHOLD(kGateSlowdownThreshold),
      ATTNPROF_THRESHOLD(kGateConfidence),
      ATTNPROF_THRESHOLD(kGateDramBytesIncrease),
      ATTNPROF_THRESHOLD(kGateTensorOpsIncrease),
      ATTNPROF_THRESHOLD(kGateOccupancyDecrease),
      ATTNPROF_THRESHOLD(kSolLatencyBelowPct),
      ATTNPROF_THRESHOLD(kSolDominanceMarginPct),
      ATTNPROF_THRESHOLD(kSolSaturatedPct),
      ATTNPROF_THRESHOLD(kComputeRoofSharePct),
      ATTNPROF_THRESHOLD(kDramAccountsWithinPct),
      ATTNPROF_THRESHOLD(kL2RereadBytesRatio),
      ATTNPROF_THRESHOLD(kL2RereadHitRatePct),
      ATTNPROF_THRESHOLD(kLaunchBoundLatencyMultiple),
      ATTNPROF_THRESHOLD(kLaunchBoundUsPerLaunch),
      ATTNPROF_THRESHOLD(kHostBoundOverheadFactor),
      ATTNPROF_THRESHOLD(kOccupancyBoundBelowPct),
      ATTNPROF_THRESHOLD(kIssueActiveBusyPct),
      ATTNPROF_THRESHOLD(kLatencyStallShareFrom),
      ATTNPROF_THRESHOLD(kTensorPipeOverlapFromPct),
      ATTNPROF_THRESHOLD(kWgmmaOpsPerInstructionAbove),
      ATTNPROF_THRESHOLD(kTailWasteShare),
      ATTNPROF_THRESHOLD(kTailTileFillBelow),
      ATTNPROF_THRESHOLD(kExcessTrafficRatio),
      ATTNPROF_THRESHOLD(kSpShareExcess),
      ATTNPROF_THRESHOLD(kExcessTrafficMinBytes),
      ATTNPROF_THRESHOLD(kBorderlineSolPoints),
      ATTNPROF_THRESHOLD(kBorderlineShare),
      ATTNPROF_THRESHOLD(kBorderlineLaunchFraction),
      ATTNPROF_THRESHOLD(kDecodeShortCallLaunchLatencies),
      ATTNPROF_THRESHOLD(kDecodeFixedTimeShareFrom),
      ATTNPROF_THRESHOLD(kDecodeAssumedLaunchLatencyUs),
      ATTNPROF_THRESHOLD(kDecodeReadFactorAbove),
      ATTNPROF_THRESHOLD(kDecodePaddedFlopsAbove),
      ATTNPROF_THRESHOLD(kDecodeAtRoofPct),
  };
  return kAll;
}
#undef ATTNPROF_THRESHOLD

// The value a row of the table states, in the constant's own unit: "60%" is 60 for a name ending in
// Pct and 0.6 otherwise; "10 points", "2x", "10 us", "0.5", "8192" and "1/3" read as written; "4 MB" is
// 4e6 bytes.
std::optional<double> documented_value(const std::string& name, const std::string& cell) {
  std::smatch m;
  if (std::regex_search(cell, m, std::regex(R"(^\s*(\d+)/(\d+)\s*$)"))) return std::stod(m[1]) / std::stod(m[2]);
  if (!std::regex_search(cell, m, std::regex(R"(^\s*([0-9]+(\.[0-9]+)?)\s*(%|x|points|us|MB)?\s*$)"))) return std::nullopt;
  double value = std::stod(m[1]);
  if (m[3] == "%" && !name.ends_with("Pct")) value /= 100;
  if (m[3] == "MB") value *= 1e6;
  return value;
}

// Rows "| `kName` | value | reason |" of docs/diagnosis.md's threshold table, by name.
std::map<std::string, std::string> documented_rows() {
  const std::string doc = slurp(fs::path(ATTNPROF_SOURCE_DIR) / "docs/diagnosis.md");
  const auto table = doc.find("## Every threshold, and why");
  REQUIRE(table != std::string::npos);
  const auto end = doc.find("\n## ", table + 1);
  const std::string text = doc.substr(table, end - table);
  std::map<std::string, std::string> rows;
  const std::regex row(R"(\n\| `(k[A-Za-z0-9]+)` \| ([^|]+) \|)");
  for (std::sregex_iterator it(text.begin(), text.end(), row), stop; it != stop; ++it)
    rows[(*it)[1]] = (*it)[2];
  return rows;
}

}  // namespace

TEST_CASE("every constant in core/thresholds.hpp is in this test's list") {
  const std::string header = slurp(fs::path(ATTNPROF_SOURCE_DIR) / "src/core/thresholds.hpp");
  const std::regex definition(R"(constexpr double (k[A-Za-z0-9]+) =)");
  size_t defined = 0;
  for (std::sregex_iterator it(header.begin(), header.end(), definition), end; it != end; ++it) {
    INFO((*it)[1]);
    CHECK(thresholds().count((*it)[1]) == 1);
    ++defined;
  }
  CHECK(defined == thresholds().size());
}

TEST_CASE("docs/diagnosis.md names every threshold with the value the code has") {
  const auto rows = documented_rows();
  for (const auto& [name, value] : thresholds()) {
    INFO(name);
    const auto row = rows.find(name);
    REQUIRE(row != rows.end());
    const auto stated = documented_value(name, row->second);
    INFO("the docs say " << row->second);
    REQUIRE(stated.has_value());
    CHECK(*stated == Approx(value).epsilon(1e-12));
  }
}

TEST_CASE("the table reader: units, percentages and a wrong value") {
  CHECK(documented_value("kSolLatencyBelowPct", "60%") == 60.0);
  CHECK(documented_value("kNoisyRelStddev", "5%") == Approx(0.05));
  CHECK(documented_value("kExcessTrafficRatio", "1.3x") == Approx(1.3));
  CHECK(documented_value("kLaunchBoundUsPerLaunch", "10 us") == 10.0);
  CHECK(documented_value("kSolDominanceMarginPct", "10 points") == 10.0);
  CHECK(documented_value("kDecodeFixedTimeShareFrom", "1/3") == Approx(1.0 / 3));
  CHECK(documented_value("kExcessTrafficMinBytes", "4 MB") == Approx(4e6));
  CHECK_FALSE(documented_value("kX", "about ten").has_value());
  // A row that disagrees with the code is caught: 6% is not kNoisyRelStddev.
  CHECK(*documented_value("kNoisyRelStddev", "6%") != Approx(kNoisyRelStddev));
}

TEST_CASE("the diagnosis' noisy spread and the gate's ceiling are different constants on purpose") {
  // thresholds.hpp says why: the gate judges on the interval above its ceiling, so it keeps it wider.
  CHECK(kGateMaxRelStddev == Approx(2 * kNoisyRelStddev));
  CHECK(kThrottledClockFraction < kClockNoteBelowFraction);  // a throttled sample is far under the note's clock
}
