// measure/cuda/timer.cu: the L2 flush's grid (two blocks per SM less one, so the count is odd) and
// buffer; a held stream runs nothing until released; time_call of a copy of known size gives a
// bandwidth no GPU exceeds, with the SM clock read under load, and replays a tiny call from a graph.
// A GPU test: exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "gpu/gpu_test_support.hpp"
#include "measure/backend.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/device.hpp"
#include "measure/cuda/probe_kernels.hpp"
#include "measure/cuda/timer.hpp"

namespace m = attnprof::measure;
namespace probes = attnprof::measure::probes;

namespace {
uint64_t g_seed = 0;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

TEST_CASE("L2Flusher: an odd grid of two blocks per SM less one, over a buffer larger than L2") {
  CHECK(m::L2Flusher::flush_blocks(132) == 263);
  CHECK(m::L2Flusher::flush_blocks(1) == 1);
  CHECK(m::L2Flusher::flush_blocks(0) == 1);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const attnprof::core::DeviceInfo info = m::query_device(0);
  m::L2Flusher flusher(info.l2_bytes);
  CHECK(flusher.bytes() >= static_cast<size_t>(info.l2_bytes));
  m::Stream stream;
  flusher.flush(stream.get());
  flusher.flush(stream.get());  // the grid barrier resets between flushes
  CHECK(cudaStreamSynchronize(stream.get()) == cudaSuccess);
}

TEST_CASE("StreamHold: work behind a hold waits until release") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m::Stream stream;
  m::StreamHold hold;
  m::Event done;
  // Loaded before the hold: the first launch of a kernel loads its module (lazy loading), which waits
  // for the device, here for the hold to time out. time_call runs a call once before any hold.
  probes::launch_empty(stream.get());
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  hold.hold(stream.get());
  probes::launch_empty(stream.get());
  done.record(stream.get());
  CHECK(cudaEventQuery(done.get()) == cudaErrorNotReady);
  hold.release();
  CHECK(cudaEventSynchronize(done.get()) == cudaSuccess);
  CHECK_FALSE(hold.timed_out());
}

TEST_CASE("time_call: a 256 MiB copy cold, and an empty launch replayed from a graph") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const attnprof::core::DeviceInfo info = m::query_device(0);
  m::Stream stream;
  m::L2Flusher flusher(info.l2_bytes);
  constexpr size_t kBytes = size_t{256} << 20;
  m::DeviceBuffer src(kBytes), dst(kBytes);
  m::MeasureOptions options;
  options.min_samples = 10;
  options.max_samples = 40;
  options.max_seconds_per_point = 0.5;
  const int blocks = static_cast<int>(info.sm_count) * 8;
  const m::Timing copy = m::time_call(
      [&](cudaStream_t s, attnprof::kernels::StageHook*) {
        probes::launch_copy(src.get(), dst.get(), kBytes, 1, blocks, 256, s);
      },
      1, stream.get(), options, info.sm_clock_max_mhz, flusher);
  CHECK(copy.timing_mode == attnprof::core::TimingMode::cold);
  REQUIRE(copy.samples.total_us.size() >= 10);
  const double bytes_per_s = 2.0 * kBytes / (median(copy.samples.total_us) * 1e-6);
  INFO("copy: " << bytes_per_s / 1e9 << " GB/s");
  CHECK(bytes_per_s < 20e12);
  CHECK(bytes_per_s > 1e11);
  CHECK(copy.launch_overhead_us > 0);
  CHECK(copy.clock.sm_mhz_min > 100);
  CHECK(copy.clock.sm_mhz_max < 1.15 * info.sm_clock_max_mhz);

  const m::Timing tiny = m::time_call([&](cudaStream_t s, attnprof::kernels::StageHook*) { probes::launch_empty(s); },
                                      1, stream.get(), options, info.sm_clock_max_mhz, flusher);
  INFO(tiny.note);
  CHECK(tiny.timing_mode == attnprof::core::TimingMode::cold_graph);
  CHECK(tiny.calls_per_graph > 1);
  CHECK(median(tiny.samples.total_us) < attnprof::core::kGraphTimingBelowUs);
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_timer", argc, argv, g_seed); }
