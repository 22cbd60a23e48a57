// run_point(): the one lifecycle of a point (point_lifecycle.hpp), for every backend.
#include "measure/point_lifecycle.hpp"

#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "kernels/common/testbed.hpp"  // DeviceOutOfMemory (declarations only)

namespace attnprof::measure {

void PointDeadline::check() const {
  if (timeout_s_ > 0 && elapsed_s() > timeout_s_)
    throw std::runtime_error(fmt::format("point exceeded its {:.0f} s timeout", timeout_s_));
}

std::vector<core::Stage> stages_of(const std::vector<std::string>& names, const SampleSet& samples) {
  std::vector<core::Stage> stages;
  if (names.size() < 2 || samples.stage_us.size() != names.size()) return stages;
  double sum_p50 = 0, sum_p99 = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    core::Stage stage;
    stage.name = names[i];
    stage.samples_us = samples.stage_us[i];
    if (stage.samples_us.empty()) return {};
    stage.p50_us = core::quantile(stage.samples_us, 0.5);
    stage.p99_us = core::quantile(stage.samples_us, 0.99);
    sum_p50 += stage.p50_us;
    sum_p99 += stage.p99_us;
    stages.push_back(std::move(stage));
  }
  for (auto& stage : stages) {
    stage.share_of_p50 = sum_p50 > 0 ? stage.p50_us / sum_p50 : 0;
    stage.share_of_p99 = sum_p99 > 0 ? stage.p99_us / sum_p99 : 0;
  }
  return stages;
}

std::string verification_failure(const core::Verification& v) {
  std::vector<std::string> parts;
  if (v.unwritten > 0) parts.push_back(fmt::format("{} output elements unwritten or not finite", v.unwritten));
  if (!(v.o_max_abs_err <= v.tolerance))
    parts.push_back(fmt::format("max |O - O_f64| {:.3g} above tolerance {:.3g} (naive low-precision error {:.3g})",
                                v.o_max_abs_err, v.tolerance, v.naive_o_max_abs_err));
  else if (v.o_max_bound_ratio && !(*v.o_max_bound_ratio <= 1))
    parts.push_back(fmt::format("an O element's |O - O_f64| is {:.3g}x its own bound (fp8 prefill; max |O - O_f64| "
                                "{:.3g}, largest bound {:.3g})",
                                *v.o_max_bound_ratio, v.o_max_abs_err, v.tolerance));
  std::vector<std::string> grads;
  for (const auto& [name, g] : v.grads)
    if (!g.passed)
      grads.push_back(fmt::format("max |{} - {}_f64| {:.3g} above tolerance {:.3g} (naive low-precision error {:.3g})",
                                  name, name, g.max_abs_err, g.tolerance, g.naive_max_abs_err));
  // LSE's tolerance is per row: its largest error is named beside a failed O, or as the failure when
  // nothing else failed; a backward point whose gradients alone failed does not name it.
  if (!parts.empty() || grads.empty()) parts.push_back(fmt::format("max |LSE - LSE_f64| {:.3g}", v.lse_max_abs_err));
  parts.insert(parts.end(), grads.begin(), grads.end());
  return fmt::format("verification failed: {}", fmt::join(parts, "; "));
}

void PointSteps::call_forward() {
  throw kernels::Unsupported("this backend does not run a backward point's forward (no backward buffers)");
}

