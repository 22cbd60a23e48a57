// Where a batched CUPTI counter session's time goes as its range capacity grows: the same three small
// copies (each after an L2 flush) profiled in one session per capacity, and per pass the time spent
// setting the pass up, running the calls and closing it, then decoding and evaluating the counters.
// An experiment, not a test: it prints the figures behind the session sizing of docs/measurement.md
// (counter batching, "Groups") and asserts nothing about them. Built in tests/bench/ (CUDA builds),
// not registered with CTest.
// Usage: bench_counter_session [--capacities 16,64,256,1024] [--copy-mib 64]
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

#include "core/results.hpp"
#include "measure/counter_batch.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/cupti_profiler.hpp"
#include "measure/cuda/device.hpp"
#include "measure/cuda/timer.hpp"
#include "gpu/test_gpu_measure_kernels.hpp"

namespace m = attnprof::measure;

int main(int argc, char** argv) {
  CLI::App app{"Where a batched counter session's time goes, per range capacity"};
  std::vector<size_t> capacities{16, 64, 256, 1024};
  size_t copy_mib = 64;
  app.add_option("--capacities", capacities, "CUPTI range capacities, one session each")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, m::kMaxBatchRanges));
  app.add_option("--copy-mib", copy_mib, "bytes each of the three copies moves [MiB]")->check(CLI::Range(1, 4096));
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_counter_session: no CUDA device\n");
    return 4;
  }
  if (cudaSetDevice(0) != cudaSuccess) return 4;
  const attnprof::core::DeviceInfo info = m::query_device(0);
  m::Stream stream;
  m::L2Flusher flusher{info.l2_bytes};
  const size_t bytes = copy_mib << 20;
  m::DeviceBuffer src(bytes), dst(bytes);
  if (cudaMemset(src.get(), 1, bytes) != cudaSuccess) return 4;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);

  m::CounterProfiler& profiler = m::CounterProfiler::instance();
  if (profiler.init_failure()) {
    std::fprintf(stderr, "bench_counter_session: CUPTI unavailable: %s\n", profiler.init_failure()->reason.c_str());
    return 4;
  }
  const auto flush = [&] { flusher.flush(stream.get()); };
  const auto copy = [&] { attnprof::test::launch_copy(src.get(), dst.get(), bytes, sms * 8, stream.get()); };
  const std::vector<m::CounterProfiler::BatchPoint> points(3, {flush, copy, true});
  std::printf("%s, three copies of %zu MiB per session\n", info.name.c_str(), copy_mib);
  for (size_t capacity : capacities) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<attnprof::core::Counters> c = profiler.collect_batch(points, stream.get(), {}, capacity);
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (c.size() != 3 || c[0].status != attnprof::core::CounterStatus::ok || !c[0].session) {
      std::printf("capacity %4zu ranges: counters %s: %s\n", capacity, c.empty() ? "missing" : std::string(attnprof::core::to_string(c[0].status)).c_str(),
                  c.empty() ? "" : c[0].reason.c_str());
      continue;
    }
    const auto& t = *c[0].session;
    const double passes = static_cast<double>(c[0].passes);
    std::printf("capacity %4zu ranges: %lld passes, %.0f ms; per pass: set-up %.1f ms, running %.1f ms, "
                "closing %.1f ms; evaluating %.1f ms\n",
                capacity, static_cast<long long>(c[0].passes), wall_ms, t.pass_setup_ms / passes, t.run_ms / passes,
                t.pass_close_ms / passes, t.evaluate_ms);
  }
  return 0;
}
