#include "run/counter_phase.hpp"

#include <algorithm>

namespace attnprof::run {

std::vector<CounterGroup> plan_counter_groups(const std::vector<Point>& points,
                                              const std::map<std::string, core::Record>& done,
                                              int counter_batch, size_t device_count) {
  std::vector<CounterGroup> groups;
  CounterGroup shared;
  for (const auto& p : points) {
    const auto it = done.find(p.key);
    if (it == done.end() || it->second.counters.status != core::CounterStatus::pending) continue;
    if (it->second.status == core::Status::incorrect) {
      groups.push_back({{p}, {it->second}});
    } else {
      shared.points.push_back(p);
      shared.records.push_back(it->second);
    }
  }
  const size_t n = shared.points.size();
  if (n == 0) return groups;
  const size_t batch = static_cast<size_t>(std::max(counter_batch, 1));
  const size_t count = std::max((n + batch - 1) / batch, std::min(std::max<size_t>(device_count, 1), n));
  const size_t size = (n + count - 1) / count;
  for (size_t start = 0; start < n; start += size) {
    const size_t end = std::min(start + size, n);
    CounterGroup group;
    group.points.assign(shared.points.begin() + static_cast<std::ptrdiff_t>(start),
                        shared.points.begin() + static_cast<std::ptrdiff_t>(end));
    group.records.assign(shared.records.begin() + static_cast<std::ptrdiff_t>(start),
                         shared.records.begin() + static_cast<std::ptrdiff_t>(end));
    groups.push_back(std::move(group));
  }
  return groups;
}

size_t count_pending_counters(const std::vector<core::Record>& records) {
  return static_cast<size_t>(std::count_if(records.begin(), records.end(), [](const core::Record& r) {
    return r.counters.status == core::CounterStatus::pending;
  }));
}

}  // namespace attnprof::run
