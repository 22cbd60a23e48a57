// The HTML report's inlined style sheet and script (src/report/html_assets.cpp): the script builds
// elements with createElementNS/textContent and never parses markup or reaches the network; it reads the
// JSON block the page embeds; neither asset can end its own inline block; every element id the script
// looks up literally is one the rendered page has.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <string>

#include "render_helpers.hpp"
#include "report/html_assets.hpp"

using attnprof::report::detail::report_css;
using attnprof::report::detail::report_js;
using namespace attnprof::report_test;

TEST_CASE("html assets: the script never turns data into markup or code, and loads nothing") {
  const std::string js(report_js());
  REQUIRE(!js.empty());
  for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                           "fetch(", "XMLHttpRequest", "import(", "setTimeout('", "setTimeout(\""}) {
    INFO(sink);
    CHECK(js.find(sink) == std::string::npos);
  }
  CHECK(js.find("createElementNS") != std::string::npos);
  CHECK(js.find("textContent") != std::string::npos);
  CHECK(js.find("JSON.parse(document.getElementById('attnprof-data').textContent)") != std::string::npos);
  // The only URL is the SVG namespace, which is a name, not a request.
  const std::regex url(R"(https?://[^'"]*)");
  for (auto it = std::sregex_iterator(js.begin(), js.end(), url); it != std::sregex_iterator(); ++it)
    CHECK(it->str() == "http://www.w3.org/2000/svg");
}

TEST_CASE("html assets: neither can close its inline element; the style sheet's braces balance") {
  const std::string css(report_css()), js(report_js());
  for (const std::string* asset : {&css, &js}) {
    CHECK(asset->find("</script") == std::string::npos);
    CHECK(asset->find("</style") == std::string::npos);
    CHECK(asset->find("<!--") == std::string::npos);
  }
  int depth = 0, lowest = 0;
  for (char c : css) {
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    lowest = std::min(lowest, depth);
  }
  CHECK(depth == 0);
  CHECK(lowest == 0);
  CHECK(css.find("@import") == std::string::npos);
  CHECK(css.find("url(") == std::string::npos);
}

TEST_CASE("html assets: each id the script looks up by name is in the rendered report, with both assets") {
  const std::string js(report_js());
  const std::string html = render(attnprof::core::read_results(kFixture), "html");
  CHECK(html.find(std::string(report_css())) != std::string::npos);
  CHECK(html.find(js) != std::string::npos);
  const std::regex lookup(R"(getElementById\('([A-Za-z0-9_-]+)'\))");
  std::set<std::string> ids;
  for (auto it = std::sregex_iterator(js.begin(), js.end(), lookup); it != std::sregex_iterator(); ++it)
    ids.insert((*it)[1].str());
  CHECK(ids.count("attnprof-data") == 1);
  for (const std::string& id : ids) {
    INFO(id);
    CHECK(html.find("id=\"" + id + "\"") != std::string::npos);
  }
}
