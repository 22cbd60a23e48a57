// GPU correctness of the CUDA kernels ("reference", "fused" with every tile variant at every head dim
// it exists at, and "fused-sm90" with every schedule on sm_90 devices; the reference also at a value
// head dim of its own) against the
// float64 reference with the 2x-naive rule, on ragged, GQA and causal shapes, with outputs poisoned
// before every call; plus the checks that make the verification itself able to fail.
// Exits 77 (skipped) when no CUDA device is present. Seed: fresh per run and printed;
// ATTNPROF_TEST_SEED=<n> replays one.
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/shape.hpp"
#include "gpu_test_support.hpp"
#include "kernels/common/testbed.hpp"
#include "kernels/fused_auto.hpp"
#include "kernels/registry.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::Shape;
using attnprof::core::Verification;
namespace kernels = attnprof::kernels;
using attnprof::gpu_test::device_is_sm90;
using attnprof::gpu_test::make_packed;
using attnprof::gpu_test::make_shape;

uint64_t g_seed = 0;
constexpr int kMaxRowsChecked = 96;

// Ragged lengths (1, 17, 2050, 4097: no tile size divides them), GQA (kv_heads 1 and 2), odd batch
// and head counts, and seq_k != seq_q both ways (with a causal mask: rows that see no key at all).
std::vector<Shape> shapes_for(int64_t hdim, bool causal, DType dtype) {
  return {
      make_shape(1, 1, 1, 1, 1, hdim, causal, dtype),
      make_shape(2, 2, 1, 17, 17, hdim, causal, dtype),
      make_shape(1, 2, 2, 1000, 1000, hdim, causal, dtype),
      make_shape(1, 2, 1, 2050, 2050, hdim, causal, dtype),
      make_shape(1, 1, 1, 4097, 4097, hdim, causal, dtype),
      make_shape(3, 7, 1, 130, 130, hdim, causal, dtype),
      make_shape(2, 4, 2, 100, 333, hdim, causal, dtype),   // seq_k > seq_q
      make_shape(2, 4, 2, 333, 100, hdim, causal, dtype),   // seq_k < seq_q: causal rows see nothing
      make_shape(1, 2, 1, 17, 4097, hdim, causal, dtype),
      make_shape(1, 2, 2, 4097, 1, hdim, causal, dtype),
  };
}

Verification run_case(const kernels::Kernel& kernel, const Shape& s, uint64_t seed, int q_scale_log2) {
  kernels::CudaProblem problem(s, kernel.workspace_bytes(s), q_scale_log2);
  problem.fill_inputs(seed, nullptr);
  problem.poison_outputs(nullptr);
  kernel.launch(problem.args(nullptr));
  return problem.verify(seed, kMaxRowsChecked, nullptr);
}

// The cases one kernel has run in a test, and how many failed.
struct CaseTally {
  const char* kernel_name;
  int cases = 0, failures = 0;
};

// Runs one case on fresh inputs from `seed`, prints its line and counts it, and checks it: compared with
// the float64 reference on at least min_rows rows, every output element written (all are poisoned before
// the call), within tolerance.
void check_case(CaseTally& tally, const kernels::Kernel& kernel, const Shape& s, uint64_t seed, int q_scale_log2 = 0,
                int64_t min_rows = 1) {
  const Verification v = run_case(kernel, s, seed, q_scale_log2);
  ++tally.cases;
  tally.failures += v.passed ? 0 : 1;
  std::printf("%-10s q x%-3d %-60s seed %llu  O max err %.3g (tol %.3g, naive %.3g)  LSE max err %.3g  rows %lld  "
              "unwritten %lld  %s\n",
              tally.kernel_name, 1 << q_scale_log2, s.label().c_str(), static_cast<unsigned long long>(seed),
              v.o_max_abs_err, v.tolerance, v.naive_o_max_abs_err, v.lse_max_abs_err,
              static_cast<long long>(v.rows_checked), static_cast<long long>(v.unwritten), v.passed ? "ok" : "FAILED");
  INFO(tally.kernel_name << " " << s.label() << " seed " << seed << " q scale 2^" << q_scale_log2);
  CHECK(v.checked);
  CHECK(v.rows_checked >= min_rows);
  CHECK(v.unwritten == 0);
  CHECK(v.passed);
}

