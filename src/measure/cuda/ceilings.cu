#include "measure/cuda/ceilings.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "core/stats.hpp"
#include "measure/clock_stamps.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/probe_kernels.hpp"
#include "measure/cuda/timer.hpp"

namespace attnprof::measure {

namespace {

constexpr size_t kGiB = size_t{1} << 30;
constexpr size_t kHbmBufferBytes[] = {kGiB, 2 * kGiB};  // far beyond any L2
constexpr int kRepetitions = 10;
constexpr int kMmaIterations = 8192;
constexpr double kFlopsPerMmaFp8 = 2.0 * 16 * 8 * 32;  // m16n8k32, per warp
constexpr int kGemmN = 8192;                             // the GEMM probes' M = N = K
constexpr size_t kScaleSlotBytes = 256;  // one fp8 GEMM scale per slot
constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;  // cuBLASLt's workspace (its Hopper kernels want 32 MiB)
constexpr int kFmaIterations = 16384;
constexpr int kL2Passes = 64;
constexpr int kLaunchLatencyLaunches = 200;  // fewer than a stream queues before cudaLaunchKernel blocks
constexpr int kLaunchLatencyRepetitions = 9;

// Blocks per SM and threads per block of the streaming probes: the grid shape that saturates HBM
// depends on the access, so each probe tries all three.
struct GridShape {
  int blocks_per_sm, threads;
};
constexpr GridShape kGridShapes[] = {{2, 1024}, {4, 512}, {8, 256}};
// Blocks per SM and chunk size of the bulk-copy read (kBulkStages chunks of shared memory per block).
struct BulkShape {
  int blocks_per_sm;
  uint32_t chunk_bytes;
};
constexpr BulkShape kBulkShapes[] = {{1, 32 * 1024}, {2, 16 * 1024}, {4, 8 * 1024}, {8, 4 * 1024}};

// The current device's compute capability as major x 10 + minor (90 on Hopper).
int compute_capability() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device_attribute(cudaDevAttrComputeCapabilityMajor, device) * 10 +
         device_attribute(cudaDevAttrComputeCapabilityMinor, device);
}

bool bulk_supported() { return compute_capability() >= 90; }

// E4M3 tensor cores (mma.sync and cuBLASLt's fp8 GEMMs) came with sm_89.
constexpr int kFp8MinComputeCapability = 89;
std::string no_fp8_tensor_cores(int cc) {
  return "sm_" + std::to_string(cc) + " has no fp8 tensor cores (sm_89 and later)";
}

core::ProbeRate not_run(std::string why) {
  core::ProbeRate rate;
  rate.not_run = std::move(why);
  return rate;
}

struct ProbeTime {
  double ms = 0;
  double sm_mhz = 0;  // 0 when the clock could not be read (launch shorter than the stamps' resolution)
};

// One probe launch bracketed by clock stamps (the SM clock it ran at) and events (its GPU time).
class ClockedTimer {
 public:
  explicit ClockedTimer(int sms) : sms_(sms), stamps_(2 * static_cast<size_t>(sms) * sizeof(ClockStamp)) {}

  template <typename Launch>
  ProbeTime time(const Launch& launch) {
    auto* slots = static_cast<ClockStamp*>(stamps_.get());
    enqueue_clock_stamps(slots, sms_, nullptr);
    start_.record(nullptr);
    launch();
    stop_.record(nullptr);
    enqueue_clock_stamps(slots + sms_, sms_, nullptr);
    ProbeTime t;
    t.ms = elapsed_ms(start_, stop_);
    std::vector<ClockStamp> host(2 * static_cast<size_t>(sms_));
    check_cuda(cudaMemcpy(host.data(), slots, host.size() * sizeof(ClockStamp), cudaMemcpyDeviceToHost),
               "cudaMemcpy (clock stamps)");
    t.sm_mhz = clock_mhz_between({host.begin(), host.begin() + sms_}, {host.begin() + sms_, host.end()});
    return t;
  }

