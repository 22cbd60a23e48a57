// Catch2's implementation for the GPU tests, compiled once for all of them: each GPU test file has its
// own main (it skips without a device before Catch runs: device_present) and calls run_session or
// run_catch here.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "gpu/gpu_test_support.hpp"
#include "kernels/common/device_query.hpp"

namespace attnprof::gpu_test {

bool device_present(const char* name) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return true;
  (void)cudaGetLastError();
  if (name != nullptr) std::printf("%s: no CUDA device, skipped\n", name);
  return false;
}

bool device_is_sm90() { return kernels::current_device_cc() == 90; }

int run_session(const char* name, int argc, char** argv, uint64_t& seed) {
  if (!device_present(name)) return 77;
  if (const char* fixed = std::getenv("ATTNPROF_TEST_SEED")) {
    seed = std::strtoull(fixed, nullptr, 10);
  } else {
    std::random_device entropy;
    seed = (static_cast<uint64_t>(entropy()) << 32) ^ entropy() ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  std::printf("%s: seed %llu (replay with ATTNPROF_TEST_SEED=%llu)\n", name, static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return run_catch(argc, argv);
}

int run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }

}  // namespace attnprof::gpu_test