namespace {

// begin_phase/end_phase around a scope, ended on every way out.
class Phase {
 public:
  Phase(PointSteps& steps, std::string_view name) : steps_(steps) { steps_.begin_phase(name); }
  ~Phase() { steps_.end_phase(); }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  PointSteps& steps_;
};

// The script: every step after the support check sees a point that is supported and fits.
void run_steps(PointSteps& steps, const core::Shape& shape, const kernels::Kernel& kernel,
               const MeasureOptions& options, const PointDeadline& deadline, core::Record& rec) {
  try {
    shape.validate();
  } catch (const InputError& e) {
    rec.status = core::Status::failed;
    rec.reason = e.what();
    return;
  }
  if (std::string why = kernels::support_reason(kernel, shape); !why.empty()) {
    rec.status = core::Status::unsupported;
    rec.reason = std::move(why);
    return;
  }
  if (std::string why = steps.launch_refusal(); !why.empty()) {
    rec.status = core::Status::unsupported;
    rec.reason = std::move(why);
    return;
  }
  rec.cost = core::cost_of(shape, kernel.kind());
  // Refused before allocating: a failed multi-GiB allocation is slow and fragments the heap.
  if (std::string why = steps.memory_refusal(); !why.empty()) {
    rec.status = core::Status::oom;
    rec.reason = std::move(why);
    return;
  }

  const uint64_t seed = options.seed != 0 ? options.seed : steps.fresh_seed();
  rec.verification.seed = seed;
  rec.layout = std::string(kernels::to_string(kernel.layout()));
  rec.plan = kernel.plan(shape);
  if (options.stalls) {
    // The stall pass: the point was verified, timed and profiled by a worker without sampling.
    const Phase phase(steps, "stalls");
    steps.allocate(seed);
    if (shape.pass == core::Pass::bwd) steps.call_forward();
    steps.call_once();
    rec.stalls = steps.sample_stalls(options, rec);
    return;
  }
  if (options.timeline) {
    // The timeline pass: the point was verified, timed and profiled by a worker without sampling.
    const Phase phase(steps, "timeline");
    steps.allocate(seed);
    if (shape.pass == core::Pass::bwd) steps.call_forward();
    steps.call_once();
    rec.timeline = steps.sample_timeline(options, rec);
    return;
  }
  {
    const Phase phase(steps, "verify");
    steps.allocate(seed);
    if (shape.pass == core::Pass::bwd) steps.call_forward();
    steps.call_once();
    if (options.verify) {
      rec.verification = steps.verify(seed, options.verify_rows);
      rec.verification.seed = seed;
      if (!rec.verification.passed) {
        rec.status = core::Status::incorrect;
        rec.reason = verification_failure(rec.verification);
      }
    }
  }
  deadline.check();
  {
    const Phase phase(steps, "launches");
    steps.inspect(rec);
  }
  {
    const Phase phase(steps, "time");
    PointTiming timing = steps.time(options, deadline);
    rec.samples_us = std::move(timing.samples.total_us);
    rec.sampling_stop = timing.samples.stop_reason;
    rec.latency = core::summarize(rec.samples_us);
    rec.stages = stages_of(kernel.stage_names(shape), timing.samples);
    rec.timing_mode = timing.timing_mode;
    rec.clock = std::move(timing.clock);
    rec.launch_overhead_us = timing.launch_overhead_us;
    core::set_tflops(rec);
  }
  const Phase phase(steps, "counters");
  steps.profile(options, rec);
}

}  // namespace

core::Record run_point(PointSteps& steps, const PointOrigin& origin, const core::Shape& shape,
                       const kernels::Kernel& kernel, const MeasureOptions& options) {
  const PointDeadline deadline(PointDeadline::Clock::now(), options.point_timeout_s);
  core::Record rec;
  rec.shape = shape;
  rec.kernel = kernel.name();
  rec.backend = origin.backend;
  rec.device_id = origin.device_id;
  rec.timing_mode = options.cold_l2 ? core::TimingMode::cold : core::TimingMode::warm;
  steps.check_options(options);
  try {
    run_steps(steps, shape, kernel, options, deadline, rec);
  } catch (const kernels::Unsupported& e) {
    rec.status = core::Status::unsupported;
    rec.reason = e.what();
  } catch (const kernels::DeviceOutOfMemory& e) {
    rec.status = core::Status::oom;
    rec.reason = e.what();
  } catch (const std::bad_alloc&) {
    rec.status = core::Status::oom;
    rec.reason = "host memory allocation failed";
  } catch (const std::exception& e) {
    steps.escalate(e, shape, kernel);
    rec.status = core::Status::failed;
    rec.reason = e.what();
  }
  rec.wall_s = deadline.elapsed_s();
  return rec;
}

}  // namespace attnprof::measure
