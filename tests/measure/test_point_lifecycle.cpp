// The point lifecycle (src/measure/point_lifecycle.hpp): the order of its steps, what an unsupported,
// invalid or refused point never reaches, a failed verification that keeps the point, exceptions as
// statuses; and the CPU backend through it.
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "measure/cpu_backend.hpp"
#include "measure/measure_test_support.hpp"
#include "measure/point_lifecycle.hpp"

using attnprof::core::BackendKind;
using attnprof::core::CounterStatus;
using attnprof::core::DType;
using attnprof::core::Shape;
using attnprof::core::Status;
using attnprof::core::TimingMode;
namespace m = attnprof::measure;
namespace k = attnprof::kernels;

namespace {

Shape small_shape() { return attnprof::measure_test::bf16_shape(1, 2, 2, 32, 48); }
m::MeasureOptions lifecycle_options() { return attnprof::measure_test::quick_options(20, 77); }

// A CPU kernel that refuses shapes of more than `max_seq` keys and writes zeros (wrong, but written).
class TestKernel final : public attnprof::measure_test::WrongKernel {
 public:
  explicit TestKernel(int64_t max_seq = int64_t{1} << 20)
      : WrongKernel("lifecycle-test", attnprof::measure_test::Writes::zeros, max_seq) {}
};

// Steps that record what was called, in order; each can be made to fail.
class RecordingSteps final : public m::PointSteps {
 public:
  std::vector<std::string> calls;
  std::string refuse;                 // memory_refusal's answer
  std::string refuse_launch;          // launch_refusal's answer
  bool verify_passes = true;
  std::string throw_in;               // step name that throws std::runtime_error
  bool escalate_to_environment = false;

  void check_options(const m::MeasureOptions&) override { step("check_options"); }
  std::string launch_refusal() override {
    step("launch_refusal");
    return refuse_launch;
  }
  std::string memory_refusal() override {
    step("memory_refusal");
    return refuse;
  }
  uint64_t fresh_seed() override {
    step("fresh_seed");
    return 99;
  }
  void allocate(uint64_t seed) override { step("allocate:" + std::to_string(seed)); }
  void call_once() override { step("call_once"); }
  attnprof::core::Verification verify(uint64_t seed, int) override {
    step("verify");
    attnprof::core::Verification v;
    v.checked = true;
    v.seed = seed;
    v.passed = verify_passes;
    v.o_max_abs_err = verify_passes ? 0 : 1;
    v.tolerance = 0.01;
    return v;
  }
  void inspect(attnprof::core::Record&) override { step("inspect"); }
  m::PointTiming time(const m::MeasureOptions&, const m::PointDeadline&) override {
    step("time");
    m::PointTiming t;
    t.samples.total_us = {10, 11, 12, 13};
    t.samples.stop_reason = "converged";
    t.timing_mode = TimingMode::cold_graph;
    t.launch_overhead_us = 2.5;
    return t;
  }
  void profile(const m::MeasureOptions&, attnprof::core::Record& rec) override {
    step("profile");
    rec.counters.status = CounterStatus::ok;
  }
  void escalate(const std::exception& e, const Shape&, const k::Kernel&) override {
    calls.push_back(std::string("escalate:") + e.what());
    if (escalate_to_environment) throw attnprof::EnvironmentError("device lost");
  }
  void begin_phase(std::string_view name) override { calls.push_back("[" + std::string(name)); }
  void end_phase() override { calls.push_back("]"); }

  // The steps alone, without the phase brackets.
  std::vector<std::string> steps() const {
    std::vector<std::string> out;
    for (const auto& c : calls)
      if (c != "]" && c[0] != '[') out.push_back(c);
    return out;
  }

 private:
  void step(const std::string& name) {
    calls.push_back(name);
    if (!throw_in.empty() && name.rfind(throw_in, 0) == 0) throw std::runtime_error(name + " broke");
  }
};

const m::PointOrigin kOrigin{BackendKind::cpu, 3};

}  // namespace

