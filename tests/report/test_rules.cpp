// The verdict and flag rules (src/report/rules.cpp) and their anchors in docs/diagnosis.md.
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
#include "report/rules.hpp"
#include "report/view.hpp"

using namespace attnprof;
using namespace attnprof::core;
using nlohmann::json;
using namespace attnprof::report_test;

TEST_CASE("rules: every verdict and flag the diagnosis can give has a rule and an anchor in docs/diagnosis.md") {
  const std::string doc = slurp(ATTNPROF_SOURCE_DIR "/docs/diagnosis.md");
  REQUIRE_FALSE(doc.empty());
  for (std::string_view v : {kVerdictMemory, kVerdictCompute, kVerdictLatency, kVerdictOccupancy, kVerdictLaunch,
                             kVerdictUnknown}) {
    const std::string anchor = report::detail::verdict_anchor(v);
    CHECK(anchor == "verdict-" + std::string(v));
    CHECK(doc.find("<a id=\"" + anchor + "\"></a>") != std::string::npos);
  }
  for (std::string_view f : {kFlagUnderFilled, kFlagTailEffect, kFlagExcessTraffic, kFlagThrottled, kFlagNoisy,
                             kFlagHostBound, kFlagUnverified, kFlagCountersUnavailable, kFlagBorderline}) {
    const std::string anchor = report::detail::flag_anchor(f);
    CHECK(anchor == "flag-" + std::string(f));
    CHECK(doc.find("<a id=\"" + anchor + "\"></a>") != std::string::npos);
  }
  CHECK(report::detail::verdict_anchor("no-such-verdict").empty());
  CHECK(report::detail::verdict_rules().size() == 6);
  CHECK(report::detail::flag_rules().size() == 9);
}
