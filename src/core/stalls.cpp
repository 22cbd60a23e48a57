#include "core/stalls.hpp"

#include <algorithm>

#include "core/metric_names.hpp"

namespace attnprof::core {

namespace {

constexpr std::string_view kCuptiPrefix = kPcSamplingStallPrefix;
constexpr std::string_view kNotIssuedSuffix = "_not_issued";

void add_reasons(std::map<std::string, int64_t>& into, const std::map<std::string, int64_t>& from) {
  for (const auto& [reason, n] : from) into[reason] += n;
}

int64_t total(const std::map<std::string, int64_t>& reasons) {
  int64_t n = 0;
  for (const auto& [reason, count] : reasons) n += count;
  return n;
}

// Most samples first; ties in a fixed order (the key) so that output does not depend on input order.
template <class Key>
std::vector<HotSpot> top(std::map<Key, HotSpot>& spots, size_t n) {
  std::vector<HotSpot> out;
  out.reserve(spots.size());
  for (auto& [key, spot] : spots) out.push_back(std::move(spot));
  std::stable_sort(out.begin(), out.end(), [](const HotSpot& a, const HotSpot& b) { return a.samples > b.samples; });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace

std::optional<std::string> stall_reason_name(std::string_view cupti_name) {
  if (!cupti_name.starts_with(kCuptiPrefix) || cupti_name.ends_with(kNotIssuedSuffix)) return std::nullopt;
  cupti_name.remove_prefix(kCuptiPrefix.size());
  return std::string(cupti_name);
}

std::vector<KernelStalls> aggregate_stalls(const std::vector<PcSample>& samples, size_t top_instructions,
                                           size_t top_lines) {
  struct Acc {
    KernelStalls kernel;
    std::map<uint64_t, HotSpot> instructions;
    std::map<std::pair<std::string, int64_t>, HotSpot> lines;
  };
  std::map<std::string, Acc> by_function;
  for (const PcSample& s : samples) {
    const int64_t n = total(s.reasons);
    if (n == 0) continue;
    Acc& acc = by_function[s.function];
    acc.kernel.kernel = s.function;
    acc.kernel.samples += n;
    add_reasons(acc.kernel.reasons, s.reasons);
    HotSpot& ins = acc.instructions[s.pc_offset];
    ins.pc_offset = s.pc_offset;
    ins.file = s.file;
    ins.line = s.line;
    ins.samples += n;
    add_reasons(ins.reasons, s.reasons);
    if (s.line > 0) {
      HotSpot& line = acc.lines[{s.file, s.line}];
      line.file = s.file;
      line.line = s.line;
      line.samples += n;
      add_reasons(line.reasons, s.reasons);
    }
  }
  std::vector<KernelStalls> out;
  for (auto& [name, acc] : by_function) {
    acc.kernel.instructions = top(acc.instructions, top_instructions);
    acc.kernel.lines = top(acc.lines, top_lines);
    out.push_back(std::move(acc.kernel));
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelStalls& a, const KernelStalls& b) { return a.samples > b.samples; });
  return out;
}

double stall_share(const std::map<std::string, int64_t>& reasons, int64_t samples, std::string_view reason) {
  if (samples <= 0) return 0;
  const auto it = reasons.find(std::string(reason));
  return it == reasons.end() ? 0 : static_cast<double>(it->second) / static_cast<double>(samples);
}

std::string dominant_stall(const std::map<std::string, int64_t>& reasons) {
  std::string best;
  int64_t most = 0;
  for (const auto& [reason, n] : reasons) {
    if (reason == kIssuedReason) continue;
    if (n > most) {
      most = n;
      best = reason;
    }
  }
  return best;
}

std::string short_kernel_name(std::string_view name) {
  // Drop a trailing bracketed list (the parameters, then the template arguments), matched from its end.
  const auto drop_trailing = [&](char open, char close) {
    if (!name.ends_with(close)) return;
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      depth += name[i] == close ? 1 : name[i] == open ? -1 : 0;
      if (depth == 0) {
        name = name.substr(0, i);
        return;
      }
    }
  };
  drop_trailing('(', ')');
  drop_trailing('<', '>');
  const size_t scope = name.rfind("::");
  if (scope != std::string_view::npos) name.remove_prefix(scope + 2);
  const size_t space = name.rfind(' ');
  if (space != std::string_view::npos) name.remove_prefix(space + 1);
  return std::string(name);
}

double cycles_per_issue(const KernelStalls& k) {
  const auto it = k.reasons.find(std::string(kIssuedReason));
  if (it == k.reasons.end() || it->second <= 0) return 0;
  return static_cast<double>(k.samples) / static_cast<double>(it->second);
}

}  // namespace attnprof::core
