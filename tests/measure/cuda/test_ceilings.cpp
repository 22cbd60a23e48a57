// measure/cuda/ceilings.cu: the ceiling probes give physically possible peaks on any current GPU (HBM
// between 100 GB/s and 20 TB/s, L2 above HBM, tensor cores above FP32 FMA, an empty launch between
// 0.1 and 100 us), each probe named. A GPU test: exits 77 without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include "core/roofline.hpp"
#include "gpu/gpu_test_support.hpp"
#include "measure/cuda/ceilings.hpp"

namespace {
uint64_t g_seed = 0;
}  // namespace

TEST_CASE("measure_ceilings: peaks in physical ranges, and in the order the hardware has them") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const attnprof::core::MeasuredCeilings c = attnprof::measure::measure_ceilings();
  INFO("HBM " << c.hbm_bytes_per_s << " B/s (" << c.hbm_probe << "), L2 " << c.l2_bytes_per_s << " B/s, bf16 mma "
              << c.mma_bf16.flops_per_s << ", fp32 fma " << c.fma_fp32.flops_per_s);
  CHECK(c.hbm_bytes_per_s > 1e11);
  CHECK(c.hbm_bytes_per_s < 2e13);
  CHECK_FALSE(c.hbm_probe.empty());
  CHECK(c.copy_bytes_per_s > 0);
  CHECK(c.copy_bytes_per_s <= c.hbm_bytes_per_s * 1.05);  // the best probe is at least the copy
  CHECK(c.l2_bytes_per_s > c.hbm_bytes_per_s);
  CHECK(c.fma_fp32.flops_per_s > 1e12);
  CHECK(c.mma_bf16.flops_per_s > c.fma_fp32.flops_per_s);
  CHECK(c.mma_fp16.flops_per_s > c.fma_fp32.flops_per_s);
  CHECK(c.launch_latency_us > 0.1);
  CHECK(c.launch_latency_us < 100);
}

TEST_CASE("measure_empty_launch_us: microseconds, not nanoseconds or milliseconds") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const double us = attnprof::measure::measure_empty_launch_us();
  CHECK(us > 0.1);
  CHECK(us < 100);
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_ceilings", argc, argv, g_seed); }
