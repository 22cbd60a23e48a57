// measure/cuda/cuda_backend.cpp: the CUDA backend of device 0 describes that device, offers the CUDA
// kernels, measures a point end to end (verified, timed, with its occupancy), refuses a
// point that cannot fit before allocating, and a device that does not exist. A GPU test: exits 77
// without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "core/errors.hpp"
#include "gpu/gpu_test_support.hpp"
#include "measure/backend.hpp"
#include "measure/cuda/cuda_backend.hpp"
#include "measure/cuda/device.hpp"

namespace m = attnprof::measure;
using attnprof::core::DType;
using attnprof::core::Status;

namespace {
uint64_t g_seed = 0;

m::MeasureOptions quick() {
  m::MeasureOptions o;
  o.counters = false;  // CUPTI is tested on its own
  o.min_samples = 5;
  o.max_samples = 20;
  o.warmup_seconds = 0.05;
  o.min_seconds_per_point = 0.02;
  o.max_seconds_per_point = 0.2;
  o.seed = g_seed;
  return o;
}
}  // namespace

TEST_CASE("cuda backend: device 0 described, the CUDA kernels offered, another device refused") {
  auto backend = m::make_cuda_backend(0);
  CHECK(backend->kind() == attnprof::core::BackendKind::cuda);
  CHECK(backend->device_info().name == m::query_device(0).name);
  const auto kernels = backend->kernels();
  for (const char* name : {"reference", "fused"})
    CHECK(std::any_of(kernels.begin(), kernels.end(), [&](const auto* k) { return k->name() == name; }));
  CHECK_THROWS_AS(m::make_cuda_backend(m::cuda_device_count()), attnprof::EnvironmentError);
  CHECK_THROWS_AS(m::make_cuda_backend(-1), attnprof::EnvironmentError);
}

TEST_CASE("cuda backend: a point measured end to end, and a point too big for the device refused") {
  auto backend = m::make_cuda_backend(0);
  const auto* fused = attnprof::kernels::find(attnprof::kernels::Backend::cuda, "fused");
  REQUIRE(fused != nullptr);
  const auto s = attnprof::gpu_test::make_shape(2, 8, 2, 512, 512, 128, true, DType::bf16);
  const attnprof::core::Record r = backend->measure(s, *fused, quick());
  INFO(r.reason);
  CHECK(r.status == Status::ok);
  CHECK(r.verification.passed);
  CHECK(r.latency.p50_us > 0);
  CHECK(r.samples_us.size() >= 5);
  CHECK(r.tflops > 0);
  CHECK(r.occupancy.blocks_per_sm > 0);

  // 2^36 elements a tensor, 512 GiB for Q, K, V and O in bf16: refused as oom before any allocation.
  const auto huge = attnprof::gpu_test::make_shape(64, 64, 64, 1 << 17, 1 << 17, 128, false, DType::bf16);
  const attnprof::core::Record oom = backend->measure(huge, *fused, quick());
  CHECK(oom.status == Status::oom);
  CHECK_FALSE(oom.reason.empty());
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_cuda_backend", argc, argv, g_seed); }