// More work tiles than an H200 has SMs (132), so that every CTA of a persistent grid runs several,
// some of them (causal, seq_k < seq_q) with no visible key.
std::vector<Shape> many_tile_shapes(int64_t hdim, bool causal, DType dtype) {
  return {
      make_shape(4, 16, 4, 1000, 1000, hdim, causal, dtype),
      make_shape(3, 20, 5, 300, 777, hdim, causal, dtype),
      make_shape(2, 40, 8, 600, 257, hdim, causal, dtype),
  };
}

// q_scale_log2 > 0 widens the scores (Q times 2^q_scale_log2): rows' maxima then keep growing from key
// tile to key tile, past the fused kernels' lazy-max threshold, so their rescaling runs.
// Every head dim the fused kernels run (fused-sm90 runs 32 and 96 on wider tiles, zero-filled).
constexpr int64_t kAllHdims[] = {32, 64, 96, 128, 192, 256};
constexpr int64_t kHdims64And128[] = {64, 128};
constexpr int64_t kHdims192And256[] = {192, 256};
constexpr int64_t kHdimsWholeLines[] = {64, 128, 192, 256};
// fused's tile variants other than fast, and the head dims each exists at (core/tiles/fused_tiles.hpp).
struct FusedVariantHdims {
  const char* variant;
  std::span<const int64_t> hdims;
};
const FusedVariantHdims kFusedAlternatives[] = {
    {"small", kHdims64And128}, {"warps8", kHdims64And128}, {"m64n32", kHdims192And256}, {"m64n64", kHdims192And256},
    {"padded", kHdimsWholeLines}, {"m64n64sw", kHdims192And256}};

void check_all_shapes(const char* kernel_name, bool many_tiles = false, int q_scale_log2 = 0,
                      std::span<const int64_t> hdims = kAllHdims) {
  const kernels::Kernel* kernel = kernels::find(kernels::Backend::cuda, kernel_name);
  REQUIRE(kernel != nullptr);
  CaseTally tally{kernel_name};
  for (DType dtype : {DType::fp16, DType::bf16})
    for (int64_t hdim : hdims)
      for (bool causal : {false, true}) {
        std::vector<Shape> shapes = shapes_for(hdim, causal, dtype);
        if (many_tiles) {
          const std::vector<Shape> more = many_tile_shapes(hdim, causal, dtype);
          shapes.insert(shapes.end(), more.begin(), more.end());
        }
        for (const Shape& s : shapes) {
          REQUIRE(kernel->unsupported_reason(s).empty());
          check_case(tally, *kernel, s, g_seed + static_cast<uint64_t>(tally.cases), q_scale_log2);
        }
      }
  std::printf("%s: %d cases, %d failed\n", kernel_name, tally.cases, tally.failures);
}

struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("reference kernel matches float64 on ragged, GQA and causal shapes") {
  check_all_shapes("reference");
}

TEST_CASE("fused kernel (default tiles) matches float64 on ragged, GQA and causal shapes") {
  ScopedEnv env("ATTNPROF_FUSED_CONFIG", "fast");
  check_all_shapes("fused");
}

// Scores 8x wider than the default inputs: a row's max moves by more than the lazy threshold after its
// first key tiles (tests/kernels/common/test_verify.cpp checks that these inputs do that), so the rescale of
// the accumulated O and row sum runs at many tiles instead of only at a row's first visible one.
TEST_CASE("fused kernels match float64 when the row max keeps growing (Q x 8)") {
  constexpr int kWide = 3;
  {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", "fast");
    check_all_shapes("fused", false, kWide);
  }
  for (const FusedVariantHdims& a : kFusedAlternatives) {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", a.variant);
    check_all_shapes("fused", false, kWide, a.hdims);
  }
  check_all_shapes("reference", false, kWide);
}

TEST_CASE("fused kernel, small tiles, matches float64") {
  ScopedEnv env("ATTNPROF_FUSED_CONFIG", "small");
  check_all_shapes("fused", false, 0, kHdims64And128);
}

