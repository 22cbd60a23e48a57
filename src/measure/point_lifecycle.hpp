// The lifecycle of one (shape, kernel) point, the same on every backend, as a script in the spirit of
// nvbench's measure_cold: check the shape and the kernel's support, cost, refuse what does not fit,
// allocate and fill, one untimed call, verify against float64, time, profile (counters, occupancy).
// A backend supplies only the steps that touch its device (PointSteps: allocation, the call, the
// timer, its counters); run_point() decides their order and turns every point-level failure into
// the record's status and reason:
//   - an invalid shape or a kernel that does not support it: unsupported / failed, before any cost,
//     allocation or seed;
//   - too little memory: oom, before allocating;
//   - a failed verification: incorrect, and the point is still timed and profiled (how fast a wrong
//     answer comes is worth seeing);
//   - an exception in any step: oom (DeviceOutOfMemory, std::bad_alloc), unsupported
//     (kernels::Unsupported) or failed, unless the backend escalates it (a lost CUDA context).
#pragma once
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "core/results.hpp"
#include "kernels/registry.hpp"
#include "measure/backend.hpp"
#include "measure/sampling.hpp"

namespace attnprof::measure {

// The point's wall clock since run_point() began, against options.point_timeout_s.
class PointDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  PointDeadline(Clock::time_point start, double timeout_s) : start_(start), timeout_s_(timeout_s) {}
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // Throws std::runtime_error once the point has run longer than its timeout (0: none).
  void check() const;

 private:
  Clock::time_point start_;
  double timeout_s_;
};

// What a backend's timer measured of the point.
struct PointTiming {
  SampleSet samples;                      // total_us per sample, stage_us [stage][sample]
  core::TimingMode timing_mode = core::TimingMode::cold;
  core::ClockInfo clock;                  // empty where the backend reads no clock
  double launch_overhead_us = 0;          // host-side enqueue cost of one call; 0 when not measured
};

// The steps of one point on one backend, called by run_point() in this order:
//   check_options, [support: the lifecycle's], launch_refusal, [cost], memory_refusal, fresh_seed (when the options
//   give none), allocate, call_forward (a bwd point only), call_once, verify (when options.verify),
//   inspect, time, profile; with options.stalls (the sweep's stall pass, after the point was timed
//   elsewhere) allocate, call_forward (bwd), call_once and sample_stalls alone; with options.timeline
//   (the timeline pass) allocate, call_forward (bwd), call_once and sample_timeline alone.
// Phases (begin_phase/end_phase) bracket the steps by name for a timeline: "verify", "launches",
// "time", "counters", "stalls", "timeline". One PointSteps object serves one point.
class PointSteps {
 public:
  virtual ~PointSteps() = default;
  // Before the point: an InputError here is the whole run's (a bad --metrics), and escapes.
  virtual void check_options(const MeasureOptions&) {}
  // Empty when every launch the kernel declares for the shape fits the device (CUDA: its shared memory
  // per block), else why not (the unsupported reason); may do nothing.
  virtual std::string launch_refusal() { return {}; }
  // Empty when the point fits in the memory the backend has, else why not (the oom reason).
  virtual std::string memory_refusal() = 0;
  virtual uint64_t fresh_seed() = 0;
  // Buffers, inputs filled from `seed`, outputs poisoned, the kernel's call prepared (untimed).
  virtual void allocate(uint64_t seed) = 0;
  // A bwd point (Shape::pass bwd) only: one untimed call of the kernel's own forward (the shape with
  // pass fwd) on the point's buffers, filling the O and LSE its backward calls read; they leave them
  // unchanged, so every later call_once and timed call is a backward alone. A backend that has no
  // backward buffers keeps the default, which makes the point unsupported.
  virtual void call_forward();
  // One untimed call, its output written where verify() reads it (a backward point's dQ, dK and dV
  // poisoned before it; a fwd_bwd point's O and LSE too).
  virtual void call_once() = 0;
  // A backward point's: the O and LSE its backward read (verify_rows) and its gradients (verify_grads),
  // merged (kernels::merge_grad_checks).
  virtual core::Verification verify(uint64_t seed, int max_rows) = 0;
  // Untimed looks at the call before it is timed (CUDA: its launch records); may do nothing.
  virtual void inspect(core::Record&) {}
  virtual PointTiming time(const MeasureOptions&, const PointDeadline&) = 0;
  // Counters and occupancy: what the backend measures beyond time; may do nothing.
  virtual void profile(const MeasureOptions&, core::Record&) {}
  // Warp-state samples of the call (options.stalls; rec holds no timing): a backend without them says so.
  virtual core::Stalls sample_stalls(const MeasureOptions&, const core::Record&) {
    core::Stalls none;
    none.status = core::SamplingStatus::unsupported;
    none.reason = core::kNoWarpStatesReason;
    return none;
  }
  // The counters of the call against time (options.timeline; rec holds no timing): a backend without
  // PM sampling says so.
  virtual core::Timeline sample_timeline(const MeasureOptions&, const core::Record&) {
    core::Timeline none;
    none.status = core::SamplingStatus::unsupported;
    none.reason = core::kNoTimelineReason;
    return none;
  }
  // A step threw `e`, which the lifecycle would record as failed: a backend may throw instead (an
  // EnvironmentError when its device is lost).
  virtual void escalate(const std::exception& e, const core::Shape&, const kernels::Kernel&) { (void)e; }
  virtual void begin_phase(std::string_view) {}
  virtual void end_phase() {}
};

// Who measured the point: written into its record before the first step.
struct PointOrigin {
  core::BackendKind backend = core::BackendKind::cpu;
  int device_id = 0;
};

// Runs one point through `steps`. Never throws for a point-level failure; throws what
// check_options() or escalate() throw.
core::Record run_point(PointSteps& steps, const PointOrigin& origin, const core::Shape& shape,
                       const kernels::Kernel& kernel, const MeasureOptions& options);

// The per-stage summaries of a multi-launch call: none unless there are two or more stage names
// and as many non-empty stage sample sets.
std::vector<core::Stage> stages_of(const std::vector<std::string>& names, const SampleSet& samples);

// "verification failed: ..." with what failed: unwritten elements, O's error against its tolerance
// and the naive low-precision error, LSE's largest error (beside a failed O, or alone when nothing else
// failed), and a backward point's failed gradients.
std::string verification_failure(const core::Verification&);

}  // namespace attnprof::measure
