// `attnprof why`'s outputs (core/why.hpp computes the report): a terminal text, one block per shape, and
// its JSON. Pure: report in, text out; cli/why.cpp prints it.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "core/why.hpp"

namespace attnprof::report {

// The terminal text: per shape the gap, the `top` largest stall terms (the rest summed in one line, so
// that the lines shown still add up to the gap) with where each side holds them, the `top` evidence
// lines that differ most (those equal on both sides in one line), what is missing, then the shapes not
// compared.
std::string render_why(const core::WhyReport&, size_t top);
// One term in a line: "wait +559.0 us (+16.1%), in fused-sm90 at device_math.cuh:28", the place of the side
// that spends more time in the state (none when its time there is spread). Terminal-escaped.
std::string why_term_line(const core::StallTerm&, const core::WhyPoint&, std::string_view baseline,
                          std::string_view candidate);
// The JSON (core::to_json of the report, every term and evidence line), indented.
std::string render_why_json(const core::WhyReport&);

}  // namespace attnprof::report