TEST_CASE("fused kernel, 8-warp tiles, matches float64") {
  ScopedEnv env("ATTNPROF_FUSED_CONFIG", "warps8");
  check_all_shapes("fused", false, 0, kHdims64And128);
}

// Two 64-row CTAs per SM at hdim 192 and 256: m64n32 (double-buffered 32-key tiles) and m64n64 (one K
// and one V buffer, two barriers per key tile, tail rows zeroed by shared-memory stores). The many-tile
// shapes put more CTAs in flight than the SMs hold, so CTAs of different (batch, head)s share an SM.
TEST_CASE("fused kernel, 64-row tiles at hdim 192 and 256 (m64n32, m64n64), matches float64") {
  for (const char* variant : {"m64n32", "m64n64"}) {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", variant);
    check_all_shapes("fused", true, 0, kHdims192And256);
  }
}

// fast's tiles on padded rows where fast swizzles them (hdim 64-256), and m64n64's tile on swizzled rows
// at 192 and 256 (tails zeroed by stores into swizzled rows).
TEST_CASE("fused kernel, the other shared-memory rows (padded, m64n64sw), matches float64") {
  {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", "padded");
    check_all_shapes("fused", true, 0, kHdimsWholeLines);
  }
  ScopedEnv env("ATTNPROF_FUSED_CONFIG", "m64n64sw");
  check_all_shapes("fused", true, 0, kHdims192And256);
}

// fused-sm90 runs only on sm_90 (its code is sm_90a; device_is_sm90); elsewhere it must say so for
// every shape.
void check_sm90_shapes() {
  if (device_is_sm90()) {
    check_all_shapes("fused-sm90", true);
    return;
  }
  const kernels::Kernel* kernel = kernels::find(kernels::Backend::cuda, "fused-sm90");
  REQUIRE(kernel != nullptr);
  const std::string why = kernel->unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::bf16));
  std::printf("fused-sm90: not an sm_90 device: '%s'\n", why.c_str());
  CHECK_FALSE(why.empty());
}

TEST_CASE("fused-sm90 kernel (overlapped schedule) matches float64 on ragged, GQA and causal shapes") {
  ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", "overlap");
  check_sm90_shapes();
}

TEST_CASE("fused-sm90 kernel, pingpong schedule, matches float64") {
  ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", "pingpong");
  check_sm90_shapes();
}

TEST_CASE("fused-sm90 kernel, serial schedule, matches float64") {
  ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", "serial");
  check_sm90_shapes();
}

TEST_CASE("fused-sm90 matches float64 when the row max keeps growing (Q x 8)") {
  if (!device_is_sm90()) return;  // the refusal elsewhere is checked above
  for (const char* schedule : {"overlap", "pingpong", "serial"}) {
    ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", schedule);
    check_all_shapes("fused-sm90", true, 3);
  }
}

