#include "kernels/cpu/probes.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/target_clones.hpp"

namespace attnprof::kernels::cpu {

namespace {

using Clock = std::chrono::steady_clock;

// Independent accumulator lanes per thread: 128 floats are 8 AVX-512 or 16 AVX2 registers, enough
// independent chains to cover FMA latency (4 cycles) times two FMA pipes on current x86 cores.
constexpr int kFmaLanes = 128;
constexpr int64_t kFmaInnerIterations = 1 << 14;

ATTNPROF_CPU_CLONES __attribute__((noinline))
float fma_chains(int64_t iterations, float a, float b) {
  float acc[kFmaLanes];
  for (int l = 0; l < kFmaLanes; ++l) acc[l] = static_cast<float>(l) * 1e-3f;
  for (int64_t it = 0; it < iterations; ++it)
    for (int l = 0; l < kFmaLanes; ++l) acc[l] = acc[l] * a + b;
  float sum = 0;
  for (int l = 0; l < kFmaLanes; ++l) sum += acc[l];
  return sum;
}

ATTNPROF_CPU_CLONES
void scale_copy(float* __restrict dst, const float* __restrict src, int64_t n, float a) {
  for (int64_t i = 0; i < n; ++i) dst[i] = a * src[i];
}

// One contiguous slice per thread, so each thread streams its own pages.
void for_each_slice(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  const int64_t threads = hardware_threads();
  parallel_for(n, (n + threads - 1) / threads, body);
}

}  // namespace

double stream_bytes_per_s(size_t buffer_bytes, int repeats) {
  const auto n = static_cast<int64_t>(buffer_bytes / sizeof(float));
  // Uninitialised allocations: the first touch below, from the threads that will stream the pages
  // (NUMA placement), is the only one; page faults are slow enough in some sandboxes to matter.
  const std::unique_ptr<float[]> src(new float[static_cast<size_t>(n)]);
  const std::unique_ptr<float[]> dst(new float[static_cast<size_t>(n)]);
  for_each_slice(n, [&](int64_t lo, int64_t hi) {
    std::fill(src.get() + lo, src.get() + hi, 1.0f);
    std::fill(dst.get() + lo, dst.get() + hi, 0.0f);
  });
  double best_s = 0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = Clock::now();
    for_each_slice(n, [&](int64_t lo, int64_t hi) { scale_copy(dst.get() + lo, src.get() + lo, hi - lo, 1.0001f);
    });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (best_s == 0 || s < best_s) best_s = s;
  }
  return 2.0 * static_cast<double>(n) * sizeof(float) / best_s;
}

double fma_flops_per_s(double seconds_per_run, int repeats) {
  // Calibrate the iteration count on one thread so a run lasts about seconds_per_run.
  int64_t iterations = kFmaInnerIterations;
  std::atomic<float> sink{0};
  for (;;) {
    const auto t0 = Clock::now();
    sink = sink + fma_chains(iterations, 0.9999f, 1e-4f);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= seconds_per_run / 4 || iterations > (int64_t{1} << 40)) {
      iterations = static_cast<int64_t>(static_cast<double>(iterations) * seconds_per_run / std::max(s, 1e-9));
      break;
    }
    iterations *= 4;
  }
  iterations = std::max<int64_t>(iterations, 1);
  const int threads = hardware_threads();
  double best = 0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = Clock::now();
    parallel_for(threads, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) sink = sink + fma_chains(iterations, 0.9999f, 1e-4f);
    });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    const double flops = 2.0 * kFmaLanes * static_cast<double>(iterations) * threads;
    best = std::max(best, flops / s);
  }
  return best;
}

void flush_caches(std::vector<float>& buffer) {
  for_each_slice(static_cast<int64_t>(buffer.size()), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) buffer[i] += 1.0f;
  });
}

}  // namespace attnprof::kernels::cpu