 private:
  int sms_;
  DeviceBuffer stamps_;
  Event start_, stop_;
};

// Best time of kRepetitions launches after one warm-up [ms].
template <typename Launch>
double best_ms(ClockedTimer& timer, const Launch& launch) {
  launch();
  double best = 1e30;
  for (int r = 0; r < kRepetitions; ++r) best = std::min(best, timer.time(launch).ms);
  return best;
}

// The repetition with the most work per clock cycle (work / (ms x MHz)), after one warm-up: its time and
// clock together. A compute roof per MHz is what a point's clock scales.
template <typename Launch>
ProbeTime best_per_cycle(ClockedTimer& timer, const Launch& launch) {
  launch();
  ProbeTime best;
  double best_cycles = 1e300;
  for (int r = 0; r < kRepetitions; ++r) {
    const ProbeTime t = timer.time(launch);
    const double cycles = t.sm_mhz > 0 ? t.ms * t.sm_mhz : 1e299;  // unclocked reps only when none is clocked
    if (cycles < best_cycles || (cycles == best_cycles && t.ms < best.ms)) {
      best_cycles = cycles;
      best = t;
    }
  }
  return best;
}

core::ProbeRate rate_of(double flops, const ProbeTime& t) { return {flops / (t.ms * 1e-3), t.sm_mhz}; }

// A uniform value in [-1, 1) from a hash of the index: tensor cores draw more power (and the clock can
// drop) on varied data than on a constant fill, which would overstate the roof.
__device__ float hashed_uniform(size_t i) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
  h ^= h >> 16;
  h *= 2246822519u;
  h ^= h >> 13;
  return static_cast<float>(h >> 8) * (2.f / 16777216.f) - 1.f;
}

template <bool Bf16>
__global__ void random_fill_kernel(uint16_t* out, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const float v = hashed_uniform(i);
    if constexpr (Bf16) {
      const __nv_bfloat16 b = __float2bfloat16(v);
      out[i] = *reinterpret_cast<const uint16_t*>(&b);
    } else {
      const __half b = __float2half(v);
      out[i] = *reinterpret_cast<const uint16_t*>(&b);
    }
  }
}

// The same values as E4M3 bytes (the fp8 GEMM's A and B).
__global__ void random_fill_fp8_kernel(uint8_t* out, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    out[i] = __nv_cvt_float_to_fp8(hashed_uniform(i), __NV_SATFINITE, __NV_E4M3);
}

// Per warp: iterations x kMmaChains independent mma.sync m16n8k32 E4M3 (fp32 accumulate), as the
// 16-bit probe (probes::launch_mma); out has one float per thread. The instruction exists from sm_89:
// code for an older architecture does no MMA, and the host does not run it there (fp8_mma_not_run).
// Measured on the H200 (reports/h200-fp8-prefill, context.ceilings.compute_probes.mma_fp8_e4m3): 1537
// TFLOP/s at 1785 MHz, 2.4x the 16-bit mma.sync probe and 0.78x the fp8 datasheet figure.
__global__ void mma_fp8_kernel(float* out, int iterations) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // Four E4M3 values per register, each with the sign bit and the exponent's top bit cleared (at most
  // 0x77, and 0x7c after the offsets below): finite, never E4M3's NaN (0x7f).
  const uint32_t seed = (0x38383838u ^ (threadIdx.x * 0x01010101u)) & 0x77777777u;
  uint32_t a0 = seed, a1 = seed + 1, a2 = seed + 2, a3 = seed + 3, b0 = seed + 4, b1 = seed + 5;
  float acc[probes::kMmaChains][4] = {};
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < probes::kMmaChains; ++c)
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float sum = 0;
#pragma unroll
  for (int c = 0; c < probes::kMmaChains; ++c) sum += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
#else
  out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<float>(iterations);
#endif
}

// Why the fp8 mma.sync probe cannot run here; empty when it can. It needs a device of sm_89 or later
// and this binary's code for it compiled for sm_89 or later (code JIT-compiled from an older
// architecture's PTX has no MMA in the kernel's body).
std::string fp8_mma_not_run() {
  const int cc = compute_capability();
  if (cc < kFp8MinComputeCapability) return no_fp8_tensor_cores(cc);
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, mma_fp8_kernel), "cudaFuncGetAttributes (fp8 mma.sync probe)");
  if (attributes.ptxVersion < kFp8MinComputeCapability)
    return "this build has no sm_89+ code for the device (its code comes from compute_" +
           std::to_string(attributes.ptxVersion) + "; -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(cc) + " adds it)";
  return {};
}

