// A small XML 1.0 well-formedness checker for the JUnit output: balanced, properly nested elements,
// quoted attributes without raw '<' or '&', only the five predefined entities and numeric character
// references, no control characters XML cannot carry. Counts elements by name.
#pragma once
#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace attnprof::test {

struct XmlCheck {
  bool ok = true;
  std::string error;
  std::map<std::string, int> elements;  // name -> count
};

inline XmlCheck check_xml(const std::string& s) {
  XmlCheck r;
  auto fail = [&](const std::string& why, size_t at) {
    if (r.ok) r.error = why + " at offset " + std::to_string(at);
    r.ok = false;
  };
  auto check_text = [&](size_t from, size_t to) {  // character data or attribute value
    for (size_t i = from; i < to && r.ok; ++i) {
      const auto u = static_cast<unsigned char>(s[i]);
      if (u < 0x20 && u != '\t' && u != '\n' && u != '\r') fail("control character", i);
      if (s[i] == '<') fail("raw '<'", i);
      if (s[i] == '&') {
        const size_t semi = s.find(';', i);
        if (semi == std::string::npos || semi > to) return fail("unterminated entity", i);
        const std::string ent = s.substr(i + 1, semi - i - 1);
        const bool named = ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos";
        const bool numeric = ent.size() > 1 && ent[0] == '#';
        if (!named && !numeric) fail("unknown entity &" + ent + ";", i);
      }
    }
  };
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
  };
  std::vector<std::string> stack;
  size_t i = 0;
  if (s.rfind("<?xml", 0) == 0) {
    i = s.find("?>");
    if (i == std::string::npos) fail("unterminated declaration", 0);
    else i += 2;
  }
  bool seen_root = false;
  while (r.ok && i < s.size()) {
    const size_t lt = s.find('<', i);
    const size_t text_end = lt == std::string::npos ? s.size() : lt;
    if (stack.empty()) {
      for (size_t k = i; k < text_end; ++k)
        if (!std::isspace(static_cast<unsigned char>(s[k]))) fail("text outside the root element", k);
    } else {
      check_text(i, text_end);
    }
    if (lt == std::string::npos || !r.ok) break;
    i = lt + 1;
    const bool closing = i < s.size() && s[i] == '/';
    if (closing) ++i;
    const size_t name_start = i;
    while (i < s.size() && is_name_char(s[i])) ++i;
    const std::string name = s.substr(name_start, i - name_start);
    if (name.empty()) {
      fail("empty element name", i);
      break;
    }
    if (closing) {
      if (stack.empty() || stack.back() != name) fail("mismatched </" + name + ">", i);
      else stack.pop_back();
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size() || s[i] != '>') fail("bad closing tag", i);
      ++i;
      continue;
    }
    if (stack.empty() && seen_root) fail("second root element", i);
    seen_root = true;
    ++r.elements[name];
    // Attributes.
    while (r.ok) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) {
        fail("unterminated tag", i);
        break;
      }
      if (s[i] == '>') {
        stack.push_back(name);
        ++i;
        break;
      }
      if (s.compare(i, 2, "/>") == 0) {
        i += 2;
        break;
      }
      const size_t attr_start = i;
      while (i < s.size() && is_name_char(s[i])) ++i;
      if (i == attr_start || i >= s.size() || s[i] != '=') {
        fail("bad attribute", i);
        break;
      }
      ++i;
      if (i >= s.size() || s[i] != '"') {
        fail("unquoted attribute", i);
        break;
      }
      const size_t close = s.find('"', i + 1);
      if (close == std::string::npos) {
        fail("unterminated attribute", i);
        break;
      }
      check_text(i + 1, close);
      i = close + 1;
    }
  }
  if (r.ok && !stack.empty()) fail("unclosed <" + stack.back() + ">", s.size());
  if (r.ok && !seen_root) fail("no root element", 0);
  return r;
}

}  // namespace attnprof::test
