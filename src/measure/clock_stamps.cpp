#include "measure/clock_stamps.hpp"

#include <algorithm>
#include <map>

#include "core/stats.hpp"

namespace attnprof::measure {

double clock_mhz_between(const std::vector<ClockStamp>& before, const std::vector<ClockStamp>& after) {
  // One block per SM is the usual placement, not a guarantee: an SM may hold two blocks or none.
  // Each SM's earliest stamp before and latest after bound the widest interval it saw.
  std::map<int32_t, ClockStamp> first, last;
  for (const ClockStamp& s : before) {
    if (s.sm < 0) continue;
    auto [it, added] = first.emplace(s.sm, s);
    if (!added && s.ns < it->second.ns) it->second = s;
  }
  for (const ClockStamp& s : after) {
    if (s.sm < 0) continue;
    auto [it, added] = last.emplace(s.sm, s);
    if (!added && s.ns > it->second.ns) it->second = s;
  }
  std::vector<double> mhz;
  for (const auto& [sm, a] : first) {
    const auto b = last.find(sm);
    if (b == last.end() || b->second.ns < a.ns + kMinClockIntervalNs || b->second.cycles <= a.cycles) continue;
    mhz.push_back(static_cast<double>(b->second.cycles - a.cycles) / static_cast<double>(b->second.ns - a.ns) * 1e3);
  }
  return mhz.empty() ? 0.0 : core::median(mhz);
}

}  // namespace attnprof::measure
