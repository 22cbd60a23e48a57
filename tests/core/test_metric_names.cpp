// core/metric_names.hpp: the one catalogue of CUPTI names. Every name the diagnosis reads is one the
// profiler requests (or one it documents as not requested), and no source file outside the catalogue
// spells a metric name of its own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "core/metric_names.hpp"
#include "file_text.hpp"

using namespace attnprof::core;
namespace fs = std::filesystem;

namespace {

template <class Names>
std::set<std::string> set_of(const Names& names) {
  return {names.begin(), names.end()};
}

using attnprof::test_support::slurp;

// The text of `header`'s initializer of `array_name` (between its `= {` and the closing `};`).
std::string initializer_of(const std::string& header, const std::string& array_name) {
  const auto start = header.find("std::array " + array_name + " = {");
  REQUIRE(start != std::string::npos);
  const auto end = header.find("};", start);
  REQUIRE(end != std::string::npos);
  return header.substr(start, end - start);
}

}  // namespace

TEST_CASE("every metric the diagnosis reads is one the profiler requests, or one named as not requested") {
  const auto requested = set_of(kProfilerMetrics);
  const auto not_requested = set_of(kDiagnosisMetricsNotRequested);
  for (const std::string name : kDiagnosisMetrics) {
    INFO(name);
    CHECK((requested.count(name) + not_requested.count(name)) == 1);
  }
  const auto read = set_of(kDiagnosisMetrics);
  for (const std::string name : kDiagnosisMetricsNotRequested) {
    INFO(name);
    CHECK(read.count(name) == 1);       // the exception list holds only names the diagnosis reads
    CHECK(requested.count(name) == 0);  // and none the profiler asks for after all
  }
}

TEST_CASE("the profiler's metric set has no duplicate and one SASS-op metric") {
  CHECK(set_of(kProfilerMetrics).size() == kProfilerMetrics.size());
  CHECK(set_of(kDiagnosisMetrics).size() == kDiagnosisMetrics.size());
  const auto sass_ops = std::count_if(kProfilerMetrics.begin(), kProfilerMetrics.end(), [](std::string name) {
    return name.starts_with(kSassOpMetricPrefix);
  });
  CHECK(sass_ops == 1);
  // The batched session adds the marker metric itself and removes it from what it reports.
  CHECK(set_of(kProfilerMetrics).count(kMetricWarpsLaunched) == 0);
}

TEST_CASE("the instruction mix: warp-instruction counters, none requested twice, none instrumented") {
  const auto mix = set_of(kInstructionMixMetrics);
  CHECK(mix.size() == kInstructionMixMetrics.size());
  CHECK(mix.count(kMetricInstExecuted) == 1);
  for (const std::string name : kInstructionMixMetrics) {
    INFO(name);
    CHECK(set_of(kProfilerMetrics).count(name) == 0);  // added to the defaults with --stalls, not in them
    // Hardware counters of warp instructions: no SASS-op (instrumented) counter, which could read the
    // profiler's one SASS-op count (ffma) or make it read its own.
    CHECK(name.starts_with("smsp__inst_executed"));
    CHECK(name.find("sass") == std::string::npos);
    CHECK(name.ends_with(".sum"));
  }
}

TEST_CASE("each metric constant the diagnosis uses is listed in kDiagnosisMetrics") {
  const std::string header = slurp(fs::path(ATTNPROF_SOURCE_DIR) / "src/core/metric_names.hpp");
  const std::string listed = initializer_of(header, "kDiagnosisMetrics");
  const std::regex constant(R"(\bkMetric[A-Za-z0-9]+\b)");
  int used = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(ATTNPROF_SOURCE_DIR) / "src/core")) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with("diagnosis") || entry.path().extension() != ".cpp") continue;
    const std::string text = slurp(entry.path());
    for (std::sregex_iterator it(text.begin(), text.end(), constant), end; it != end; ++it) {
      INFO(file << " uses " << it->str());
      CHECK(std::regex_search(listed, std::regex("\\b" + it->str() + "\\b")));
      ++used;
    }
  }
  CHECK(used > 20);  // the scan found the diagnosis' reads
}

TEST_CASE("no source file outside the catalogue spells a CUPTI metric name") {
  // A quoted "unit__counter.rollup" string: the shape of every CUPTI metric name.
  const std::regex metric_literal(R"re("[a-z0-9]+__[a-z0-9_]+(\.[a-z0-9_]+)*")re");
  std::vector<std::string> offenders;
  for (const char* root : {"src", "kernels"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(ATTNPROF_SOURCE_DIR) / root)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
      if (entry.path().filename() == "metric_names.hpp") continue;
      const std::string text = slurp(entry.path());
      std::smatch m;
      if (std::regex_search(text, m, metric_literal))
        offenders.push_back(entry.path().lexically_relative(ATTNPROF_SOURCE_DIR).string() + ": " + m.str());
    }
  }
  INFO(::Catch::Detail::stringify(offenders));
  CHECK(offenders.empty());
}
