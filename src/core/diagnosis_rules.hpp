// The diagnosis as a list of rules. Each rule is a small function of the facts (diagnosis_facts.hpp)
// that returns a finding: a verdict or a flag (or neither, for a rule that only states what the numbers
// rest on), its evidence sentences and its next steps. core::diagnose runs them in the order of
// diagnosis_rules(): the first verdict rule that fires gives the verdict and the later ones are
// skipped; every other rule runs. Each rule names the thresholds it judges by (core/thresholds.hpp) and
// its section of docs/diagnosis.md (`<a id="rule-NAME">`); tests/core/test_diagnosis_rules.cpp fails
// when the table and the document disagree.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnosis_facts.hpp"
#include "core/diagnosis_model.hpp"

namespace attnprof::core {

enum class RuleKind {
  observation,  // evidence only: what the numbers rest on
  verdict,      // the first that fires decides the verdict
  flag          // raised independently (some read the verdict decided before them)
};

struct Finding {
  std::optional<Verdict> verdict;
  std::optional<Flag> flag;
  std::vector<std::string> evidence;
  std::vector<std::string> next_steps;
};

// What a rule sees: the facts, and the verdict decided so far (unknown before the verdict rules).
struct RuleInput {
  const DiagnosisFacts& facts;
  Verdict verdict = Verdict::unknown;
};

struct Rule {
  std::string_view name;                     // "memory-bound", "excess-traffic", "memory-level"
  RuleKind kind;
  std::span<const std::string_view> thresholds;  // the constants of core/thresholds.hpp it judges by
  std::optional<Finding> (*apply)(const RuleInput&);  // nullopt: the rule does not fire
  std::string anchor() const { return "rule-" + std::string(name); }
};

// Every rule, in the order core::diagnose evaluates them.
std::span<const Rule> diagnosis_rules();
const Rule* find_rule(std::string_view name);

// The verdict the verdict rules give these facts, and the rule that gave it (nullptr: none fired).
struct Decision {
  Verdict verdict = Verdict::unknown;
  const Rule* rule = nullptr;
  Finding finding;
};
Decision decide_verdict(const DiagnosisFacts&);

}  // namespace attnprof::core
