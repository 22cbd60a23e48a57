// Golden outputs, google-benchmark style: a renderer's output for a committed fixture is compared byte
// for byte with a committed file, line by line first so that a failure names the first line that
// differs. After an intended change of an output, rewrite the files and review the diff:
//   ATTNPROF_UPDATE_GOLDEN=1 ctest --test-dir build -R 'test_report|test_gate'
// Used by tests/report (results, explain, calibrate, devices) and tests/gate (compare, history).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace attnprof::golden {

inline bool updating() { return std::getenv("ATTNPROF_UPDATE_GOLDEN") != nullptr; }

inline std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines of `text`, each without its '\n' (a CSV's '\r' stays).
inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Checks `actual` against the file at `path`, or rewrites the file under ATTNPROF_UPDATE_GOLDEN.
inline void check(const std::filesystem::path& path, const std::string& actual) {
  INFO("golden file " << path.string() << " (ATTNPROF_UPDATE_GOLDEN=1 rewrites it)");
  if (updating()) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    WARN("rewrote " << path.string());
    return;
  }
  REQUIRE(std::filesystem::exists(path));
  const std::string expected = read(path);
  const auto want = lines(expected), got = lines(actual);
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    INFO("line " << i + 1);
    REQUIRE(got[i] == want[i]);
  }
  CHECK(got.size() == want.size());
  CHECK(actual == expected);  // the same bytes, the last line end included
}

}  // namespace attnprof::golden
