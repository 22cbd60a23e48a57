// The rule behind each diagnosis verdict and flag, in one sentence, with the anchor of its section
// in docs/diagnosis.md: what a report links a verdict to, so that a reader sees why it was given.
// Internal to src/report/.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace attnprof::report::detail {

struct Rule {
  std::string name;    // the verdict or flag, as core::diagnose writes it
  std::string anchor;  // "verdict-memory-bound", "flag-noisy": an id in the report and in docs/diagnosis.md
  std::string text;    // when it is given, with the thresholds of src/core/diagnosis.hpp
};

// Every verdict in the order core::diagnose decides them, then every flag in its fixed order.
const std::vector<Rule>& verdict_rules();
const std::vector<Rule>& flag_rules();

// "verdict-<name>" / "flag-<name>", or empty for a name no rule has.
std::string verdict_anchor(std::string_view verdict);
std::string flag_anchor(std::string_view flag);

// What a point label says: "b2 h4/2 s256x256 d64 causal bf16" = batch, query heads / K-V heads,
// queries x keys, head dimension, the causal mask when present, dtype.
std::string_view label_key();

}  // namespace attnprof::report::detail
