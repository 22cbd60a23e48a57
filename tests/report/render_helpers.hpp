// Helpers of the renderer tests: a rendered report as a string, its lines, and a strict RFC 4180
// reader of the CSV renderer's output.
#pragma once
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/results.hpp"
#include "report/report.hpp"

namespace attnprof::report_test {

inline std::vector<std::string> lines_of(const std::string& text, const std::string& eol = "\n") {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(eol, start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + eol.size();
  }
  return lines;
}

// A strict RFC 4180 reader: records of fields, CRLF between records.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, in_quotes = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
      quoted = false;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field);
      field.clear();
      quoted = false;
      rows.emplace_back();
      ++i;
    } else {
      if (c == '\n') FAIL("a bare LF outside quotes breaks RFC 4180");
      field += c;
    }
  }
  REQUIRE_FALSE(in_quotes);
  if (rows.back().empty() && field.empty()) rows.pop_back();
  return rows;
}

inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// What the renderer of `format` ("terminal", "csv", ...) writes for `res`.
inline std::string render(const core::Results& res, std::string_view format) {
  return report::render(report::renderer(format), res);
}

}  // namespace attnprof::report_test
