// Trimming and splitting for the text grammars read (sweep specs, length distributions, /proc
// files). Both return views into the caller's text: nothing is copied.
#pragma once
#include <string_view>
#include <vector>

namespace attnprof::core {

// `s` without its leading and trailing spaces, tabs, carriage returns and newlines.
constexpr std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

// The pieces of `s` between the separators, untrimmed: "a,,b" -> {"a", "", "b"}, "" -> {""}.
inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t pos = s.find(sep); pos != std::string_view::npos; pos = s.find(sep, start)) {
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
  parts.push_back(s.substr(start));
  return parts;
}

}  // namespace attnprof::core
