// The counter phase of a sweep (--counter-batch N > 1): points are timed first, their records
// journaled with counters "pending"; then the workers collect the counters of up to N points per
// CUPTI session (measure::Backend::collect_counters) and each record is journaled again, complete.
// docs/measurement.md ("Counters") has why; this file decides which points go together.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "run/plan.hpp"
#include "run/worker_pool.hpp"

namespace attnprof::run {

// Every point of `points` whose record in `done` has counters "pending", in sweep order, grouped:
// an incorrect point alone (its kernel may write out of bounds, which would corrupt the other points
// of a shared session), the others in consecutive groups of at most `counter_batch` points, cut into
// at least `device_count` groups when there are enough points so that every device's worker takes a
// share. The worker may cut a group further to fit device memory.
std::vector<CounterGroup> plan_counter_groups(const std::vector<Point>& points,
                                              const std::map<std::string, core::Record>& done,
                                              int counter_batch, size_t device_count);

// How many records have counters "pending".
size_t count_pending_counters(const std::vector<core::Record>&);

}  // namespace attnprof::run