// The fp8 mma.sync probe: 64 warps per SM, each kMmaIterations x kMmaChains MMAs.
core::ProbeRate mma_fp8_rate(int blocks, int threads, float* out, ClockedTimer& timer) {
  if (std::string why = fp8_mma_not_run(); !why.empty()) return not_run(std::move(why));
  const double warps = static_cast<double>(blocks) * threads / 32;
  const double flops = warps * kMmaIterations * probes::kMmaChains * kFlopsPerMmaFp8;
  return rate_of(flops, best_per_cycle(timer, [&] {
                   mma_fp8_kernel<<<blocks, threads>>>(out, kMmaIterations);
                   check_cuda(cudaGetLastError(), "fp8 mma.sync probe launch");
                 }));
}

std::string lt_status(const char* call, cublasStatus_t status) {
  return std::string(call) + ": " + cublasLtGetStatusName(status);
}

// What one cuBLASLt matmul holds (handle, descriptors, preference), destroyed in reverse.
struct LtMatmul {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : {d, b, a})
      if (layout) cublasLtMatrixLayoutDestroy(layout);
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (handle) cublasLtDestroy(handle);
  }
};

// A large cuBLASLt E4M3 GEMM (n^3 on varied data, fp32 accumulate, bf16 D), the library's fastest fp8
// path for the device (wgmma on Hopper): D = A^T B in the TN layout its fp8 kernels require, column
// major, with A's and B's scale pointers set (1.0, as an attention kernel's per-tensor scales would
// be). Fast accumulation is on: without it the library promotes the partial sums to fp32 every few K
// steps, a cost a kernel that accumulates in the tensor cores (FlashAttention-3's fp8 path) does not
// pay, and the roof is the rate the hardware reaches. "Not run" with the reason when the device has
// no fp8 tensor cores or the library refuses.
core::ProbeRate gemm_fp8_rate(ClockedTimer& timer) {
  if (const int cc = compute_capability(); cc < kFp8MinComputeCapability) return not_run(no_fp8_tensor_cores(cc));
  const uint64_t n = kGemmN;
  LtMatmul mm;
  cublasStatus_t status = cublasLtCreate(&mm.handle);
  if (status != CUBLAS_STATUS_SUCCESS) return not_run(lt_status("cublasLtCreate", status));
  status = cublasLtMatmulDescCreate(&mm.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (status != CUBLAS_STATUS_SUCCESS) return not_run(lt_status("cublasLtMatmulDescCreate", status));
  core::ProbeRate rate;
  try {
    // C (not read: beta is 0) apart from D: the library's fp8 kernels need not run in place.
    DeviceBuffer a(n * n), b(n * n), c(n * n * sizeof(__nv_bfloat16)), d(n * n * sizeof(__nv_bfloat16)),
        workspace(kLtWorkspaceBytes), scales(2 * kScaleSlotBytes);
    // A's and B's scales 1.0, each in a slot of its own at an allocation's alignment.
    const float unit = 1.f;
    for (int slot = 0; slot < 2; ++slot)
      check_cuda(cudaMemcpy(static_cast<char*>(scales.get()) + slot * kScaleSlotBytes, &unit, sizeof(unit),
                            cudaMemcpyHostToDevice),
                 "cudaMemcpy (fp8 GEMM scales)");
    for (void* m : {a.get(), b.get()}) random_fill_fp8_kernel<<<1024, 256>>>(static_cast<uint8_t*>(m), n * n);
    check_cuda(cudaGetLastError(), "random_fill_fp8_kernel launch");
    const cublasOperation_t transpose = CUBLAS_OP_T, plain = CUBLAS_OP_N;
    const void* a_scale = scales.get();
    const void* b_scale = static_cast<const char*>(scales.get()) + kScaleSlotBytes;
    const int8_t fast_accumulation = 1;
    const uint64_t workspace_bytes = kLtWorkspaceBytes;
    struct Attribute {
      cublasLtMatmulDescAttributes_t which;
      const void* value;
      size_t size;
    };
    for (const Attribute& attr : {Attribute{CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)},
                                  Attribute{CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof(plain)},
                                  Attribute{CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof(a_scale)},
                                  Attribute{CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof(b_scale)},
                                  Attribute{CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accumulation,
                                            sizeof(fast_accumulation)}})
      if ((status = cublasLtMatmulDescSetAttribute(mm.desc, attr.which, attr.value, attr.size)) != CUBLAS_STATUS_SUCCESS)
        return not_run(lt_status("cublasLtMatmulDescSetAttribute", status));
    // Column major: A stored K x M (op T gives M x K), B K x N, D M x N.
    if ((status = cublasLtMatrixLayoutCreate(&mm.a, CUDA_R_8F_E4M3, n, n, n)) != CUBLAS_STATUS_SUCCESS ||
        (status = cublasLtMatrixLayoutCreate(&mm.b, CUDA_R_8F_E4M3, n, n, n)) != CUBLAS_STATUS_SUCCESS ||
        (status = cublasLtMatrixLayoutCreate(&mm.d, CUDA_R_16BF, n, n, n)) != CUBLAS_STATUS_SUCCESS)
      return not_run(lt_status("cublasLtMatrixLayoutCreate", status));
    if ((status = cublasLtMatmulPreferenceCreate(&mm.preference)) != CUBLAS_STATUS_SUCCESS ||
        (status = cublasLtMatmulPreferenceSetAttribute(mm.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &workspace_bytes, sizeof(workspace_bytes))) !=
            CUBLAS_STATUS_SUCCESS)
      return not_run(lt_status("cublasLtMatmulPreference", status));
    // The heuristic's candidates in its order; the first that the library runs is timed (one it lists
    // can still refuse the problem at cublasLtMatmul).
    constexpr int kCandidates = 8;
    cublasLtMatmulHeuristicResult_t heuristics[kCandidates] = {};
    int found = 0;
    status = cublasLtMatmulAlgoGetHeuristic(mm.handle, mm.desc, mm.a, mm.b, mm.d, mm.d, mm.preference, kCandidates,
                                            heuristics, &found);
    if (status != CUBLAS_STATUS_SUCCESS) return not_run(lt_status("cublasLtMatmulAlgoGetHeuristic", status));
    if (found == 0) return not_run("cublasLtMatmulAlgoGetHeuristic: no algorithm for an E4M3 TN GEMM on this device");
    const float one = 1.f, zero = 0.f;
    auto run = [&](const cublasLtMatmulAlgo_t& algo) {
      return cublasLtMatmul(mm.handle, mm.desc, &one, a.get(), mm.a, b.get(), mm.b, &zero, c.get(), mm.d, d.get(),
                            mm.d, &algo, workspace.get(), kLtWorkspaceBytes, nullptr);
    };
    const cublasLtMatmulAlgo_t* chosen = nullptr;
    cublasStatus_t refused = CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < found && !chosen; ++i) {
      if (heuristics[i].state != CUBLAS_STATUS_SUCCESS || heuristics[i].workspaceSize > kLtWorkspaceBytes) continue;
      if (const cublasStatus_t s = run(heuristics[i].algo); s == CUBLAS_STATUS_SUCCESS)
        chosen = &heuristics[i].algo;
      else
        refused = s;
    }
    if (!chosen)
      return not_run(lt_status("cublasLtMatmul (each of the heuristic's algorithms)", refused));
    cublasStatus_t matmul = CUBLAS_STATUS_SUCCESS;
    const ProbeTime t = best_per_cycle(timer, [&] {
      if (const cublasStatus_t s = run(*chosen); s != CUBLAS_STATUS_SUCCESS) matmul = s;
    });
    if (matmul != CUBLAS_STATUS_SUCCESS) return not_run(lt_status("cublasLtMatmul", matmul));
    rate = rate_of(2.0 * static_cast<double>(n) * n * n, t);
  } catch (const std::exception& e) {
    rate = not_run(e.what());  // out of memory, say: the GEMM probe is optional
    (void)cudaGetLastError();
  }
  return rate;
}

