// Shared fixtures of the measure tests (test_cpu_backend.cpp, test_point_lifecycle.cpp,
// test_ceilings_cache.cpp): a small bf16 shape, options that sample briefly, a private ceilings cache,
// and a CPU kernel that is wrong on purpose (it writes zeros, or nothing) and may refuse long key
// sequences. Never registered.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include <unistd.h>

#include "core/shape.hpp"
#include "kernels/registry.hpp"
#include "measure/backend.hpp"

namespace attnprof::measure_test {

inline core::Shape bf16_shape(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_k,
                              bool causal = false) {
  core::Shape s;
  s.batch = batch;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.seq_q = seq_q;
  s.seq_k = seq_k;
  s.hdim = 64;
  s.causal = causal;
  s.dtype = core::DType::bf16;
  return s;
}

// One untimed warm-up call, at least 5 samples, no minimum sampling time, a 1 s budget.
inline measure::MeasureOptions quick_options(int max_samples, uint64_t seed = 0) {
  measure::MeasureOptions o;
  o.warmup_calls = 1;
  o.warmup_seconds = 0;
  o.min_samples = 5;
  o.max_samples = max_samples;
  o.min_seconds_per_point = 0;
  o.max_seconds_per_point = 1;
  o.seed = seed;
  return o;
}

enum class Writes { zeros, nothing };

class WrongKernel : public kernels::Kernel {
 public:
  WrongKernel(std::string name, Writes writes, int64_t max_seq_k = int64_t{1} << 20)
      : name_(std::move(name)), writes_(writes), max_seq_k_(max_seq_k) {}
  std::string name() const override { return name_; }
  kernels::Backend backend() const override { return kernels::Backend::cpu; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override { return "test: wrong on purpose"; }
  std::string unsupported_reason(const core::Shape& s) const override {
    return s.seq_k > max_seq_k_ ? "seq_k above the test kernel's limit" : "";
  }
  size_t workspace_bytes(const core::Shape&) const override { return 0; }
  void launch(const kernels::AttentionArgs& a, kernels::StageHook*) const override {
    if (writes_ == Writes::nothing) return;
    std::fill_n(static_cast<float*>(a.o), a.shape.q_elems(), 0.0f);
    std::fill_n(a.lse, a.shape.lse_elems(), 0.0f);
  }

 private:
  std::string name_;
  Writes writes_;
  int64_t max_seq_k_;
};

// A private cache directory for this test process.
inline std::filesystem::path scratch_cache_dir() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("attnprof-test-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("ATTNPROF_CACHE_DIR", dir.c_str(), 1);
  return dir;
}

}  // namespace attnprof::measure_test