// fp8 prefill (dtype fp8_e4m3, hdim 128 and 256): every schedule over the ragged, GQA and causal cases
// and the many-tile ones, each against float64 of the dequantized Q, K and V within verify's fp8 bound
// (P rounded to E4M3 before P V), with O poisoned; two launches per call (V^T, then attention).
TEST_CASE("fused-sm90 fp8 prefill matches float64 of the dequantized inputs, every schedule") {
  const kernels::Kernel* sm90 = kernels::find(kernels::Backend::cuda, "fused-sm90");
  REQUIRE(sm90 != nullptr);
  REQUIRE(sm90->runs_fp8());
  if (!device_is_sm90()) return;  // the refusal elsewhere is checked above
  const Shape probe = make_shape(1, 2, 1, 300, 300, 128, false, DType::fp8_e4m3);
  CHECK(sm90->stage_names(probe) == std::vector<std::string>{"v_transpose", "attention"});
  CHECK(sm90->launch_info(probe).size() == 2);
  CHECK(sm90->workspace_bytes(probe) == static_cast<size_t>(1 * 1 * 128 * 384));
  for (const char* schedule : {"overlap", "pingpong", "serial"}) {
    ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", schedule);
    CaseTally tally{"fused-sm90"};
    for (int64_t hdim : {128, 256})
      for (bool causal : {false, true}) {
        std::vector<Shape> shapes = shapes_for(hdim, causal, DType::fp8_e4m3);
        const std::vector<Shape> more = many_tile_shapes(hdim, causal, DType::fp8_e4m3);
        shapes.insert(shapes.end(), more.begin(), more.end());
        for (const Shape& s : shapes) {
          REQUIRE(kernels::support_reason(*sm90, s).empty());
          check_case(tally, *sm90, s, g_seed + static_cast<uint64_t>(tally.cases));
        }
      }
    std::printf("fused-sm90 fp8 %s: %d cases, %d failed\n", schedule, tally.cases, tally.failures);
  }
  // Sliding windows on fp8 too (the masks are the 16-bit path's).
  CaseTally tally{"fused-sm90"};
  for (int64_t window : {1, 100, 777})
    check_case(tally, *sm90, make_shape(2, 4, 2, 1000, 1000, 128, true, DType::fp8_e4m3, 0, 0, window),
               g_seed + 1000 + static_cast<uint64_t>(window));
  // What fp8 does not run: other head dims, packed batches.
  CHECK_FALSE(kernels::support_reason(*sm90, make_shape(1, 2, 2, 64, 64, 64, false, DType::fp8_e4m3)).empty());
  CHECK_FALSE(kernels::support_reason(*sm90, make_shape(1, 2, 2, 64, 64, 192, false, DType::fp8_e4m3)).empty());
  CHECK_FALSE(kernels::support_reason(*sm90, make_packed({100, 300}, 2, 2, 128, false, DType::fp8_e4m3)).empty());
}

TEST_CASE("fused-auto runs fused-sm90 on sm_90 and fused elsewhere, and matches float64") {
  const kernels::Kernel* autok = kernels::find(kernels::Backend::cuda, "fused-auto");
  REQUIRE(autok != nullptr);
  const Shape s = make_shape(2, 4, 2, 300, 300, 128, true, DType::bf16);
  REQUIRE(autok->launch_info(s).size() == 1);
  const std::string launched = autok->launch_info(s)[0].kernel_name;
  std::printf("fused-auto on this device launches %s\n", launched.c_str());
  CHECK(launched.rfind(device_is_sm90() ? "fused_sm90_kernel<" : "fused_attention_kernel<", 0) == 0);
  // The shape the default schedule refuses is not forced onto fused-sm90: an invalid schedule
  // setting sends every shape to the portable kernel.
  {
    ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", "no-such-schedule");
    REQUIRE(autok->launch_info(s).size() == 1);
    CHECK(autok->launch_info(s)[0].kernel_name.rfind("fused_attention_kernel<", 0) == 0);
  }
  check_all_shapes("fused-auto");
}

TEST_CASE("fused-sm90 refuses what it cannot run") {
  const kernels::Kernel* sm90 = kernels::find(kernels::Backend::cuda, "fused-sm90");
  REQUIRE(sm90 != nullptr);
  CHECK_FALSE(sm90->unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::fp32)).empty());
  CHECK_FALSE(sm90->unsupported_reason(make_shape(1, 2, 2, 64, 64, 80, false, DType::bf16)).empty());
  CHECK_FALSE(sm90->unsupported_reason(make_shape(1, 2, 2, 64, 64, 512, false, DType::fp16)).empty());
  {
    ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", "nonsense");
    CHECK_FALSE(sm90->unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::bf16)).empty());
  }
  const Shape bad = make_shape(1, 1, 1, 16, 16, 80, false, DType::bf16);
  kernels::CudaProblem problem(bad, 0);
  CHECK_THROWS(sm90->launch(problem.args(nullptr)));
}