// A large cuBLAS GEMM (n^3, fp32 accumulate, output in the input type): the fastest tensor-core path
// the library knows for the device (wgmma on Hopper), which a hand-written mma.sync loop cannot reach.
// "Not run" with the reason when cuBLAS is not usable here (the mma.sync probe then stands alone).
core::ProbeRate gemm_rate(cudaDataType_t type, ClockedTimer& timer) {
  constexpr int kN = kGemmN;
  const size_t bytes = static_cast<size_t>(kN) * kN * 2;
  cublasHandle_t handle = nullptr;
  if (const cublasStatus_t status = cublasCreate(&handle); status != CUBLAS_STATUS_SUCCESS)
    return not_run(std::string("cublasCreate: ") + cublasGetStatusName(status));
  core::ProbeRate rate;
  try {
    DeviceBuffer a(bytes), b(bytes), c(bytes);
    const size_t elems = bytes / 2;
    for (void* m : {a.get(), b.get()}) {
      if (type == CUDA_R_16BF)
        random_fill_kernel<true><<<1024, 256>>>(static_cast<uint16_t*>(m), elems);
      else
        random_fill_kernel<false><<<1024, 256>>>(static_cast<uint16_t*>(m), elems);
    }
    check_cuda(cudaGetLastError(), "random_fill_kernel launch");
    const float one = 1.f, zero = 0.f;
    bool ok = true;
    const ProbeTime t = best_per_cycle(timer, [&] {
      ok = ok && cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a.get(), type, kN, b.get(), type,
                              kN, &zero, c.get(), type, kN, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    });
    rate = ok ? rate_of(2.0 * kN * kN * static_cast<double>(kN), t) : not_run("cublasGemmEx refused the GEMM");
  } catch (const std::exception& e) {
    rate = not_run(e.what());  // out of memory, say: the GEMM probe is optional
    (void)cudaGetLastError();
  }
  cublasDestroy(handle);
  return rate;
}

