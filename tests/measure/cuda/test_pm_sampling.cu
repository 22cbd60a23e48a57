// measure/cuda/pm_sampling.cpp: a kernel's timeline on a kernel whose phases are known by
// construction: one wave of blocks, each first streaming its slice of a buffer far larger than L2 from
// DRAM (DRAM busy, the SMs waiting on it), then running dependent FMA chains in registers (the SMs busy,
// DRAM idle), the two phases of about equal length (each timed alone first). The timeline must show
// DRAM busy in its first part and idle in its last, the SM busy in its last; its interval, sample count
// and length must fit the call. A short call is sampled several calls back to back, and two timelines
// are taken in one process (PM sampling is enabled and disabled per point). The [cpu] cases (the
// metric set fits one PM sampling pass on GH100, offline; the sampling plan) run without a GPU too;
// the rest exits 77 without a device. ATTNPROF_TEST_FIGURES=1 prints what each case measured.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "core/results.hpp"  // to_string(SamplingStatus)
#include "core/timeline.hpp"
#include "gpu/gpu_test_support.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/pm_sampling.hpp"

namespace core = attnprof::core;
namespace m = attnprof::measure;

namespace {

uint64_t g_seed = 0;
constexpr size_t kStreamBytes = size_t{2} << 30;  // 2 GiB: far beyond the H200's 60 MiB of L2
constexpr int kThreads = 256;
constexpr int kChains = 8;  // independent FMA chains per thread: enough to fill the FMA pipe

// Phase 1 streams this block's slice of `in` (float4 loads, summed); phase 2 runs `iterations` steps of
// kChains dependent FMA chains seeded from the sum. Either phase can be switched off (0 bytes, 0 steps).
__global__ void two_phase(const float4* in, size_t vectors, int iterations, float* out) {
  const size_t per_block = (vectors + gridDim.x - 1) / gridDim.x;
  const size_t begin = per_block * blockIdx.x;
  const size_t end = begin + per_block < vectors ? begin + per_block : vectors;
  float sum = 0;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float4 v = __ldcs(in + i);
    sum += v.x + v.y + v.z + v.w;
  }
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = sum * 1e-30f + static_cast<float>(threadIdx.x + c);
#pragma unroll 1
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = fmaf(x[c], 0.9999f, 0.5f);
  }
  float r = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) r += x[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

bool figures() { return std::getenv("ATTNPROF_TEST_FIGURES") != nullptr; }

// Mean of a series over the samples whose start lies in [from, to) of the timeline's length.
double mean_over(const core::Timeline& t, const core::TimelineSeries& s, double from, double to) {
  const double length = static_cast<double>(t.t_us.size()) * t.spacing_us();
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < t.t_us.size(); ++i) {
    if (t.t_us[i] < from * length || t.t_us[i] >= to * length || !std::isfinite(s.values[i])) continue;
    sum += s.values[i];
    ++n;
  }
  return n > 0 ? sum / n : std::nan("");
}

const core::TimelineSeries& series(const core::Timeline& t, const char* label) {
  const core::TimelineSeries* s = t.find(label);
  INFO("no series " << label);
  REQUIRE(s != nullptr);
  return *s;
}

void print(const char* name, const core::Timeline& t) {
  std::printf("MEASURE pm_sampling %s: status %s, %zu samples (%lld taken), interval %lld ns x %lld merged, "
              "%lld call(s) of %.1f us, %.1f ms; %s\n",
              name, std::string(core::to_string(t.status)).c_str(), t.t_us.size(), static_cast<long long>(t.samples_taken),
              static_cast<long long>(t.interval_ns), static_cast<long long>(t.merged), static_cast<long long>(t.calls),
              t.call_us, t.profiling_ms, t.reason.c_str());
  for (const auto& s : t.series)
    std::printf("MEASURE pm_sampling %s:   %-14s first 30%% %5.1f, middle %5.1f, last 30%% %5.1f\n", name,
                s.label.c_str(), mean_over(t, s, 0, 0.3), mean_over(t, s, 0.3, 0.7), mean_over(t, s, 0.7, 1.01));
  const core::TimelineSummary sum = core::summarize_timeline(t);
  if (sum.phases.found)
    std::printf("MEASURE pm_sampling %s:   phases (lead %s): prologue %.1f us, steady %.1f us, tail %.1f us\n", name,
                sum.phases.lead.c_str(), sum.phases.prologue_us, sum.phases.steady_us, sum.phases.tail_us);
}

// GPU time of one launch [us].
double time_us(const std::function<void()>& launch, cudaStream_t stream) {
  m::Event begin, end;
  begin.record(stream);
  launch();
  end.record(stream);
  return m::elapsed_ms(begin, end) * 1e3;
}

}  // namespace

TEST_CASE("pm_sampling [cpu]: the timeline's metrics fit one PM sampling pass on GH100 (offline)", "[cpu]") {
  const m::TimelineConfigCheck check = m::check_timeline_metrics("GH100");
  CHECK(check.passes == 1);
  CHECK(check.metrics.size() == core::kTimelineMetrics.size());
}

TEST_CASE("plan_timeline [cpu]: about 500 samples a call within the interval's range; short calls back to back",
          "[cpu]") {
  const m::TimelinePlan one_ms = m::plan_timeline(1000);
  CHECK(one_ms.interval_ns == 2000);
  CHECK(one_ms.calls == 1);
  const m::TimelinePlan long_call = m::plan_timeline(2e6);  // 2 s: the longest interval
  CHECK(long_call.interval_ns == m::kMaxIntervalNs);
  CHECK(long_call.calls == 1);
  const m::TimelinePlan short_call = m::plan_timeline(20);  // 20 intervals of 1 us: 5 calls make 100
  CHECK(short_call.interval_ns == m::kMinIntervalNs);
  CHECK(short_call.calls == 5);
  CHECK(m::plan_timeline(150).calls == 1);
  CHECK(m::plan_timeline(0.1).calls == m::kMaxCalls);
  CHECK(m::plan_timeline(0).calls == m::kMaxCalls);
}

