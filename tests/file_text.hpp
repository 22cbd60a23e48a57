// A file's whole text, for the tests of every area. Throws when the file cannot be read, so a test that
// reads a missing file fails instead of searching an empty string.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace attnprof::test_support {

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace attnprof::test_support