// The best of the streaming probes over HBM-sized buffers [bytes/s], and which one it was.
void measure_hbm(int sm_count, ClockedTimer& timer, core::MeasuredCeilings& m) {
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  // Two buffers of the largest size; leave a quarter of free memory untouched.
  const size_t largest = std::min(kHbmBufferBytes[1], free_bytes / 8 * 3 / 64 * 64);
  DeviceBuffer src(largest), dst(largest), sink(sizeof(uint32_t));
  check_cuda(cudaMemset(src.get(), 1, largest), "cudaMemset");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  auto consider = [&](double bytes_per_s, const std::string& what) {
    if (bytes_per_s > m.hbm_bytes_per_s) {
      m.hbm_bytes_per_s = bytes_per_s;
      m.hbm_probe = what;
    }
  };
  for (size_t wanted : kHbmBufferBytes) {
    const size_t bytes = std::min(wanted, largest);
    const std::string size = std::to_string(bytes / (1 << 20)) + " MiB";
    for (const GridShape g : kGridShapes) {
      const int blocks = sm_count * g.blocks_per_sm;
      const std::string grid = std::to_string(blocks) + " x " + std::to_string(g.threads);
      const double read_ms = best_ms(timer, [&] {
        probes::launch_read(src.get(), bytes, 1, static_cast<uint32_t*>(sink.get()), blocks, g.threads, nullptr);
      });
      consider(static_cast<double>(bytes) / (read_ms * 1e-3), "read " + size + ", " + grid);
      const double copy_ms =
          best_ms(timer, [&] { probes::launch_copy(src.get(), dst.get(), bytes, 1, blocks, g.threads, nullptr); });
      const double copy_bytes_per_s = 2.0 * static_cast<double>(bytes) / (copy_ms * 1e-3);
      consider(copy_bytes_per_s, "copy " + size + ", " + grid);
      if (copy_bytes_per_s > m.copy_bytes_per_s) {
        m.copy_bytes_per_s = copy_bytes_per_s;
        m.copy_buffer_bytes = static_cast<double>(bytes);
      }
      const double fill_ms = best_ms(timer, [&] { probes::launch_fill(dst.get(), bytes, blocks, g.threads, nullptr); });
      consider(static_cast<double>(bytes) / (fill_ms * 1e-3), "fill " + size + ", " + grid);
    }
    if (bulk_supported()) {
      for (const BulkShape b : kBulkShapes) {
        const int blocks = sm_count * b.blocks_per_sm;
        size_t read = 0;
        const double ms = best_ms(timer, [&] { read = probes::launch_read_bulk(src.get(), bytes, 1, b.chunk_bytes, blocks, nullptr); });
        consider(static_cast<double>(read) / (ms * 1e-3),
                 "bulk read " + size + ", " + std::to_string(blocks) + " x " + std::to_string(b.chunk_bytes / 1024) + " kB chunks");
      }
    }
    if (bytes < wanted) break;  // the larger size did not fit
  }
}