TEST_CASE("fused-sm90 grid: persistent, except where a causal round robin would be unbalanced") {
  if (!device_is_sm90()) return;
  const kernels::Kernel* sm90 = kernels::find(kernels::Backend::cuda, "fused-sm90");
  REQUIRE(sm90 != nullptr);
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  auto grid_of = [&](const Shape& s) {
    const auto info = sm90->launch_info(s);
    REQUIRE(info.size() == 1);
    CHECK(info[0].block_threads == 384);
    return info[0].grid_blocks;
  };
  // 128 query blocks per head, 16 heads: 2048 work tiles.
  CHECK(grid_of(make_shape(1, 16, 16, 16384, 16384, 128, false, DType::bf16)) == sms);
  CHECK(grid_of(make_shape(2, 16, 16, 8192, 8192, 128, true, DType::bf16)) == sms);
  CHECK(grid_of(make_shape(1, 2, 2, 300, 300, 64, true, DType::fp16)) == 6);
  // On a 132-SM H100/H200 the causal round robin would give some CTAs only the heaviest tiles.
  if (sms == 132) CHECK(grid_of(make_shape(1, 16, 16, 16384, 16384, 128, true, DType::bf16)) == 2048);
}

TEST_CASE("unsupported shapes give a reason instead of a wrong answer") {
  const kernels::Kernel* fused = kernels::find(kernels::Backend::cuda, "fused");
  const kernels::Kernel* reference = kernels::find(kernels::Backend::cuda, "reference");
  REQUIRE(fused != nullptr);
  REQUIRE(reference != nullptr);
  CHECK_FALSE(fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::fp32)).empty());
  CHECK_FALSE(fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 80, false, DType::bf16)).empty());
  CHECK_FALSE(fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 512, false, DType::fp16)).empty());
  {  // the comparison tile variants exist at hdim 64 and 128 only
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", "small");
    CHECK_FALSE(fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 256, false, DType::bf16)).empty());
    CHECK(fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 128, false, DType::bf16)).empty());
  }
  for (const char* variant : {"m64n32", "m64n64"}) {  // and the 64-row ones at hdim 192 and 256 only
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", variant);
    const std::string why = fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 128, false, DType::bf16));
    CHECK(why.find("192 and 256") != std::string::npos);
    CHECK(fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 192, false, DType::bf16)).empty());
    CHECK(fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 256, true, DType::fp16)).empty());
  }
  CHECK_FALSE(reference->unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::fp32)).empty());
  {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", "nonsense");
    CHECK_FALSE(fused->unsupported_reason(make_shape(1, 2, 2, 64, 64, 64, false, DType::bf16)).empty());
  }
  // Launching an unsupported shape throws rather than computing something wrong.
  const Shape bad = make_shape(1, 1, 1, 16, 16, 80, false, DType::bf16);
  kernels::CudaProblem problem(bad, 0);
  CHECK_THROWS(fused->launch(problem.args(nullptr)));
}

TEST_CASE("verification catches a kernel that wrote nothing and one that computed the wrong thing") {
  const kernels::Kernel* fused = kernels::find(kernels::Backend::cuda, "fused");
  REQUIRE(fused != nullptr);
  const Shape s = make_shape(2, 4, 2, 300, 300, 64, true, DType::bf16);

  // O and LSE poisoned, no launch: everything is unwritten.
  kernels::CudaProblem skipped(s, 0);
  skipped.fill_inputs(g_seed, nullptr);
  skipped.poison_outputs(nullptr);
  const Verification not_run = skipped.verify(g_seed, kMaxRowsChecked, nullptr);
  CHECK_FALSE(not_run.passed);
  CHECK(not_run.unwritten == s.q_elems() + s.lse_elems());

  // A correct launch on other inputs: fully written, but wrong against the checked seed.
  kernels::CudaProblem wrong(s, 0);
  wrong.fill_inputs(g_seed + 1, nullptr);
  wrong.poison_outputs(nullptr);
  fused->launch(wrong.args(nullptr));
  const Verification mismatch = wrong.verify(g_seed, kMaxRowsChecked, nullptr);
  CHECK(mismatch.unwritten == 0);
  CHECK_FALSE(mismatch.passed);
}