TEST_CASE("sample_timeline: DRAM busy while the blocks stream, idle while they compute; SM busy then") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m::Stream stream;
  int sms = 0, per_sm = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  REQUIRE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, two_phase, kThreads, 0) == cudaSuccess);
  const int blocks = sms * per_sm;  // one wave: every block streams, then every block computes
  m::DeviceBuffer in(kStreamBytes);
  m::DeviceBuffer out(size_t(blocks) * kThreads * sizeof(float));
  REQUIRE(cudaMemsetAsync(in.get(), 0, kStreamBytes, stream.get()) == cudaSuccess);
  const auto* vectors = static_cast<const float4*>(in.get());
  const size_t count = kStreamBytes / sizeof(float4);
  auto* o = static_cast<float*>(out.get());

  // Each phase alone, then the compute steps that take as long as the stream.
  constexpr int kProbeSteps = 20000;
  const auto run = [&](size_t n, int steps) { two_phase<<<blocks, kThreads, 0, stream.get()>>>(vectors, n, steps, o); };
  run(count, 0);  // warm-up
  const double stream_us = time_us([&] { run(count, 0); }, stream.get());
  const double compute_probe_us = time_us([&] { run(0, kProbeSteps); }, stream.get());
  const int steps = std::max(1, static_cast<int>(kProbeSteps * stream_us / std::max(compute_probe_us, 1.0)));
  if (figures())
    std::printf("MEASURE pm_sampling two_phase: %d blocks, stream %.1f us, %d FMA steps %.1f us -> %d steps\n", blocks,
                stream_us, kProbeSteps, compute_probe_us, steps);

  const core::Timeline t = m::sample_timeline([] {}, [&] { run(count, steps); }, {}, stream.get());
  if (figures()) print("two_phase", t);
  INFO(t.reason);
  REQUIRE(t.status == core::SamplingStatus::ok);
  CHECK(t.calls == 1);
  CHECK(t.interval_ns >= m::kMinIntervalNs);
  CHECK(t.interval_ns <= m::kMaxIntervalNs);
  CHECK(t.t_us.size() >= 100);
  CHECK(t.t_us.size() <= core::kMaxTimelineSamples);
  CHECK(t.samples_taken >= static_cast<int64_t>(t.t_us.size()));
  CHECK(t.series.size() == core::kTimelineMetrics.size());
  // The busy samples span the call: its length within a few intervals of the timed call.
  const double length_us = static_cast<double>(t.t_us.size()) * t.spacing_us();
  INFO("timeline " << length_us << " us, call " << t.call_us << " us");
  CHECK(length_us > 0.7 * t.call_us);
  CHECK(length_us < 1.3 * t.call_us + 4 * t.spacing_us());
  // CUPTI's sample timestamps are in ns: their span matches the samples' count at the interval.
  const double span_us = t.t_us.back() - t.t_us.front();
  INFO("timestamps span " << span_us << " us over " << t.t_us.size() << " samples");
  CHECK(span_us == Approx(static_cast<double>(t.t_us.size() - 1) * t.spacing_us()).epsilon(0.2));

  const core::TimelineSeries& dram = series(t, core::kTimelineDramLabel);
  const core::TimelineSeries& sm = series(t, "SM");
  const double dram_first = mean_over(t, dram, 0, 0.3), dram_last = mean_over(t, dram, 0.7, 1.01);
  const double sm_last = mean_over(t, sm, 0.7, 1.01);
  INFO("DRAM first 30% " << dram_first << ", last 30% " << dram_last << "; SM last 30% " << sm_last);
  CHECK(dram_first > 40);
  CHECK(dram_last < 10);
  CHECK(dram_first > 4 * dram_last);
  CHECK(sm_last > 30);
}

TEST_CASE("sample_timeline: a call of a few intervals runs back to back, and a second point samples in the same process") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m::Stream stream;
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  m::DeviceBuffer out(size_t(sms) * kThreads * sizeof(float));
  auto* o = static_cast<float*>(out.get());
  // About 20 us of FMA chains: fewer than kMinSamplesPerCall intervals of the shortest.
  constexpr int kSteps = 2000;
  const auto run = [&] { two_phase<<<sms, kThreads, 0, stream.get()>>>(nullptr, 0, kSteps, o); };
  run();
  for (int point = 0; point < 2; ++point) {
    const core::Timeline t = m::sample_timeline([] {}, run, {}, stream.get());
    if (figures()) print(point == 0 ? "short, point 0" : "short, point 1", t);
    INFO("point " << point << ": " << t.reason);
    REQUIRE(t.status == core::SamplingStatus::ok);
    const m::TimelinePlan plan = m::plan_timeline(t.call_us);
    CHECK(t.calls == plan.calls);
    if (plan.calls > 1) CHECK_THAT(t.reason, Catch::Contains("calls back to back"));
    CHECK(t.t_us.size() >= 50);
    CHECK(mean_over(t, series(t, "SM"), 0, 1.01) > 10);
  }
}

int main(int argc, char** argv) {
  if (!attnprof::gpu_test::device_present()) {
    // The offline cases first: they need CUPTI's host API, not a device.
    const char* cpu_only[] = {argv[0], "[cpu]"};
    const int failed = attnprof::gpu_test::run_catch(2, const_cast<char**>(cpu_only));
    if (failed != 0) return failed;
  }
  return attnprof::gpu_test::run_session("test_pm_sampling", argc, argv, g_seed);
}