TEST_CASE("lifecycle: the steps of a point, in order, and what each fills", "[lifecycle]") {
  RecordingSteps steps;
  const TestKernel kernel;
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, lifecycle_options());
  INFO(rec.reason);
  CHECK(rec.status == Status::ok);
  CHECK(steps.steps() == std::vector<std::string>{"check_options", "launch_refusal", "memory_refusal", "allocate:77", "call_once",
                                                  "verify", "inspect", "time", "profile"});
  CHECK(steps.calls == std::vector<std::string>{"check_options", "launch_refusal", "memory_refusal", "[verify", "allocate:77",
                                                "call_once", "verify", "]", "[launches", "inspect", "]", "[time",
                                                "time", "]", "[counters", "profile", "]"});
  CHECK(rec.backend == BackendKind::cpu);
  CHECK(rec.device_id == 3);
  CHECK(rec.kernel == "lifecycle-test");
  CHECK(rec.cost.flops > 0);
  CHECK(rec.verification.seed == 77);
  CHECK(rec.samples_us.size() == 4);
  CHECK(rec.latency.p50_us == Approx(11.5));
  CHECK(rec.sampling_stop == "converged");
  CHECK(rec.timing_mode == TimingMode::cold_graph);
  CHECK(rec.launch_overhead_us == 2.5);
  CHECK(rec.tflops == Approx(rec.cost.flops / 11.5e-6 / 1e12));
  CHECK(rec.counters.status == CounterStatus::ok);
  CHECK(rec.wall_s >= 0);
}

TEST_CASE("lifecycle: the stall pass allocates, calls once and samples; no verification, timing or counters",
          "[lifecycle]") {
  RecordingSteps steps;
  const TestKernel kernel;
  m::MeasureOptions options = lifecycle_options();
  options.stalls = true;
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, options);
  CHECK(rec.status == Status::ok);
  CHECK(steps.calls == std::vector<std::string>{"check_options", "launch_refusal", "memory_refusal", "[stalls", "allocate:77",
                                                "call_once", "]"});
  REQUIRE(rec.stalls.has_value());  // the default step: this backend has no warp states
  CHECK(rec.stalls->status == attnprof::core::SamplingStatus::unsupported);
  CHECK(rec.samples_us.empty());
  CHECK(rec.counters.status == CounterStatus::not_collected);
  options.stalls = false;
  CHECK_FALSE(m::run_point(steps, kOrigin, small_shape(), kernel, options).stalls.has_value());
}

TEST_CASE("lifecycle: the timeline pass allocates, calls once and samples; no verification, timing or counters",
          "[lifecycle]") {
  RecordingSteps steps;
  const TestKernel kernel;
  m::MeasureOptions options = lifecycle_options();
  options.timeline = true;
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, options);
  CHECK(rec.status == Status::ok);
  CHECK(steps.calls == std::vector<std::string>{"check_options", "launch_refusal", "memory_refusal", "[timeline", "allocate:77",
                                                "call_once", "]"});
  REQUIRE(rec.timeline.has_value());  // the default step: this backend has no PM sampling
  CHECK(rec.timeline->status == attnprof::core::SamplingStatus::unsupported);
  CHECK(rec.timeline->reason == attnprof::core::kNoTimelineReason);
  CHECK_FALSE(rec.stalls.has_value());
  CHECK(rec.samples_us.empty());
  CHECK(rec.counters.status == CounterStatus::not_collected);
  options.timeline = false;
  CHECK_FALSE(m::run_point(steps, kOrigin, small_shape(), kernel, options).timeline.has_value());
}

TEST_CASE("lifecycle: a fresh seed only when the options give none; no verify when switched off", "[lifecycle]") {
  RecordingSteps steps;
  const TestKernel kernel;
  auto options = lifecycle_options();
  options.seed = 0;
  options.verify = false;
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, options);
  CHECK(rec.status == Status::ok);
  CHECK(steps.steps() == std::vector<std::string>{"check_options", "launch_refusal", "memory_refusal", "fresh_seed", "allocate:99",
                                                  "call_once", "inspect", "time", "profile"});
  CHECK(rec.verification.seed == 99);
  CHECK_FALSE(rec.verification.checked);
}