// Sliding windows (core/shape.hpp): window 1 (the diagonal), windows that do and do not divide the
// key tiles, seq_k != seq_q both ways (without the causal mask, rows before every window see no key),
// a window as wide as seq_k, and (many_tiles) more work tiles than SMs.
std::vector<Shape> window_shapes(int64_t hdim, bool causal, DType dtype, bool many_tiles) {
  std::vector<Shape> out = {
      make_shape(1, 2, 1, 17, 17, hdim, causal, dtype, 0, 0, 1),
      make_shape(2, 4, 2, 1000, 1000, hdim, causal, dtype, 0, 0, 256),
      make_shape(1, 2, 2, 2050, 2050, hdim, causal, dtype, 0, 0, 1000),
      make_shape(2, 3, 1, 333, 100, hdim, causal, dtype, 0, 0, 7),
      make_shape(1, 2, 1, 100, 4097, hdim, causal, dtype, 0, 0, 129),
      make_shape(1, 1, 1, 4097, 4097, hdim, causal, dtype, 0, 0, 4097),
      make_shape(1, 2, 2, 1, 3000, hdim, causal, dtype, 0, 0, 333),
  };
  if (many_tiles) {
    out.push_back(make_shape(4, 16, 4, 1000, 1000, hdim, causal, dtype, 0, 0, 300));
    out.push_back(make_shape(3, 20, 5, 300, 777, hdim, causal, dtype, 0, 0, 64));
  }
  return out;
}

void check_window_shapes(const char* kernel_name, bool many_tiles = false,
                         std::span<const int64_t> hdims = kHdims64And128) {
  const kernels::Kernel* kernel = kernels::find(kernels::Backend::cuda, kernel_name);
  REQUIRE(kernel != nullptr);
  CaseTally tally{kernel_name};
  for (DType dtype : {DType::fp16, DType::bf16})
    for (int64_t hdim : hdims)
      for (bool causal : {false, true})
        for (const Shape& s : window_shapes(hdim, causal, dtype, many_tiles)) {
          REQUIRE(kernels::support_reason(*kernel, s).empty());
          check_case(tally, *kernel, s, g_seed + 1000 + static_cast<uint64_t>(tally.cases));
        }
  std::printf("%s with windows: %d cases, %d failed\n", kernel_name, tally.cases, tally.failures);
}

TEST_CASE("sliding window: reference and fused (every tile variant) match float64") {
  check_window_shapes("reference");
  {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", "fast");
    check_window_shapes("fused");
  }
  for (const FusedVariantHdims& a : kFusedAlternatives) {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", a.variant);
    check_window_shapes("fused", false, a.hdims);
  }
  check_window_shapes("fused-auto");
}

TEST_CASE("sliding window: fused-sm90 matches float64 with every schedule") {
  if (!device_is_sm90()) return;  // the refusal elsewhere is checked above
  for (const char* schedule : {"overlap", "pingpong", "serial"}) {
    ScopedEnv env("ATTNPROF_FUSED_SM90_CONFIG", schedule);
    check_window_shapes("fused-sm90", true);
  }
}

TEST_CASE("sliding window: a kernel that ignored the window would fail verification") {
  // The fused kernel's output for full attention, checked as the windowed shape, must not pass.
  const kernels::Kernel* fused = kernels::find(kernels::Backend::cuda, "fused");
  REQUIRE(fused != nullptr);
  const Shape full = make_shape(1, 4, 2, 500, 500, 64, true, DType::bf16);
  Shape windowed = full;
  windowed.window = 100;
  kernels::CudaProblem problem(windowed, 0);
  problem.fill_inputs(g_seed, nullptr);
  problem.poison_outputs(nullptr);
  kernels::AttentionArgs args = problem.args(nullptr);
  args.shape = full;
  fused->launch(args);
  CHECK_FALSE(problem.verify(g_seed, kMaxRowsChecked, nullptr).passed);
}

// Packed variable-length batches (core/shape.hpp): odd lengths that no tile divides, length-1
// sequences, a sequence far longer than the rest (most CTAs of the max-length grid exit at once), GQA,
// a window; the check samples every sequence and counts unwritten elements over the whole packed O.
std::vector<Shape> varlen_shapes(int64_t hdim, bool causal, DType dtype) {
  return {
      make_packed({1}, 1, 1, hdim, causal, dtype),
      make_packed({1, 17, 1, 130}, 2, 1, hdim, causal, dtype),
      make_packed({1000, 3, 2050, 64, 777}, 4, 2, hdim, causal, dtype),
      make_packed({4097, 1, 5, 129, 1, 300, 2}, 3, 3, hdim, causal, dtype),
      make_packed({333, 1000, 17}, 4, 2, hdim, causal, dtype, 100),
      make_packed({513, 512, 511, 1, 1024}, 2, 1, hdim, causal, dtype, 1),
  };
}

