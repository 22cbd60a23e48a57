#include "core/diagnosis.hpp"

#include <algorithm>
#include <string>

#include "core/diagnosis_facts.hpp"
#include "core/diagnosis_rules.hpp"

namespace attnprof::core {

bool is_materialized(const Record& r) { return r.cost.sp_bytes > 0; }

// The facts once, then every rule of diagnosis_rules() in its order: the first verdict rule that fires
// decides the verdict, every observation and flag rule adds its evidence and next steps where it stands
// in the table (the flag rules after the verdict see it).
Diagnosis diagnose(const Record& r, const Context& ctx) {
  const DiagnosisFacts facts = gather_facts(r, ctx);
  Diagnosis d;
  fill_metrics(facts, d.metrics);
  d.launches = facts.launches;

  std::vector<std::string> next_steps;
  bool decided = false;
  for (const Rule& rule : diagnosis_rules()) {
    if (rule.kind == RuleKind::verdict && decided) continue;
    std::optional<Finding> found = rule.apply(RuleInput{facts, d.verdict});
    if (!found) continue;
    if (rule.kind == RuleKind::verdict) {
      if (!found->verdict) continue;
      d.verdict = *found->verdict;
      d.metrics.verdict_rule = std::string(rule.name);
      decided = true;
    }
    if (found->flag && !d.has(*found->flag)) d.flags.push_back(*found->flag);
    for (auto& line : found->evidence) d.evidence.push_back(std::move(line));
    for (auto& step : found->next_steps) next_steps.push_back(std::move(step));
  }

  // Flags go out in the documented order whatever order they were raised in.
  std::sort(d.flags.begin(), d.flags.end());
  for (const auto& step : next_steps) d.next_step += (d.next_step.empty() ? "" : "; ") + step;
  return d;
}

void annotate(Results& results) {
  for (auto& r : results.records) {
    if (r.status == Status::ok || r.status == Status::incorrect)
      r.diagnosis = diagnose(r, results.context);
    else
      r.diagnosis.reset();
  }
}

}  // namespace attnprof::core
