// Renderers of a gate::Comparison: each reads only the Comparison and returns text.
#pragma once
#include <string>
#include <string_view>

#include "gate/compare.hpp"

namespace attnprof::gate {

// Fixed-width table: point, baseline and candidate median, change, CI of the ratio, p, spread,
// verdict; a geometric-mean row; the device line; the one-line summary.
std::string render_terminal(const Comparison&);
// GitHub/GitLab flavoured Markdown for a PR comment or job summary: failures and other changes
// first, unchanged points folded away.
std::string render_markdown(const Comparison&);
// JUnit XML: one testcase per point; <failure> for every point that fails the gate, <skipped> for
// inconclusive, missing and new points.
std::string render_junit(const Comparison&);
// The Comparison as JSON (gate::to_json), indented.
std::string render_json(const Comparison&);

}  // namespace attnprof::gate