TEST_CASE("lifecycle: an unsupported point has no cost, no allocation, no seed", "[lifecycle]") {
  RecordingSteps steps;
  const TestKernel kernel(16);
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, lifecycle_options());
  CHECK(rec.status == Status::unsupported);
  CHECK(rec.reason == "seq_k above the test kernel's limit");
  CHECK(steps.steps() == std::vector<std::string>{"check_options"});
  CHECK(rec.cost.flops == 0);
  CHECK(rec.cost.min_bytes_read == 0);
  CHECK(rec.verification.seed == 0);
  CHECK(rec.samples_us.empty());
  CHECK(rec.counters.status == CounterStatus::not_collected);
  CHECK(rec.timing_mode == TimingMode::cold);
}

TEST_CASE("lifecycle: an invalid shape fails before any step", "[lifecycle]") {
  RecordingSteps steps;
  const TestKernel kernel;
  Shape bad = small_shape();
  bad.kv_heads = 3;
  const auto rec = m::run_point(steps, kOrigin, bad, kernel, lifecycle_options());
  CHECK(rec.status == Status::failed);
  CHECK(rec.reason.find("kv_heads") != std::string::npos);
  CHECK(steps.steps() == std::vector<std::string>{"check_options"});
  CHECK(rec.cost.flops == 0);
}

TEST_CASE("lifecycle: a launch the device cannot run makes the point unsupported: no cost, no allocation",
          "[lifecycle]") {
  RecordingSteps steps;
  steps.refuse_launch = "k needs 104448 bytes of shared memory per block (102.0 KiB); this GPU allows 101376 (99.0 KiB)";
  const TestKernel kernel;
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, lifecycle_options());
  CHECK(rec.status == Status::unsupported);
  CHECK(rec.reason == steps.refuse_launch);
  CHECK(steps.steps() == std::vector<std::string>{"check_options", "launch_refusal"});
  CHECK(rec.cost.flops == 0);
  CHECK(rec.verification.seed == 0);
}

TEST_CASE("lifecycle: a point refused for memory is costed but never allocated", "[lifecycle]") {
  RecordingSteps steps;
  steps.refuse = "needs 9 GiB, 1 GiB free";
  const TestKernel kernel;
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, lifecycle_options());
  CHECK(rec.status == Status::oom);
  CHECK(rec.reason == "needs 9 GiB, 1 GiB free");
  CHECK(steps.steps() == std::vector<std::string>{"check_options", "launch_refusal", "memory_refusal"});
  CHECK(rec.cost.flops > 0);
  CHECK(rec.verification.seed == 0);
}

TEST_CASE("lifecycle: a failed verification keeps the point: timed and profiled, status incorrect", "[lifecycle]") {
  RecordingSteps steps;
  steps.verify_passes = false;
  const TestKernel kernel;
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, lifecycle_options());
  CHECK(rec.status == Status::incorrect);
  CHECK(rec.reason.find("verification failed") != std::string::npos);
  CHECK(rec.reason.find("above tolerance") != std::string::npos);
  CHECK(steps.steps().back() == "profile");
  CHECK(rec.samples_us.size() == 4);
  CHECK(rec.counters.status == CounterStatus::ok);
}

TEST_CASE("lifecycle: a failed verification's reason names what failed", "[lifecycle]") {
  attnprof::core::Verification v;
  v.checked = true;
  v.tolerance = 0.01;
  v.lse_max_abs_err = 3e-7;
  attnprof::core::GradCheck ok_grad{.rows_checked = 8, .rows_total = 8, .tolerance = 0.01, .passed = true};
  attnprof::core::GradCheck bad_grad = ok_grad;
  bad_grad.max_abs_err = 8.89;
  bad_grad.naive_max_abs_err = 4e-7;
  bad_grad.passed = false;
  SECTION("a backward point whose dK alone failed names dK, not O or LSE") {
    v.grads = {{"dq", ok_grad}, {"dk", bad_grad}, {"dv", ok_grad}};
    CHECK(m::verification_failure(v) ==
          "verification failed: max |dk - dk_f64| 8.89 above tolerance 0.01 (naive low-precision error 4e-07)");
  }
  SECTION("a failed O comes with LSE's largest error") {
    v.o_max_abs_err = 0.5;
    v.naive_o_max_abs_err = 0.002;
    CHECK(m::verification_failure(v) == "verification failed: max |O - O_f64| 0.5 above tolerance 0.01 (naive "
                                        "low-precision error 0.002); max |LSE - LSE_f64| 3e-07");
  }
  SECTION("unwritten elements first, then O, LSE and the gradients") {
    v.unwritten = 3;
    v.o_max_abs_err = 0.5;
    v.grads = {{"dv", bad_grad}};
    CHECK(m::verification_failure(v) ==
          "verification failed: 3 output elements unwritten or not finite; max |O - O_f64| 0.5 above tolerance 0.01 "
          "(naive low-precision error 0); max |LSE - LSE_f64| 3e-07; max |dv - dv_f64| 8.89 above tolerance 0.01 "
          "(naive low-precision error 4e-07)");
  }
  SECTION("nothing else failed: the LSE is the failure") {
    v.lse_max_abs_err = 0.25;
    CHECK(m::verification_failure(v) == "verification failed: max |LSE - LSE_f64| 0.25");
  }
}

