#include "core/instruction_mix.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attnprof::core {

namespace {

std::optional<double> counted(const std::map<std::string, double>& totals, const char* name) {
  const auto it = totals.find(name);
  if (it == totals.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<InstructionMix> instruction_mix(const std::map<std::string, double>& counter_totals, double flops) {
  const auto total = counted(counter_totals, kMetricInstExecuted);
  if (!total || !(*total > 0)) return std::nullopt;
  const double kflops = flops > 0 && std::isfinite(flops) ? flops / 1e3 : 0;
  InstructionMix mix;
  mix.warp_instructions = *total;
  if (kflops > 0) mix.per_kflop = *total / kflops;
  double classified = 0;
  for (const InstructionClass& c : kInstructionClasses) {
    std::optional<double> sum;
    for (const char* metric : c.metrics)
      if (metric)
        if (const auto n = counted(counter_totals, metric)) sum = sum.value_or(0) + *n;
    if (!sum) continue;
    mix.classes.push_back({.info = &c,
                           .warp_instructions = *sum,
                           .share = *sum / *total,
                           .per_kflop = kflops > 0 ? std::optional(*sum / kflops) : std::nullopt});
    classified += *sum;
  }
  if (mix.classes.empty()) return std::nullopt;
  mix.unclassified = std::max(0.0, *total - classified);
  if (kflops > 0) mix.unclassified_per_kflop = mix.unclassified / kflops;
  mix.warp_cycles_per_issue = counted(counter_totals, kMetricWarpsPerIssue);
  return mix;
}

std::optional<InstructionMix> instruction_mix(const Record& r) {
  if (r.counters.status != CounterStatus::ok) return std::nullopt;
  return instruction_mix(r.counters.total, r.cost.flops);
}

const InstructionClassCount* class_count(const InstructionMix& mix, std::string_view name) {
  for (const InstructionClassCount& c : mix.classes)
    if (c.info->name == name) return &c;
  return nullptr;
}

std::vector<InstructionClassCount> largest_classes(const InstructionMix& mix, size_t count) {
  std::vector<InstructionClassCount> out;
  for (const InstructionClassCount& c : mix.classes)
    if (c.warp_instructions > 0) out.push_back(c);
  std::stable_sort(out.begin(), out.end(),
                   [](const InstructionClassCount& a, const InstructionClassCount& b) { return a.share > b.share; });
  if (out.size() > count) out.resize(count);
  return out;
}

std::string largest_classes_text(const InstructionMix& mix, size_t count) {
  std::vector<std::string> parts;
  for (const InstructionClassCount& c : largest_classes(mix, count))
    parts.push_back(fmt::format("{} {:.0f}%", c.info->name, c.share * 100));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace attnprof::core
