// Shared by the GPU correctness tests: the validated shape they build, and the session their main runs,
// which skips without a device and picks the input seed (fresh per run and printed;
// ATTNPROF_TEST_SEED=<n> replays one).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/shape.hpp"

namespace attnprof::gpu_test {

inline core::Shape make_shape(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_k,
                              int64_t hdim, bool causal, core::DType dtype, int64_t page_size = 0,
                              int64_t kv_splits = 0, int64_t window = 0) {
  core::Shape s;
  s.batch = batch;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.seq_q = seq_q;
  s.seq_k = seq_k;
  s.hdim = hdim;
  s.causal = causal;
  s.dtype = dtype;
  s.page_size = page_size;
  s.kv_splits = kv_splits;
  s.window = window;
  core::imply_fp8_kv_format(s);  // dtype fp8_e4m3: its K and V format
  s.validate();
  return s;
}

// A packed variable-length batch of these lengths (core/shape.hpp), validated.
inline core::Shape make_packed(std::vector<int64_t> lens, int64_t heads, int64_t kv_heads, int64_t hdim, bool causal,
                               core::DType dtype, int64_t window = 0) {
  core::Shape s;
  s.batch = static_cast<int64_t>(lens.size());
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.seq_q = s.seq_k = *std::max_element(lens.begin(), lens.end());
  s.hdim = hdim;
  s.causal = causal;
  s.dtype = dtype;
  s.window = window;
  s.seq_lens = std::move(lens);
  s.lengths = "list:test";
  core::imply_fp8_kv_format(s);
  s.validate();
  return s;
}

// Whether a CUDA device is present; without one prints "<name>: no CUDA device, skipped" (nothing
// when name is null).
bool device_present(const char* name = nullptr);
// Whether the current device is an sm_90 GPU (H100, H200), where fused-sm90's sm_90a code runs.
bool device_is_sm90();
// Exits 77 (skipped) without a CUDA device; else sets `seed` and runs the Catch session
// (tests/gpu/gpu_test_main.cpp, Catch2's implementation, compiled once for every GPU test).
int run_session(const char* name, int argc, char** argv, uint64_t& seed);
// The Catch session on these arguments, device or not.
int run_catch(int argc, char** argv);

}  // namespace attnprof::gpu_test
