// `attnprof why`'s outputs (core/why.hpp computes the report): a terminal text, one block per shape, and
// its JSON. Pure: report in, text out; cli/why.cpp prints it.
#pragma once
#include <cstddef>
#include <string>

#include "core/why.hpp"

namespace attnprof::report {

// The terminal text: per shape the gap, the `top` largest stall terms (the rest summed in one line, so
// that the lines shown still add up to the gap) with where each side holds them, the `top` evidence
// lines that differ most (those equal on both sides in one line), what is missing, then the shapes not
// compared.
std::string render_why(const core::WhyReport&, size_t top);
// The JSON (core::to_json of the report, every term and evidence line), indented.
std::string render_why_json(const core::WhyReport&);

}  // namespace attnprof::report