void check_varlen_shapes(const char* kernel_name, std::span<const int64_t> hdims) {
  const kernels::Kernel* kernel = kernels::find(kernels::Backend::cuda, kernel_name);
  REQUIRE(kernel != nullptr);
  CaseTally tally{kernel_name};
  for (DType dtype : {DType::fp16, DType::bf16})
    for (int64_t hdim : hdims)
      for (bool causal : {false, true})
        for (const Shape& s : varlen_shapes(hdim, causal, dtype)) {
          REQUIRE(kernels::support_reason(*kernel, s).empty());
          // Every sequence sampled: at least two rows of each, or all rows.
          check_case(tally, *kernel, s, g_seed + 2000 + static_cast<uint64_t>(tally.cases), 0,
                     std::min<int64_t>(2 * s.batch, s.lse_elems()));
        }
  std::printf("%s on packed batches: %d cases, %d failed\n", kernel_name, tally.cases, tally.failures);
}

TEST_CASE("varlen: reference and fused (every tile variant) match float64 on packed batches") {
  check_varlen_shapes("reference", kHdims64And128);
  {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", "fast");
    check_varlen_shapes("fused", kAllHdims);
  }
  for (const FusedVariantHdims& a : kFusedAlternatives) {
    ScopedEnv env("ATTNPROF_FUSED_CONFIG", a.variant);
    check_varlen_shapes("fused", a.hdims);
  }
}

TEST_CASE("varlen: fused-auto picks fused; fused-sm90 and decode refuse with a reason") {
  const Shape s = make_packed({100, 7, 300}, 4, 2, 128, true, DType::bf16);
  const auto* automatic = dynamic_cast<const kernels::FusedAutoKernel*>(kernels::find(kernels::Backend::cuda, "fused-auto"));
  REQUIRE(automatic != nullptr);
  REQUIRE(automatic->choose(s) != nullptr);
  CHECK(automatic->choose(s)->name() == "fused");
  const Verification v = run_case(*automatic, s, g_seed + 3000, 0);
  CHECK(v.passed);
  for (const char* name : {"fused-sm90", "decode"}) {
    const kernels::Kernel* k = kernels::find(kernels::Backend::cuda, name);
    if (k == nullptr) continue;
    const std::string why = kernels::support_reason(*k, s);
    INFO(name << ": " << why);
    CHECK_FALSE(why.empty());
  }
  if (const kernels::Kernel* sm90 = kernels::find(kernels::Backend::cuda, "fused-sm90"); sm90 && device_is_sm90())
    CHECK(kernels::support_reason(*sm90, s).find("TMA") != std::string::npos);
}

TEST_CASE("varlen: a kernel that read the packed batch as dense would fail verification") {
  // fused run on the padded dense shape over the packed buffers, checked as the packed batch.
  const kernels::Kernel* fused = kernels::find(kernels::Backend::cuda, "fused");
  REQUIRE(fused != nullptr);
  const Shape s = make_packed({300, 200, 100}, 2, 2, 64, true, DType::bf16);
  kernels::CudaProblem problem(s, 0);
  problem.fill_inputs(g_seed, nullptr);
  problem.poison_outputs(nullptr);
  kernels::AttentionArgs args = problem.args(nullptr);
  args.shape = make_shape(1, 2, 2, 600, 600, 64, true, DType::bf16);  // the same 600 tokens, one sequence
  args.cu_seqlens = nullptr;
  fused->launch(args);
  CHECK_FALSE(problem.verify(g_seed, kMaxRowsChecked, nullptr).passed);
}

