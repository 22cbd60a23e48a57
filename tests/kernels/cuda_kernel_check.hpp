// Shared by the GPU tests of kernels/ (one executable per CUDA source, each skipping with exit 77
// without a device): a registered CUDA kernel by name, and one call on fresh inputs, checked against
// float64 by the testbed (kernels/common/testbed.hpp).
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/shape.hpp"
#include "gpu/gpu_test_support.hpp"
#include "kernels/common/testbed.hpp"
#include "kernels/registry.hpp"

namespace attnprof::gpu_test {

inline constexpr int kRowsChecked = 96;

inline const kernels::Kernel& cuda_kernel(const char* name) {
  const kernels::Kernel* k = kernels::find(kernels::Backend::cuda, name);
  REQUIRE(k != nullptr);
  return *k;
}

// One call of `kernel` on `s` with inputs from `seed`, its outputs poisoned first; the testbed's check.
inline core::Verification run_checked(const kernels::Kernel& kernel, const core::Shape& s, uint64_t seed) {
  INFO(kernel.name() << " " << s.label() << " seed " << seed);
  REQUIRE(kernels::support_reason(kernel, s).empty());
  kernels::CudaProblem problem(s, kernel);
  problem.fill_inputs(seed, nullptr);
  problem.poison_outputs(nullptr);
  kernel.launch(problem.args(nullptr));
  return problem.verify(seed, kRowsChecked, nullptr);
}

// Checks one call: compared with float64, every output element written, within tolerance.
inline void check_matches_float64(const kernels::Kernel& kernel, const core::Shape& s, uint64_t seed) {
  const core::Verification v = run_checked(kernel, s, seed);
  INFO(kernel.name() << " " << s.label() << ": O max err " << v.o_max_abs_err << " (tolerance " << v.tolerance
                     << "), LSE max err " << v.lse_max_abs_err << ", unwritten " << v.unwritten);
  CHECK(v.checked);
  CHECK(v.rows_checked > 0);
  CHECK(v.unwritten == 0);
  CHECK(v.passed);
}

// An environment variable set for the duration of a scope (the kernels' tile and schedule knobs).
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace attnprof::gpu_test