TEST_CASE("lifecycle: a throwing step becomes failed, closes its phase, and may be escalated", "[lifecycle]") {
  const TestKernel kernel;
  RecordingSteps steps;
  steps.throw_in = "time";
  const auto rec = m::run_point(steps, kOrigin, small_shape(), kernel, lifecycle_options());
  CHECK(rec.status == Status::failed);
  CHECK(rec.reason == "time broke");
  CHECK(steps.calls == std::vector<std::string>{"check_options", "launch_refusal", "memory_refusal", "[verify", "allocate:77",
                                                "call_once", "verify", "]", "[launches", "inspect", "]", "[time",
                                                "time", "]", "escalate:time broke"});

  RecordingSteps lost;
  lost.throw_in = "call_once";
  lost.escalate_to_environment = true;
  CHECK_THROWS_AS(m::run_point(lost, kOrigin, small_shape(), kernel, lifecycle_options()), attnprof::EnvironmentError);

  // check_options' errors are the run's, not the point's.
  RecordingSteps bad_options;
  bad_options.throw_in = "check_options";
  CHECK_THROWS_AS(m::run_point(bad_options, kOrigin, small_shape(), kernel, lifecycle_options()), std::runtime_error);
}

TEST_CASE("lifecycle: the point's timeout stops it between steps", "[lifecycle]") {
  const m::PointDeadline none(m::PointDeadline::Clock::now() - std::chrono::seconds(10), 0);
  CHECK_NOTHROW(none.check());
  const m::PointDeadline past(m::PointDeadline::Clock::now() - std::chrono::seconds(10), 5);
  CHECK_THROWS_WITH(past.check(), Catch::Contains("exceeded its 5 s timeout"));
  CHECK(past.elapsed_s() >= 10);
}

TEST_CASE("lifecycle: stages only for two or more named stages with samples", "[lifecycle]") {
  m::SampleSet samples;
  samples.stage_us = {{1, 2, 3}, {3, 6, 9}};
  const auto stages = m::stages_of({"a", "b"}, samples);
  REQUIRE(stages.size() == 2);
  CHECK(stages[0].p50_us == 2);
  CHECK(stages[1].share_of_p50 == Approx(0.75));
  CHECK(m::stages_of({"a"}, samples).empty());
  CHECK(m::stages_of({"a", "b", "c"}, samples).empty());
  samples.stage_us[1].clear();
  CHECK(m::stages_of({"a", "b"}, samples).empty());
}

TEST_CASE("CPU backend through the lifecycle: unsupported, incorrect-but-timed, counters", "[lifecycle][cpu-backend]") {
  auto backend = m::make_cpu_backend();
  const TestKernel refusing(16), zeros;
  const auto unsupported = backend->measure(small_shape(), refusing, lifecycle_options());
  CHECK(unsupported.status == Status::unsupported);
  CHECK(unsupported.cost.flops == 0);
  CHECK(unsupported.verification.seed == 0);
  CHECK(unsupported.backend == BackendKind::cpu);
  CHECK(unsupported.counters.status == CounterStatus::not_collected);

  const auto wrong = backend->measure(small_shape(), zeros, lifecycle_options());
  CHECK(wrong.status == Status::incorrect);
  CHECK(wrong.verification.seed == 77);
  CHECK(wrong.cost.flops > 0);
  CHECK(wrong.samples_us.size() >= 5);
  CHECK(wrong.latency.p50_us > 0);
  CHECK(wrong.counters.status == CounterStatus::unavailable);
  CHECK(wrong.counters.reason == "CPU backend: no hardware counters");
}