// A value head dim of its own (core/shape.hpp: V and O hdim_v wide): the shapes of every other case
// at that width, plus paged K/V (V's pages hdim_v wide), a sliding window and a packed batch.
Shape with_hdim_v(Shape s, int64_t hdim_v) {
  s.hdim_v = hdim_v;
  s.validate();
  return s;
}

std::vector<Shape> hdim_v_shapes(int64_t hdim, int64_t hdim_v, bool causal, DType dtype) {
  std::vector<Shape> out;
  for (const Shape& s : shapes_for(hdim, causal, dtype)) out.push_back(with_hdim_v(s, hdim_v));
  out.push_back(with_hdim_v(make_shape(1, 16, 16, 4096, 4096, hdim, causal, dtype), hdim_v));  // MLA prefill, TP8
  out.push_back(with_hdim_v(make_shape(3, 8, 2, 1, 3001, hdim, causal, dtype, 16), hdim_v));   // paged decode
  out.push_back(with_hdim_v(make_shape(2, 4, 4, 5, 700, hdim, causal, dtype, 64), hdim_v));    // paged, 5 rows
  out.push_back(with_hdim_v(make_shape(2, 4, 2, 1000, 1000, hdim, causal, dtype, 0, 0, 129), hdim_v));
  out.push_back(with_hdim_v(make_packed({100, 7, 1300}, 4, 2, hdim, causal, dtype), hdim_v));
  return out;
}

TEST_CASE("hdim_v: the reference kernel matches float64 at hdim 192 / hdim_v 128 and 64 / 128") {
  const kernels::Kernel* reference = kernels::find(kernels::Backend::cuda, "reference");
  REQUIRE(reference != nullptr);
  REQUIRE(reference->runs_distinct_hdim_v());
  CaseTally tally{"reference"};
  constexpr std::pair<int64_t, int64_t> kDims[] = {{192, 128}, {64, 128}, {128, 64}};  // (hdim, hdim_v)
  for (const auto& [hdim, hdim_v] : kDims)
    for (DType dtype : {DType::fp16, DType::bf16})
      for (bool causal : {false, true})
        for (const Shape& s : hdim_v_shapes(hdim, hdim_v, causal, dtype)) {
          REQUIRE(kernels::support_reason(*reference, s).empty());
          // Unwritten counts every element of the hdim_v-wide O.
          check_case(tally, *reference, s, g_seed + 4000 + static_cast<uint64_t>(tally.cases));
        }
  std::printf("reference with hdim_v: %d cases, %d failed\n", tally.cases, tally.failures);
}

TEST_CASE("hdim_v: fused, fused-sm90, decode and fused-auto refuse with a reason; ignoring hdim_v fails verification") {
  const Shape s = with_hdim_v(make_shape(1, 16, 16, 4096, 4096, 192, true, DType::bf16), 128);
  for (const char* name : {"fused", "fused-sm90", "decode", "fused-auto"}) {
    const kernels::Kernel* k = kernels::find(kernels::Backend::cuda, name);
    REQUIRE(k != nullptr);
    const std::string why = kernels::support_reason(*k, s);
    INFO(name << ": " << why);
    CHECK(why.find("value head dim 128 differs from the query/key head dim 192") != std::string::npos);
  }
  // The reference run as if V were as wide as K, over buffers of a wider V: half of each O row stays
  // poisoned and the other half is a wrong mix of V's columns.
  const kernels::Kernel* reference = kernels::find(kernels::Backend::cuda, "reference");
  REQUIRE(reference != nullptr);
  const Shape wide = with_hdim_v(make_shape(2, 4, 2, 300, 300, 64, true, DType::bf16), 128);
  Shape as_if_equal = wide;
  as_if_equal.hdim_v = 0;
  kernels::CudaProblem problem(wide, reference->workspace_bytes(wide));
  problem.fill_inputs(g_seed, nullptr);
  problem.poison_outputs(nullptr);
  kernels::AttentionArgs args = problem.args(nullptr);
  args.shape = as_if_equal;
  reference->launch(args);
  const Verification v = problem.verify(g_seed, kMaxRowsChecked, nullptr);
  CHECK(v.unwritten > 0);
  CHECK_FALSE(v.passed);
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_gpu_kernels", argc, argv, g_seed); }
