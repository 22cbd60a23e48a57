// A measurement backend runs one (shape, kernel) point end to end: allocate, fill fresh random inputs,
// poison outputs, verify against the float64 reference, time, collect counters and occupancy, and
// return a filled core::Record. Backends: "cuda" (src/measure/cuda_backend.cu) and "cpu"
// (src/measure/cpu_backend.cpp). Measurement never formats output.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "kernels/registry.hpp"

namespace attnprof::measure {

struct MeasureOptions {
  // The H200 runs attention at its power cap: the power manager moves the SM clock in steps every few
  // tens of milliseconds, and after an idle (a point's verification runs on the CPU) it takes about
  // half a second of load to settle. A 0.6 s timed warm-up starts the samples in the settled regime,
  // and a minimum sampling time spreads them over several steps. With a 0.2 s warm-up the fa-bench A/A
  // read 87.5-97.9% of P50s within 1% (91-94% in the latest tries); with 0.6 s and this 1 s budget,
  // 97.2% (docs/measurement.md).
  int warmup_calls = 3;
  double warmup_seconds = 0.6;       // and untimed calls until this long has passed
  int min_samples = 10;
  // High enough that the times bind, not the count, for short calls too: at 200, calls under about
  // 1 ms stopped after 40-110 ms of samples, a few of the clock's steps; at 1000, a 0.17 ms call whose
  // batch medians still spread (core::median_ci) stopped after 0.17 s. 20000 calls of the shortest
  // fa-bench call (about 0.1 ms with its flush) outlast the 1 s budget.
  int max_samples = 20000;
  double target_rel_ci = 0.005;      // stop once the 95% CI (core::median_ci) half-width / median is below
  double min_seconds_per_point = 0.25;  // sample at least this long, even once converged
  double max_seconds_per_point = 1;  // sampling time budget per point
  bool cold_l2 = true;               // flush L2 before every sample (default); false = warm
  bool counters = true;              // collect CUPTI counters (CUDA backend)
  // Points per counter session. 1: measure() collects a point's counters itself, in a session of
  // its own. N > 1: measure() leaves them "pending" and collect_counters() later collects up to N
  // points' counters per session (the sweep's default is 32: src/cli/sweep.cpp).
  int counter_batch = 1;
  std::vector<std::string> extra_metrics;
  // The stall pass of sweep --stalls: measure() samples the warp states of one call (allocation, one
  // call, the samples; no verification, timing or counters), in a worker whose backend was prepared
  // with prepare_stall_sampling().
  bool stalls = false;
  // The timeline pass of sweep --timeline: measure() samples the counters of one call against time
  // (allocation, one call, the samples; nothing else), in a worker of its own: PM sampling, warp-state
  // sampling and the counters all program the GPU's performance monitors.
  bool timeline = false;
  bool verify = true;
  int verify_rows = 256;             // rows of O checked against float64 (all rows when fewer)
  uint64_t seed = 0;                 // 0 = fresh random seed for each point
  double point_timeout_s = 120;      // a point running longer is abandoned (status failed)
};
// Every field required on read (from_json uses at()): the sweep hands options to its worker
// processes in this form.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MeasureOptions, warmup_calls, warmup_seconds, min_seconds_per_point,
                                   min_samples, max_samples, target_rel_ci, max_seconds_per_point, cold_l2,
                                   counters, extra_metrics, verify, verify_rows, seed, point_timeout_s,
                                   counter_batch, stalls, timeline)

// The options of the workers that time a sweep's points and collect their counters, from the sweep's:
// no sampling (the stall and timeline passes run after, in workers of their own), and for a sweep with
// --stalls the instruction mix (core::kInstructionMixMetrics) added to the counters' extra metrics,
// so that it is counted in the counter phase, never while the points are timed.
MeasureOptions timing_worker_options(const MeasureOptions& sweep);

// What a fresh worker found when it checked its device after a killed point.
struct SettleReport {
  bool checked = false;  // false: nothing to check (the CPU backend)
  bool idle = true;      // the device ran this process's work alone within the limit
  double waited_s = 0;
  std::string detail;    // the figures the check rests on
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual core::BackendKind kind() const = 0;
  std::string name() const { return std::string(core::to_string(kind())); }  // "cuda" or "cpu"
  virtual core::DeviceInfo device_info() = 0;
  // Measured ceilings (cached per device under $XDG_CACHE_HOME/attnprof) merged with the datasheet.
  virtual core::Ceilings ceilings(bool remeasure = false) = 0;
  virtual std::vector<const kernels::Kernel*> kernels() = 0;
  // Never throws for a point-level failure: returns a Record with status and reason instead.
  virtual core::Record measure(const core::Shape&, const kernels::Kernel&, const MeasureOptions&) = 0;
  // The counter phase of records that measure() left with counters "pending" (counter_batch > 1):
  // re-creates each point's buffers from its verification seed and fills counters (and achieved
  // occupancy) in sessions of up to counter_batch points. Never throws for a counter failure (the
  // counters say "unavailable"); throws EnvironmentError when the device is lost (sticky error).
  // A backend without counters marks them "not_collected".
  virtual void collect_counters(std::vector<core::Record>& records, const MeasureOptions&);
  // After a point was killed (its process may leave work on the device): waits, at most limit_s,
  // until the device runs this process's work alone, and says how long that took. The CPU backend
  // has nothing to wait for.
  virtual SettleReport settle(double /*limit_s*/) { return {}; }
};

// which: "auto" (CUDA when a GPU is present, else CPU with a notice), "cuda", "cpu".
// Throws EnvironmentError when "cuda" is asked for and no GPU (or no CUDA build) is there.
std::unique_ptr<Backend> make_backend(const std::string& which, int device_index,
                                      std::vector<std::string>* notices);

// When a backend's points will be sampled (MeasureOptions::stalls), right after it is made and before
// any point runs: enables warp-state sampling (stopped) and keeps the code of every kernel loaded from
// then on. Samples name only kernels loaded after this. Does nothing on the CPU backend; a refusal
// shows in each point's stalls.
void prepare_stall_sampling(const Backend&);

// True when this binary has the CUDA backend and a CUDA device is visible.
bool cuda_available(std::string* why_not = nullptr);
// CUDA devices visible to this process; 0 without the CUDA backend or a driver.
int visible_cuda_devices();

}  // namespace attnprof::measure
