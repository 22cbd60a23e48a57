// Hardware counters through the CUPTI Range Profiler (CUDA 13: cupti_range_profiler.h +
// cupti_profiler_host.h; not the deprecated session API). One range per kernel launch (auto range);
// the whole attention call is re-run once per replay pass (user replay: the call is a pure function
// of its inputs, so nothing is saved or restored), with L2 flushed before each pass outside the
// profiled region. Kernel replay is the fallback when user replay is refused. Counters are collected
// in their own phase, never while latency is sampled. docs/measurement.md explains the metric set.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/results.hpp"

namespace attnprof::measure {

// The roofline and diagnosis metric set, every name valid on GH100 (see
// shared reference cupti-metrics-GH100.tsv).
const std::vector<std::string>& default_metrics();

// Throws InputError naming the first metric the chip does not know ("GH100" for an H100/H200).
// Works without a GPU: the host half of CUPTI evaluates names for a chip offline.
void validate_metrics(const std::vector<std::string>& names, const std::string& chip_name);

// Replay passes CUPTI needs for `names` on `chip_name` (offline); throws InputError as above.
int64_t passes_needed(const std::vector<std::string>& names, const std::string& chip_name);

// What a CUPTI failure means for the user: reason (with the CUPTI error name) and the fix.
// Counters.status is "unavailable" and the sweep goes on timing-only.
core::Counters unavailable_counters(int cupti_result, const std::string& during);

// Folds per-launch counters into a call total: ".sum" metrics add up; every other metric (ratios,
// percentages, rates, averages) is weighted by the launch's gpu__time_duration.sum.
std::map<std::string, double> total_of(const std::vector<core::KernelCounters>& per_kernel);

// Per-process CUPTI state: initialised once (profiler, chip name, counter availability), config
// images cached per metric set.
class CounterProfiler {
 public:
  // The profiler for the current device (cudaSetDevice must have been called).
  static CounterProfiler& instance();
  ~CounterProfiler();

  // Empty when CUPTI initialised; otherwise the Counters to report for every point.
  const core::Counters* init_failure() const { return init_failure_.get(); }
  const std::string& chip_name() const { return chip_name_; }

  // Runs `before_pass`, then `call` on `stream`, once per replay pass; one range per kernel launch,
  // the call's only. before_launches > 0: before_pass runs inside the profiled region, after CUPTI has
  // set the pass up, and its first before_launches ranges (the L2 flush's) are dropped; that flush
  // also writes back whatever the set-up left dirty in L2 (with the flush before the set-up, the
  // call's DRAM writes read 25 MB high on the H200). before_pass then runs once more after the call:
  // the DRAM writes of those ranges are the call's L2 tail (Counters::dram_write_tail_bytes), and the
  // ranges are dropped too. 0: before_pass runs outside (a warm-up call).
  // Returns status "ok", or "unavailable" with reason and fix. Never throws for a counter failure;
  // CUDA errors of the call itself propagate.
  // kernel_replay: CUPTI replays each launch with device memory saved and restored, for a call that
  // is not pure (its output depends on more than its inputs), where replaying the whole call is not safe.
  core::Counters collect(const std::function<void()>& before_pass, const std::function<void()>& call,
                         cudaStream_t stream, const std::vector<std::string>& extra_metrics,
                         int before_launches = 0, bool kernel_replay = false);

  // One point of a batched session: `before_pass` readies the device for the call (the L2 flush when
  // cold, the call itself when warm), `call` is the point's attention call. before_is_begin_marker:
  // before_pass launches the point's begin marker itself (the flush, counter_batch.hpp).
  struct BatchPoint {
    std::function<void()> before_pass;
    std::function<void()> call;
    bool before_is_begin_marker = false;
  };
  // Counters for several points from ONE session (--counter-batch): each replay pass runs, for every
  // point in order, before_pass, a begin marker kernel (unless before_pass was one), call, and an end
  // marker kernel unless the next point's flush begins it; all profiled. The ranges between a point's
  // markers are its launches, the rest are dropped (counter_batch.hpp). In the cold layout the flush
  // after each point (the last point's: its before_pass once more) gives its L2 tail.
  // Returns one Counters per point, as collect() would have for the point alone, with the session's
  // wall time shared out (share_profiling_ms). When the ranges cannot be attributed or the session
  // fails for another reason than privileges or a busy profiler, each point is collected on its own
  // with collect() and its reason says why. Never throws for a counter failure.
  // max_ranges: CUPTI's range capacity for the session (at most kMaxBatchRanges); ranges past it are
  // dropped, which sends the points to sessions of their own.
  std::vector<core::Counters> collect_batch(const std::vector<BatchPoint>& points, cudaStream_t stream,
                                            const std::vector<std::string>& extra_metrics, size_t max_ranges);

  // The call's DRAM reads and writes counted again by a session of those two counters alone, in one
  // user-replay pass: for counters from kernel replay, whose passes restore device memory and so add
  // DRAM traffic the call never made. `before` and before_launches as for collect() (the L2 flush,
  // also run after the call for the L2 tail, when cold). On success the DRAM metrics of every range
  // and of the total, and the L2 tail, are the single pass's, and dram_source is single_pass; else
  // they stay, dram_source stays replayed and the reason says why the recount failed.
  void recount_dram(core::Counters& counters, const std::function<void()>& before, const std::function<void()>& call,
                    cudaStream_t stream, int before_launches);

  // Passes CUPTI plans for the default set plus `extra_metrics` (config image of this device).
  int64_t planned_passes(const std::vector<std::string>& extra_metrics);
  // Kernel replay instead of user replay from now on.
  void use_kernel_replay(bool on) { kernel_replay_chosen_ = on; }

 private:
  CounterProfiler();
  struct Config;
  const Config& config_for(const std::vector<std::string>& metrics);
  // One session; CUPTI failures become "unavailable" (the CUPTI result in *cupti_error). When user
  // replay is refused and may_switch_replay, the session is run again under kernel replay.
  core::Counters session(const std::vector<std::string>& metrics, const std::function<void()>& before_pass,
                         const std::function<void()>& call, cudaStream_t stream, size_t max_ranges,
                         bool may_switch_replay, int* cupti_error = nullptr);
  core::Counters collect_with(bool user_replay, const Config&, const std::function<void()>& before_pass,
                              const std::function<void()>& call, cudaStream_t stream, size_t max_ranges);

  std::unique_ptr<core::Counters> init_failure_;
  std::string chip_name_;
  std::vector<uint8_t> availability_;
  std::map<std::vector<std::string>, std::unique_ptr<Config>> configs_;  // one per metric list
  bool kernel_replay_chosen_ = false;
  bool force_kernel_replay_ = false;  // for the collect() in progress
};

}  // namespace attnprof::measure