// The read probe over a buffer a quarter of L2's size, read kL2Passes times by one launch.
double measure_l2(int sm_count, int64_t l2_bytes, ClockedTimer& timer) {
  if (l2_bytes <= 0) return 0;
  const size_t bytes = static_cast<size_t>(l2_bytes) / 4 / 64 * 64;
  DeviceBuffer src(bytes), sink(sizeof(uint32_t));
  check_cuda(cudaMemset(src.get(), 1, bytes), "cudaMemset");
  double best = 0;
  for (const GridShape g : kGridShapes) {
    const int blocks = sm_count * g.blocks_per_sm;
    const double ms = best_ms(timer, [&] {
      probes::launch_read(src.get(), bytes, kL2Passes, static_cast<uint32_t*>(sink.get()), blocks, g.threads, nullptr);
    });
    best = std::max(best, static_cast<double>(bytes) * kL2Passes / (ms * 1e-3));
  }
  if (bulk_supported()) {
    for (const BulkShape b : kBulkShapes) {
      const int blocks = sm_count * b.blocks_per_sm;
      size_t read = 0;
      const double ms = best_ms(timer, [&] { read = probes::launch_read_bulk(src.get(), bytes, kL2Passes, b.chunk_bytes, blocks, nullptr); });
      best = std::max(best, static_cast<double>(read) * kL2Passes / (ms * 1e-3));
    }
  }
  return best;
}

// GPU time per launch of back-to-back empty kernels [us]: the stream is held (StreamHold) until the
// host has enqueued all of them, so the events see the GPU's cost of a launch, not the host's rate of
// enqueueing; the median over the repetitions.
double measure_launch_latency_us() {
  Stream stream;
  StreamHold hold;
  Event start, stop;
  // Loaded before the first hold: a kernel's first launch loads its module lazily, which waits for
  // the device - here, for the hold kernel, until its timeout.
  probes::launch_empty(stream.get());
  check_cuda(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
  std::vector<double> per_launch_us;
  for (int r = 0; r < kLaunchLatencyRepetitions; ++r) {
    hold.hold(stream.get());
    start.record(stream.get());
    for (int i = 0; i < kLaunchLatencyLaunches; ++i) probes::launch_empty(stream.get());
    stop.record(stream.get());
    hold.release();
    const double ms = elapsed_ms(start, stop);
    if (!hold.timed_out()) per_launch_us.push_back(ms * 1e3 / kLaunchLatencyLaunches);
  }
  return per_launch_us.empty() ? 0.0 : core::median(per_launch_us);
}

}  // namespace

double measure_empty_launch_us() { return measure_launch_latency_us(); }

core::MeasuredCeilings measure_ceilings() {
  core::MeasuredCeilings m;
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  const int sm_count = device_attribute(cudaDevAttrMultiProcessorCount, device);
  const int l2_bytes = device_attribute(cudaDevAttrL2CacheSize, device);
  ClockedTimer timer(sm_count);

  measure_hbm(sm_count, timer, m);
  m.l2_bytes_per_s = measure_l2(sm_count, l2_bytes, timer);

  constexpr int kThreads = 256;
  const int blocks = sm_count * 8;  // 64 warps per SM: every scheduler has warps to switch between
  DeviceBuffer out(static_cast<size_t>(blocks) * kThreads * sizeof(float));
  auto* out_ptr = static_cast<float*>(out.get());
  const double warps = static_cast<double>(blocks) * kThreads / 32;
  const double mma_flops = warps * kMmaIterations * probes::kMmaChains * probes::kFlopsPerMma;
  m.mma_fp16 = rate_of(mma_flops, best_per_cycle(timer, [&] {
                         probes::launch_mma(false, out_ptr, kMmaIterations, blocks, kThreads, nullptr);
                       }));
  m.mma_bf16 = rate_of(mma_flops, best_per_cycle(timer, [&] {
                         probes::launch_mma(true, out_ptr, kMmaIterations, blocks, kThreads, nullptr);
                       }));
  m.gemm_fp16 = gemm_rate(CUDA_R_16F, timer);
  m.gemm_bf16 = gemm_rate(CUDA_R_16BF, timer);
  m.mma_fp8_e4m3 = mma_fp8_rate(blocks, kThreads, out_ptr, timer);
  m.gemm_fp8_e4m3 = gemm_fp8_rate(timer);
  const double fma_flops = 2.0 * blocks * kThreads * static_cast<double>(kFmaIterations) * probes::kFmaChains;
  m.fma_fp32 = rate_of(fma_flops, best_per_cycle(timer, [&] {
                         probes::launch_fma(out_ptr, kFmaIterations, blocks, kThreads, nullptr);
                       }));
  m.launch_latency_us = measure_launch_latency_us();
  return m;
}

}  // namespace attnprof::measure
