// The reference attention forward: the unfused, materialised computation that plain framework code
// performs. Three launches per call:
//   qk_gemm  S = scale * Q K^T   cuBLAS strided-batched GEMM, fp16/bf16 in, fp32 S out
//   softmax  P = softmax(S)      fp32 math, causal and window masks, P in the input dtype, LSE; rows that fit in
//                                registers are read once with 16-byte loads (bandwidth-bound)
//   pv_gemm  O = P V             cuBLAS strided-batched GEMM, fp32 accumulate, O in the input dtype (V and O
//                                hdim_v wide: the value head dim may differ from Q's and K's)
// S and P live in the caller's workspace (HBM): this is the traffic the fused kernel avoids.
// A paged KV cache adds a first launch, gather_kv, that copies the sequence's pages into contiguous K
// and V in the workspace (what a framework without paged attention does); the GEMMs then read those.
// A quantized one adds dequant_kv instead, which writes K and V in the dtype. fp8 prefill (dtype
// fp8_e4m3, core/shape.hpp) computes in bf16: its first stage, dequant_qkv, writes the E4M3 values of Q,
// K and V as bf16 copies (exact: every E4M3 value is a bf16 value) and the scales enter in fp32 as the
// GEMMs' alpha (q_scale k_scale times the softmax scale for S, v_scale for O), so S is as exact as the
// fp8 kernels' own scores; P and O are bf16 (Shape::out_dtype).
// Grouped-query attention without copies: for one (batch, kv head) the Q rows of its
// heads / kv_heads query heads are contiguous, so each GEMM batch is one (batch, kv head) with
// group * seq_q rows, and the batch strides stay uniform.
// A packed variable-length batch (core/shape.hpp) runs the three stages sequence by sequence
// (run_packed): cuBLAS calls per (sequence, kv head) and a softmax launch per sequence.
// The backward (dense batches), with dS the gradient of the scaled scores S:
//   bwd_qk_gemm  S = scale * Q K^T          recomputed from the forward's LSE, as in a bwd call
//   bwd_softmax  P = exp(S - LSE) masked    in the dtype
//   bwd_dv_gemm  dV = P^T dO                 cuBLAS; the GEMM's k runs over the group's query rows,
//                                            which sums GQA's gradient per kv head
//   bwd_dp_gemm  dP = dO V^T                 fp32, over S
//   bwd_ds       dS = P * (dP - D), D = rowsum(dO * O), in the dtype, over P
//   bwd_dq_gemm  dQ = scale * dS K
//   bwd_dk_gemm  dK = scale * dS^T Q          (summed over the group like dV)
// The workspace is the forward's: dP reuses S's fp32 and dS P's dtype entries.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvtx3.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/paged.hpp"
#include "kernels/common/quant.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels {

namespace {

constexpr int kSoftmaxThreads = 256;
constexpr int kWarpSize = 32;

void cublas_check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    throw DeviceOutOfMemory(std::string(call) + ": " + cublasGetStatusString(status));
  throw CudaError(std::string(call) + ": " + cublasGetStatusString(status));
}
#define ATTNPROF_CUBLAS_CHECK(call) cublas_check((call), #call)

// One cuBLAS handle per device, created on first use. cuBLAS handles are not safe to re-target to
// another stream while a second thread is enqueueing on them, so a launch holds the device's lock.
struct HandleTable {
  std::mutex mutex;
  std::map<int, cublasHandle_t> handles;
};
HandleTable& handle_table() {
  static HandleTable table;  // never destroyed before exit; handles are released by the driver
  return table;
}
cublasHandle_t handle_for_device_locked(int device) {
  auto& table = handle_table();
  auto it = table.handles.find(device);
  if (it != table.handles.end()) return it->second;
  cublasHandle_t handle = nullptr;
  ATTNPROF_CUBLAS_CHECK(cublasCreate(&handle));
  table.handles.emplace(device, handle);
  return handle;
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// Paged K and V into contiguous (batch, kv_heads, seq_k, hdim) copies (hdim_v for V), 16 bytes per
// thread step: the first k_chunks steps copy K, the rest V, whose rows may be of another width.
__global__ void gather_kv_kernel(const uint4* __restrict__ k_pool, const uint4* __restrict__ v_pool,
                                 const int32_t* __restrict__ table, uint4* __restrict__ k_out, uint4* __restrict__ v_out,
                                 int64_t k_chunks, int64_t v_chunks, int64_t pages_per_seq, int64_t kv_heads,
                                 int64_t seq_k, int64_t page_size, int64_t k_chunks_per_row, int64_t v_chunks_per_row) {
  for (int64_t step = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; step < k_chunks + v_chunks;
       step += int64_t{gridDim.x} * blockDim.x) {
    const bool is_k = step < k_chunks;
    const int64_t i = is_k ? step : step - k_chunks;
    const int64_t chunks_per_row = is_k ? k_chunks_per_row : v_chunks_per_row;
    const int64_t c = i % chunks_per_row;
    const int64_t row = i / chunks_per_row;  // (b * kv_heads + h) * seq_k + j
    const int64_t j = row % seq_k, bh = row / seq_k;
    const int64_t src = paged_offset(table, pages_per_seq, kv_heads, page_size, chunks_per_row, bh / kv_heads,
                                     bh % kv_heads, j, c);
    if (is_k)
      k_out[i] = k_pool[src];
    else
      v_out[i] = v_pool[src];
  }
}

// A quantized K and V (core/shape.hpp's kv_dtype; kernels/common/quant.hpp) into contiguous (batch,
// kv_heads, seq_k, width) copies in the dtype, element by element, from contiguous bytes or a page pool:
// the first k_elems steps make K, the rest V. The value a byte stands for is rounded to the dtype.
template <typename T>
__global__ void dequant_kv_kernel(const uint8_t* __restrict__ k_in, const uint8_t* __restrict__ v_in,
                                  const float* __restrict__ k_scale, const float* __restrict__ v_scale,
                                  const int32_t* __restrict__ table, T* __restrict__ k_out, T* __restrict__ v_out,
                                  int64_t k_elems, int64_t v_elems, int64_t pages_per_seq, int64_t kv_heads,
                                  int64_t seq_k, int64_t page_size, int64_t k_width, int64_t v_width,
                                  core::KvDType type, core::KvScale granularity) {
  for (int64_t step = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; step < k_elems + v_elems;
       step += int64_t{gridDim.x} * blockDim.x) {
    const bool is_k = step < k_elems;
    const int64_t i = is_k ? step : step - k_elems;
    const int64_t width = is_k ? k_width : v_width;
    const int64_t row = i / width, d = i % width;  // row = (b * kv_heads + h) * seq_k + j
    const int64_t j = row % seq_k, bh = row / seq_k;
    const int64_t src = table == nullptr
                            ? i
                            : paged_offset(table, pages_per_seq, kv_heads, page_size, width, bh / kv_heads, bh % kv_heads, j, d);
    const float* scales = is_k ? k_scale : v_scale;
    const float scale = granularity == core::KvScale::tensor ? scales[0]
                        : granularity == core::KvScale::head ? scales[bh % kv_heads]
                                                              : scales[src / width];
    const float x = dequantize(type, (is_k ? k_in : v_in)[src], scale);
    if (is_k)
      k_out[i] = from_float<T>(x);
    else
      v_out[i] = from_float<T>(x);
  }
}

// cuBLAS reads alpha and beta from device memory while one is alive (enabled), from the host again after.
class DevicePointerMode {
 public:
  DevicePointerMode(cublasHandle_t handle, bool enabled) : handle_(handle), enabled_(enabled) {
    if (enabled_) ATTNPROF_CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_DEVICE));
  }
  ~DevicePointerMode() {
    if (enabled_) (void)cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST);
  }
  DevicePointerMode(const DevicePointerMode&) = delete;
  DevicePointerMode& operator=(const DevicePointerMode&) = delete;

 private:
  cublasHandle_t handle_;
  bool enabled_;
};

// Where fp8 prefill's scalars sit in the workspace, for the cuBLAS calls in device pointer mode.
enum Fp8Scalar { kAlphaS = 0, kAlphaO = 1, kZero = 2, kOne = 3 };

// alpha of S = Q K^T: the softmax scale times q_scale k_scale; alpha of O = P V: v_scale; beta 0; and 1,
// the scale the dequantizing kernels take so that the copies hold the bytes' own E4M3 values.
__global__ void fp8_scalars_kernel(const float* __restrict__ q_scale, const float* __restrict__ k_scale,
                                   const float* __restrict__ v_scale, float softmax_scale, float* __restrict__ out) {
  out[kAlphaS] = softmax_scale * (q_scale[0] * k_scale[0]);
  out[kAlphaO] = v_scale[0];
  out[kZero] = 0.f;
  out[kOne] = 1.f;
}

// fp8 prefill's Q (core/shape.hpp): each E4M3 byte as the value it stands for, times the given scale
// (1: fp8_scalars_kernel), rounded to T, into a contiguous copy in the same order.
template <typename T>
__global__ void dequant_q_kernel(const uint8_t* __restrict__ q_in, const float* __restrict__ q_scale,
                                 T* __restrict__ q_out, int64_t elems) {
  const float scale = q_scale[0];
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elems; i += int64_t{gridDim.x} * blockDim.x)
    q_out[i] = from_float<T>(dequantize(core::KvDType::fp8_e4m3, q_in[i], scale));
}

// P = exp(S - LSE) where row i sees key j, 0 elsewhere (and on a row without a visible key); `rows`
// rows of seq_k scores, row r's LSE at r.
template <typename T>
__global__ void probs_from_lse_kernel(const float* __restrict__ s, const float* __restrict__ lse, T* __restrict__ p,
                                      int64_t rows, int64_t seq_q, int64_t seq_k, bool causal, int64_t window);

// dS = P * (dP - D) with D = rowsum(dO * O) of the row: one CTA per row; dP in the fp32 buffer, dS
// written over P.
template <typename T>
__global__ void dsoftmax_rows_kernel(const float* __restrict__ dp, T* __restrict__ p_ds, const T* __restrict__ d_o,
                                     const T* __restrict__ o, int64_t seq_k, int64_t hdim_v);

struct MaxSum {
  float max;  // running maximum of the row's scores
  float sum;  // sum of exp(score - max)
};

// Merges two partial (max, sum) pairs of the same row: the online-softmax combine step.
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.max, b.max);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

// The keys [begin, end) row i sees (core::Shape::keys_of_row; window 0 = none, else at most
// seq_q + seq_k).
struct RowKeys {
  int64_t begin, end;
};
__device__ __forceinline__ RowKeys row_keys(int64_t i, int64_t seq_q, int64_t seq_k, bool causal, int64_t window) {
  const int64_t pos = i + seq_k - seq_q;
  const int64_t end = causal ? pos + 1 : window > 0 ? pos + window : seq_k;
  const int64_t clamped_end = min(seq_k, max(int64_t{0}, end));
  const int64_t begin = window > 0 ? min(clamped_end, max(int64_t{0}, pos - window + 1)) : 0;
  return {begin, clamped_end};
}

// Where row `row` of S (head row / seq_q, query row % seq_q) keeps its LSE: row itself for a dense
// batch (lse_head_stride = seq_q), head * tokens + the row for one sequence of a packed batch.
__device__ __forceinline__ int64_t lse_index(int64_t row, int64_t seq_q, int64_t lse_head_stride) {
  return (row / seq_q) * lse_head_stride + row % seq_q;
}

// Generic path (any seq_k): one CTA per row of S. Pass 1 reads the row's visible keys once, keeping
// an online (max, sum); pass 2 reads them again and writes P = exp(s - max) / sum. Columns outside the
// row's causal and window limits get P = 0; a row with no visible key writes P = 0 and LSE = -inf (and
// PV then makes its O row 0).
template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads)
    softmax_rows_kernel(const float* __restrict__ s, T* __restrict__ p, float* __restrict__ lse,
                        int64_t seq_q, int64_t seq_k, bool causal, int64_t window, int64_t lse_head_stride) {
  const int64_t row = blockIdx.x;
  const RowKeys visible = row_keys(row % seq_q, seq_q, seq_k, causal, window);
  const float* s_row = s + row * seq_k;
  T* p_row = p + row * seq_k;

  MaxSum local{-INFINITY, 0.f};
  for (int64_t j = visible.begin + threadIdx.x; j < visible.end; j += blockDim.x) {
    const float x = s_row[j];
    // One exponential per element: rescale the running sum only when the maximum moves.
    if (x > local.max) {
      local.sum = local.sum * __expf(local.max - x) + 1.f;
      local.max = x;
    } else {
      local.sum += __expf(x - local.max);
    }
  }
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const MaxSum other{__shfl_xor_sync(0xffffffffu, local.max, offset),
                       __shfl_xor_sync(0xffffffffu, local.sum, offset)};
    local = combine(local, other);
  }
  __shared__ MaxSum warp_partial[kSoftmaxThreads / kWarpSize];
  __shared__ MaxSum row_total;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  if (lane == 0) warp_partial[warp] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    MaxSum total{-INFINITY, 0.f};
    for (int w = 0; w < kSoftmaxThreads / kWarpSize; ++w) total = combine(total, warp_partial[w]);
    row_total = total;
    lse[lse_index(row, seq_q, lse_head_stride)] = total.sum > 0.f ? total.max + logf(total.sum) : -INFINITY;
  }
  __syncthreads();
  const MaxSum total = row_total;
  const float inv_sum = total.sum > 0.f ? 1.f / total.sum : 0.f;
  for (int64_t j = threadIdx.x; j < seq_k; j += blockDim.x) {
    const float prob = j >= visible.begin && j < visible.end ? __expf(s_row[j] - total.max) * inv_sum : 0.f;
    p_row[j] = from_float<T>(prob);
  }
}

template <typename T>
__global__ void probs_from_lse_kernel(const float* __restrict__ s, const float* __restrict__ lse, T* __restrict__ p,
                                      int64_t rows, int64_t seq_q, int64_t seq_k, bool causal, int64_t window) {
  const int64_t total = rows * seq_k;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = e / seq_k, j = e % seq_k;
    const RowKeys visible = row_keys(row % seq_q, seq_q, seq_k, causal, window);
    const float l = lse[row];
    const bool seen = j >= visible.begin && j < visible.end && l != -INFINITY;
    p[e] = from_float<T>(seen ? __expf(s[e] - l) : 0.f);
  }
}

template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads)
    dsoftmax_rows_kernel(const float* __restrict__ dp, T* __restrict__ p_ds, const T* __restrict__ d_o,
                         const T* __restrict__ o, int64_t seq_k, int64_t hdim_v) {
  const int64_t row = blockIdx.x;
  float dot = 0.f;
  for (int64_t c = threadIdx.x; c < hdim_v; c += blockDim.x)
    dot += to_float(d_o[row * hdim_v + c]) * to_float(o[row * hdim_v + c]);
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
  __shared__ float warp_dot[kSoftmaxThreads / kWarpSize];
  if (threadIdx.x % kWarpSize == 0) warp_dot[threadIdx.x / kWarpSize] = dot;
  __syncthreads();
  float d = 0.f;
  for (int w = 0; w < kSoftmaxThreads / kWarpSize; ++w) d += warp_dot[w];
  const float* dp_row = dp + row * seq_k;
  T* row_out = p_ds + row * seq_k;
  for (int64_t j = threadIdx.x; j < seq_k; j += blockDim.x) row_out[j] = from_float<T>(to_float(row_out[j]) * (dp_row[j] - d));
}

// Four values of P in the input dtype, stored with one 8-byte access.
template <typename T>
__device__ __forceinline__ void store4(T* dst, float a, float b, float c, float d) {
  struct alignas(8) Four {
    T v[4];
  };
  Four out;
  out.v[0] = from_float<T>(a);
  out.v[1] = from_float<T>(b);
  out.v[2] = from_float<T>(c);
  out.v[3] = from_float<T>(d);
  *reinterpret_cast<Four*>(dst) = out;
}

template <int kThreads>
__device__ __forceinline__ float row_reduce_max(float v, float* scratch) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if constexpr (kThreads > kWarpSize) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    __syncthreads();  // scratch may still be read by the previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[0];
    for (int w = 1; w < kThreads / kWarpSize; ++w) v = fmaxf(v, scratch[w]);
  }
  return v;
}

template <int kThreads>
__device__ __forceinline__ float row_reduce_sum(float v, float* scratch) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if constexpr (kThreads > kWarpSize) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = 0.f;
    for (int w = 0; w < kThreads / kWarpSize; ++w) v += scratch[w];
  }
  return v;
}

// Bandwidth path (seq_k % 4 == 0, seq_k <= kRowThreads * 4 * kChunks): the row is read once into
// registers with 16-byte loads, all kChunks loads issued before the first use, and P is written with
// 8-byte stores: 4 bytes read and 2 written per score, the minimum. kRowThreads threads share a row:
// one warp per row (4 rows per 128-thread block, shuffles only) for short rows, the whole 256-thread
// block for long ones.
template <typename T, int kRowThreads, int kChunks>
__global__ void __launch_bounds__(kRowThreads == kWarpSize ? 4 * kWarpSize : kRowThreads)
    softmax_rows_vec_kernel(const float* __restrict__ s, T* __restrict__ p, float* __restrict__ lse,
                            int64_t rows, int64_t seq_q, int64_t seq_k, bool causal, int64_t window,
                            int64_t lse_head_stride) {
  constexpr int kRowsPerBlock = kRowThreads == kWarpSize ? 4 : 1;
  __shared__ float scratch[kRowThreads / kWarpSize];
  const int t = kRowThreads == kWarpSize ? threadIdx.x % kWarpSize : threadIdx.x;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock +
                      (kRowThreads == kWarpSize ? threadIdx.x / kWarpSize : 0);
  if (row >= rows) return;  // whole warps only: a warp-per-row block has no block barrier
  const RowKeys visible = row_keys(row % seq_q, seq_q, seq_k, causal, window);
  const float4* s_row = reinterpret_cast<const float4*>(s + row * seq_k);
  T* p_row = p + row * seq_k;
  const int64_t vectors = seq_k / 4;

  float x[kChunks][4];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int64_t v = static_cast<int64_t>(c) * kRowThreads + t;
    float4 in = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    // S is read once (streamed), and only the vectors holding a visible key.
    if (v < vectors && 4 * v < visible.end && 4 * v + 4 > visible.begin) in = __ldcs(s_row + v);
    x[c][0] = in.x;
    x[c][1] = in.y;
    x[c][2] = in.z;
    x[c][3] = in.w;
  }
  float m = -INFINITY;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int64_t col = 4 * (static_cast<int64_t>(c) * kRowThreads + t);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (col + e >= visible.end || col + e < visible.begin) x[c][e] = -INFINITY;
      m = fmaxf(m, x[c][e]);
    }
  }
  m = row_reduce_max<kRowThreads>(m, scratch);
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      x[c][e] = m == -INFINITY ? 0.f : __expf(x[c][e] - m);  // a row with no visible key: P = 0
      sum += x[c][e];
    }
  sum = row_reduce_sum<kRowThreads>(sum, scratch);
  const float inv_sum = sum > 0.f ? 1.f / sum : 0.f;
  if (t == 0) lse[lse_index(row, seq_q, lse_head_stride)] = sum > 0.f ? m + logf(sum) : -INFINITY;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int64_t v = static_cast<int64_t>(c) * kRowThreads + t;
    if (v < vectors)
      store4(p_row + 4 * v, x[c][0] * inv_sum, x[c][1] * inv_sum, x[c][2] * inv_sum, x[c][3] * inv_sum);
  }
}

// The softmax launch one shape gets: the bandwidth path when its row fits in registers, else the
// generic two-pass kernel.
struct SoftmaxLaunch {
  const void* func = nullptr;
  std::string name;
  int64_t blocks = 0;
  int threads = 0;
  // lse_head_stride: see lse_index (seq_q for a dense shape).
  void (*enqueue)(const SoftmaxLaunch&, const float*, void*, float*, const core::Shape&, int64_t lse_head_stride,
                  cudaStream_t) = nullptr;
};

// The shape's window, at most seq_q + seq_k (wider changes nothing, and row_keys adds it to a position).
int64_t clamped_window(const core::Shape& sh) { return std::min(sh.window, sh.seq_q + sh.seq_k); }

template <typename T, int kRowThreads, int kChunks>
void enqueue_vec(const SoftmaxLaunch& l, const float* s, void* p, float* lse, const core::Shape& sh,
                 int64_t lse_head_stride, cudaStream_t stream) {
  softmax_rows_vec_kernel<T, kRowThreads, kChunks><<<static_cast<unsigned>(l.blocks), l.threads, 0, stream>>>(
      s, static_cast<T*>(p), lse, sh.batch * sh.heads * sh.seq_q, sh.seq_q, sh.seq_k, sh.causal, clamped_window(sh),
      lse_head_stride);
}

template <typename T>
void enqueue_generic(const SoftmaxLaunch& l, const float* s, void* p, float* lse, const core::Shape& sh,
                     int64_t lse_head_stride, cudaStream_t stream) {
  softmax_rows_kernel<T><<<static_cast<unsigned>(l.blocks), l.threads, 0, stream>>>(
      s, static_cast<T*>(p), lse, sh.seq_q, sh.seq_k, sh.causal, clamped_window(sh), lse_head_stride);
}

template <typename T, int kRowThreads, int kChunks>
SoftmaxLaunch vec_launch(int64_t rows) {
  constexpr int kRowsPerBlock = kRowThreads == kWarpSize ? 4 : 1;
  return {reinterpret_cast<const void*>(&softmax_rows_vec_kernel<T, kRowThreads, kChunks>),
          "softmax_rows_vec_kernel<" + std::to_string(kRowThreads) + " threads/row, " +
              std::to_string(kChunks) + " x float4>",
          (rows + kRowsPerBlock - 1) / kRowsPerBlock, kRowThreads * kRowsPerBlock,
          &enqueue_vec<T, kRowThreads, kChunks>};
}

template <typename T>
SoftmaxLaunch softmax_launch_for(const core::Shape& sh) {
  const int64_t rows = sh.batch * sh.heads * sh.seq_q;
  const int64_t n = sh.seq_k;
  if (n % 4 == 0) {
    // At most 4 float4 per thread above one warp: 16 values in registers keep 2+ blocks (32+ warps) per
    // SM resident; 16 per thread at 256 threads took 239 registers and one block per SM (8 warps), which
    // held long rows to 3 TB/s. Rows up to 2048 keep 2 per thread: 4 cost 15% there (H200).
    if (n <= kWarpSize * 4 * 1) return vec_launch<T, kWarpSize, 1>(rows);
    if (n <= kWarpSize * 4 * 2) return vec_launch<T, kWarpSize, 2>(rows);
    if (n <= kWarpSize * 4 * 4) return vec_launch<T, kWarpSize, 4>(rows);
    if (n <= kWarpSize * 4 * 8) return vec_launch<T, kWarpSize, 8>(rows);
    if (n <= 256 * 4 * 2) return vec_launch<T, 256, 2>(rows);  // 8 blocks of 256 per SM: 64 warps
    if (n <= 256 * 4 * 4) return vec_launch<T, 256, 4>(rows);
    if (n <= 512 * 4 * 4) return vec_launch<T, 512, 4>(rows);
    if (n <= 1024 * 4 * 4) return vec_launch<T, 1024, 4>(rows);
  }
  return {reinterpret_cast<const void*>(&softmax_rows_kernel<T>), "softmax_rows_kernel", rows, kSoftmaxThreads,
          &enqueue_generic<T>};
}

SoftmaxLaunch softmax_launch_for(const core::Shape& sh) {
  return sh.out_dtype() == core::DType::bf16 ? softmax_launch_for<__nv_bfloat16>(sh) : softmax_launch_for<__half>(sh);
}

struct Geometry {
  int batch_count;           // batch * kv_heads
  int64_t rows_per_batch;    // group * seq_q: Q, S, P, O rows of one (batch, kv head)
  int64_t seq_k, hdim;
  int64_t hdim_v;            // V's and O's row width (value_hdim())
};

Geometry geometry_of(const core::Shape& s) {
  return {static_cast<int>(s.batch * s.kv_heads), (s.heads / s.kv_heads) * s.seq_q, s.seq_k, s.hdim, s.value_hdim()};
}

// Blocks of the elementwise probs_from_lse_kernel (a grid-stride loop).
int64_t probs_blocks(int64_t elems) {
  return std::max<int64_t>(1, std::min<int64_t>(int64_t{1} << 16, (elems + kSoftmaxThreads - 1) / kSoftmaxThreads));
}

constexpr int kGatherThreads = 256;
constexpr int64_t kGatherMaxBlocks = 4096;

// A packed batch's S and P hold one (heads, len, len) block per sequence, each starting at a multiple of
// this many entries: the softmax reads rows of S as float4 (and P's rows start where S's do), so a block
// must start 16-byte aligned whatever the lengths before it.
constexpr int64_t kPackedBlockAlign = 16;

// Entries of sequence `len`'s block of S (and of P), padded to kPackedBlockAlign.
int64_t packed_block_entries(const core::Shape& s, int64_t len) {
  return (s.heads * len * len + kPackedBlockAlign - 1) / kPackedBlockAlign * kPackedBlockAlign;
}

// Entries of S (and of P): every (batch, head)'s seq_q x seq_k, or every sequence's padded block.
int64_t score_count(const core::Shape& s) {
  if (!s.varlen()) return s.batch * s.heads * s.seq_q * s.seq_k;
  int64_t sum = 0;
  for (int64_t len : s.seq_lens) sum += packed_block_entries(s, len);
  return sum;
}

// The longest sequence of a packed batch, as a dense shape of batch 1 (the shape itself when dense).
core::Shape longest_sequence(const core::Shape& s) {
  if (!s.varlen()) return s;
  return s.sequence(std::max_element(s.seq_lens.begin(), s.seq_lens.end()) - s.seq_lens.begin());
}

// The contiguous K and V copies in the compute dtype (Shape::out_dtype: the dtype, bf16 for fp8 prefill)
// of a paged or quantized cache (none otherwise), then fp8 prefill's Q copy.
bool copies_kv(const core::Shape& s) { return s.paged() || s.quantized_kv(); }
size_t aligned_256(size_t bytes) { return (bytes + 255) / 256 * 256; }
size_t copies_bytes(const core::Shape& s) {
  const int64_t elems = s.kv_elems() + s.v_elems() + (s.quantized_q() ? s.q_elems() : 0);
  return copies_kv(s) ? static_cast<size_t>(elems) * core::dtype_bytes(s.out_dtype()) : 0;
}
// fp8 prefill's four fp32 scalars (Fp8Scalar): a 256-byte slot after its copies, at this many bytes
// from the copies' start.
constexpr size_t kFp8ScalarBytes = 256;
size_t fp8_scalars_after_copies(const core::Shape& s) { return aligned_256(copies_bytes(s)); }
size_t gathered_bytes(const core::Shape& s) {
  return s.quantized_q() ? fp8_scalars_after_copies(s) + kFp8ScalarBytes : copies_bytes(s);
}
// Where the copies start: after S and P, 256-byte aligned (the gather stores 16 bytes at a time).
size_t gathered_offset(const core::Shape& s) {
  const auto scores = static_cast<size_t>(score_count(s));
  const size_t sp = scores * sizeof(float) + scores * core::dtype_bytes(s.out_dtype());
  return copies_kv(s) ? aligned_256(sp) : sp;
}
int64_t grid_for(int64_t steps) {
  return std::max<int64_t>(1, std::min(kGatherMaxBlocks, (steps + kGatherThreads - 1) / kGatherThreads));
}
int64_t gather_blocks(const core::Shape& s) {
  // A 16-byte chunk per thread step when gathering, an element when dequantizing.
  return grid_for(s.quantized_kv() ? s.kv_elems() + s.v_elems()
                                   : (s.kv_elems() + s.v_elems()) * core::dtype_bytes(s.dtype) / 16);
}

class ReferenceKernel final : public Kernel {
 public:
  std::string name() const override { return "reference"; }
  Backend backend() const override { return Backend::cuda; }
  core::KernelKind kind() const override { return core::KernelKind::materialized; }
  std::string description() const override {
    return "unfused: S = scale*QK^T (cuBLAS, fp32 S), row softmax kernel (P in dtype, LSE), "
           "O = PV (cuBLAS); S and P materialised in HBM; fp8 Q, K and V dequantized to bf16 first";
  }
  std::string unsupported_reason(const core::Shape& s) const override {
    if (s.dtype == core::DType::fp32) return "reference kernel supports fp16 and bf16 inputs only";
    if (s.backward() && s.varlen()) return "reference backward runs dense batches only (no packed variable-length batch)";
    if (s.quantized_kv() && s.varlen())
      return "reference dequantizes the KV cache of dense batches only (no packed variable-length batch)";
    if (s.hdim % 8 != 0) return "reference kernel needs hdim divisible by 8 (cuBLAS alignment)";
    if (s.seq_k > INT32_MAX || s.hdim > INT32_MAX || (s.heads / s.kv_heads) * s.seq_q > INT32_MAX)
      return "reference kernel: a GEMM dimension exceeds 2^31 (cuBLAS takes int)";
    if (s.batch * s.kv_heads > INT32_MAX) return "reference kernel: batch * kv_heads exceeds 2^31";
    if (s.batch * s.heads * s.seq_q > INT32_MAX) return "reference kernel: more than 2^31 score rows";
    return {};
  }
  bool reads_paged_kv() const override { return true; }
  bool masks_window() const override { return true; }
  bool runs_varlen() const override { return true; }
  bool runs_distinct_hdim_v() const override { return true; }  // PV is a GEMM of its own width
  bool runs_backward() const override { return true; }
  bool reads_quantized_kv() const override { return true; }
  bool runs_fp8() const override { return true; }
  size_t workspace_bytes(const core::Shape& s) const override { return gathered_offset(s) + gathered_bytes(s); }
  std::vector<std::string> stage_names(const core::Shape& s) const override {
    if (s.quantized_q()) return {"dequant_qkv", "qk_gemm", "softmax", "pv_gemm"};
    if (s.quantized_kv()) return {"dequant_kv", "qk_gemm", "softmax", "pv_gemm"};
    if (s.paged()) return {"gather_kv", "qk_gemm", "softmax", "pv_gemm"};
    std::vector<std::string> names;
    if (s.pass != core::Pass::bwd) names = {"qk_gemm", "softmax", "pv_gemm"};
    if (s.backward())
      for (const char* name : {"bwd_qk_gemm", "bwd_softmax", "bwd_dv_gemm", "bwd_dp_gemm", "bwd_ds", "bwd_dq_gemm",
                               "bwd_dk_gemm"})
        names.emplace_back(name);
    return names;
  }
  std::vector<LaunchInfo> launch_info(const core::Shape& s) const override {
    // A packed batch launches the softmax once per sequence: the longest one's launch stands for them.
    SoftmaxLaunch softmax = softmax_launch_for(longest_sequence(s));
    if (s.varlen()) softmax.name += " (one launch per sequence)";
    std::vector<LaunchInfo> out;
    const bool bf16 = s.out_dtype() == core::DType::bf16;
    if (s.quantized_q())
      out.push_back({"dequant_q_kernel", reinterpret_cast<const void*>(&dequant_q_kernel<__nv_bfloat16>),
                     grid_for(s.q_elems()), kGatherThreads, 0});
    if (s.quantized_kv())
      out.push_back({"dequant_kv_kernel",
                     bf16 ? reinterpret_cast<const void*>(&dequant_kv_kernel<__nv_bfloat16>)
                          : reinterpret_cast<const void*>(&dequant_kv_kernel<__half>),
                     gather_blocks(s), kGatherThreads, 0});
    else if (s.paged())
      out.push_back({"gather_kv_kernel", reinterpret_cast<const void*>(&gather_kv_kernel),
                     gather_blocks(s), kGatherThreads, 0});
    if (s.pass != core::Pass::bwd) {
      out.push_back({"qk_gemm (cuBLAS)", nullptr, 0, 0, 0});
      out.push_back({softmax.name, softmax.func, softmax.blocks, softmax.threads, 0});
      out.push_back({"pv_gemm (cuBLAS)", nullptr, 0, 0, 0});
    }
    if (!s.backward()) return out;
    const int64_t rows = s.batch * s.heads * s.seq_q;
    {
      out.push_back({"bwd_qk_gemm (cuBLAS)", nullptr, 0, 0, 0});
      out.push_back({"probs_from_lse_kernel",
                     bf16 ? reinterpret_cast<const void*>(&probs_from_lse_kernel<__nv_bfloat16>)
                          : reinterpret_cast<const void*>(&probs_from_lse_kernel<__half>),
                     probs_blocks(rows * s.seq_k), kSoftmaxThreads, 0});
    }
    out.push_back({"bwd_dv_gemm (cuBLAS)", nullptr, 0, 0, 0});
    out.push_back({"bwd_dp_gemm (cuBLAS)", nullptr, 0, 0, 0});
    out.push_back({"dsoftmax_rows_kernel",
                   bf16 ? reinterpret_cast<const void*>(&dsoftmax_rows_kernel<__nv_bfloat16>)
                        : reinterpret_cast<const void*>(&dsoftmax_rows_kernel<__half>),
                   rows, kSoftmaxThreads, 0});
    out.push_back({"bwd_dq_gemm (cuBLAS)", nullptr, 0, 0, 0});
    out.push_back({"bwd_dk_gemm (cuBLAS)", nullptr, 0, 0, 0});
    return out;
  }

  void launch(const AttentionArgs& a, StageHook* hook) const override {
    const core::Shape& s = a.shape;
    if (const std::string why = unsupported_reason(s); !why.empty()) throw CudaError(why);
    if (a.workspace_bytes < workspace_bytes(s))
      throw CudaError("reference kernel: workspace of " + std::to_string(a.workspace_bytes) +
                      " bytes is smaller than the " + std::to_string(workspace_bytes(s)) + " needed");
    const nvtx3::scoped_range range("reference " + s.label());
    if (s.out_dtype() == core::DType::bf16)
      run<__nv_bfloat16>(a, hook, CUDA_R_16BF);
    else
      run<__half>(a, hook, CUDA_R_16F);
  }

 private:
  template <typename T>
  void run(const AttentionArgs& a, StageHook* hook, cudaDataType_t io_type) const {
    const core::Shape& s = a.shape;
    const Geometry g = geometry_of(s);
    auto stream = static_cast<cudaStream_t>(a.stream);
    float* scores = static_cast<float*>(a.workspace);
    T* probs = reinterpret_cast<T*>(static_cast<char*>(a.workspace) + score_count(s) * sizeof(float));
    const void* q = a.q;
    const void* k = a.k;
    const void* v = a.v;
    float* fp8_scalars = s.quantized_q() ? reinterpret_cast<float*>(static_cast<char*>(a.workspace) + gathered_offset(s) +
                                                                    fp8_scalars_after_copies(s))
                                         : nullptr;
    int stage = 0;
    if (s.quantized_kv()) {
      if (a.k_scale == nullptr || a.v_scale == nullptr) throw CudaError("reference kernel: a quantized KV cache without scales");
      if (s.paged() && a.block_table == nullptr) throw CudaError("reference kernel: a paged shape without a block table");
      if (s.quantized_q() && a.q_scale == nullptr) throw CudaError("reference kernel: fp8 Q without its scale");
      T* k_out = reinterpret_cast<T*>(static_cast<char*>(a.workspace) + gathered_offset(s));
      T* v_out = k_out + s.kv_elems();
      if (hook) hook->before_stage(stage);
      ++stage;
      const float* k_scale = a.k_scale;
      const float* v_scale = a.v_scale;
      if (s.quantized_q()) {
        fp8_scalars_kernel<<<1, 1, 0, stream>>>(a.q_scale, a.k_scale, a.v_scale,
                                                static_cast<float>(core::softmax_scale(s)), fp8_scalars);
        ATTNPROF_CUDA_CHECK(cudaGetLastError());
        T* q_out = v_out + s.v_elems();
        dequant_q_kernel<T><<<static_cast<unsigned>(grid_for(s.q_elems())), kGatherThreads, 0, stream>>>(
            static_cast<const uint8_t*>(a.q), fp8_scalars + kOne, q_out, s.q_elems());
        ATTNPROF_CUDA_CHECK(cudaGetLastError());
        q = q_out;
        k_scale = v_scale = fp8_scalars + kOne;
      }
      dequant_kv_kernel<T><<<static_cast<unsigned>(gather_blocks(s)), kGatherThreads, 0, stream>>>(
          static_cast<const uint8_t*>(a.k), static_cast<const uint8_t*>(a.v), k_scale, v_scale,
          s.paged() ? a.block_table : nullptr, k_out, v_out, s.kv_elems(), s.v_elems(), s.pages_per_seq(), s.kv_heads,
          s.seq_k, std::max<int64_t>(1, s.page_size), s.hdim, s.value_hdim(), s.kv_dtype, s.kv_scale);
      ATTNPROF_CUDA_CHECK(cudaGetLastError());
      k = k_out;
      v = v_out;
    } else if (s.paged()) {
      if (a.block_table == nullptr) throw CudaError("reference kernel: a paged shape without a block table");
      auto* k_out = reinterpret_cast<uint4*>(static_cast<char*>(a.workspace) + gathered_offset(s));
      auto* v_out = k_out + s.kv_elems() * sizeof(T) / sizeof(uint4);
      if (hook) hook->before_stage(stage);
      ++stage;
      constexpr int64_t kChunkBytes = sizeof(uint4);
      gather_kv_kernel<<<static_cast<unsigned>(gather_blocks(s)), kGatherThreads, 0, stream>>>(
          static_cast<const uint4*>(a.k), static_cast<const uint4*>(a.v), a.block_table, k_out, v_out,
          s.kv_elems() * static_cast<int64_t>(sizeof(T)) / kChunkBytes,
          s.v_elems() * static_cast<int64_t>(sizeof(T)) / kChunkBytes, s.pages_per_seq(), s.kv_heads, s.seq_k,
          s.page_size, s.hdim * static_cast<int64_t>(sizeof(T)) / kChunkBytes,
          s.value_hdim() * static_cast<int64_t>(sizeof(T)) / kChunkBytes);
      ATTNPROF_CUDA_CHECK(cudaGetLastError());
      k = k_out;
      v = v_out;
    }
    const float scale = static_cast<float>(core::softmax_scale(s));
    const float one = 1.f, zero = 0.f;

    int device = 0;
    ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(handle_table().mutex);
    cublasHandle_t handle = handle_for_device_locked(device);
    ATTNPROF_CUBLAS_CHECK(cublasSetStream(handle, stream));
    if (s.varlen()) {
      run_packed<T>(a, hook, io_type, handle, scores, probs);
      return;
    }
    if (s.pass == core::Pass::bwd) {
      backward<T>(a, hook, io_type, handle, scores, probs, stage);
      return;
    }

    // fp8 prefill: alpha and beta from its scalars in the workspace.
    const bool fp8 = fp8_scalars != nullptr;
    const DevicePointerMode pointer_mode(handle, fp8);
    const float* alpha_s = fp8 ? fp8_scalars + kAlphaS : &scale;
    const float* alpha_o = fp8 ? fp8_scalars + kAlphaO : &one;
    const float* beta = fp8 ? fp8_scalars + kZero : &zero;

    // Row-major S (rows x seq_k) is column-major S^T = K Q^T: A = K (stored d x seq_k column-major,
    // transposed), B = Q (d x rows column-major).
    if (hook) hook->before_stage(stage++);
    ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(g.seq_k), static_cast<int>(g.rows_per_batch),
        static_cast<int>(g.hdim), alpha_s, k, io_type, static_cast<int>(g.hdim), g.seq_k * g.hdim,
        q, io_type, static_cast<int>(g.hdim), g.rows_per_batch * g.hdim, beta, scores, CUDA_R_32F,
        static_cast<int>(g.seq_k), g.rows_per_batch * g.seq_k, g.batch_count, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));

    if (hook) hook->before_stage(stage++);
    const SoftmaxLaunch softmax = softmax_launch_for<T>(s);
    softmax.enqueue(softmax, scores, probs, a.lse, s, s.seq_q, stream);
    ATTNPROF_CUDA_CHECK(cudaGetLastError());

    // Row-major O (rows x dv) is column-major O^T = V^T P^T: A = V (dv x seq_k column-major),
    // B = P (seq_k x rows column-major).
    if (hook) hook->before_stage(stage);
    ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(g.hdim_v), static_cast<int>(g.rows_per_batch),
        static_cast<int>(g.seq_k), alpha_o, v, io_type, static_cast<int>(g.hdim_v), g.seq_k * g.hdim_v, probs,
        io_type, static_cast<int>(g.seq_k), g.rows_per_batch * g.seq_k, beta, a.o, io_type,
        static_cast<int>(g.hdim_v), g.rows_per_batch * g.hdim_v, g.batch_count, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
    if (s.pass == core::Pass::fwd_bwd) {
      backward<T>(a, hook, io_type, handle, scores, probs, stage + 1);
      return;
    }
    if (hook) hook->after_last();
  }

  // The backward's stages (see the top of the file) from stage `stage` on.
  template <typename T>
  void backward(const AttentionArgs& a, StageHook* hook, cudaDataType_t io_type, cublasHandle_t handle, float* scores,
                T* probs, int stage) const {
    const core::Shape& s = a.shape;
    const Geometry g = geometry_of(s);
    auto stream = static_cast<cudaStream_t>(a.stream);
    if (a.d_o == nullptr || a.dq == nullptr || a.dk == nullptr || a.dv == nullptr)
      throw CudaError("reference kernel: a backward call without dO, dQ, dK and dV");
    const float scale = static_cast<float>(core::softmax_scale(s));
    const float one = 1.f, zero = 0.f;
    const int m_rows = static_cast<int>(g.rows_per_batch), n_keys = static_cast<int>(g.seq_k),
              d = static_cast<int>(g.hdim), dv = static_cast<int>(g.hdim_v);
    const int64_t rows = s.batch * s.heads * s.seq_q;
    {
      if (hook) hook->before_stage(stage++);
      ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          handle, CUBLAS_OP_T, CUBLAS_OP_N, n_keys, m_rows, d, &scale, a.k, io_type, d, g.seq_k * g.hdim, a.q, io_type,
          d, g.rows_per_batch * g.hdim, &zero, scores, CUDA_R_32F, n_keys, g.rows_per_batch * g.seq_k, g.batch_count,
          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      if (hook) hook->before_stage(stage++);
      probs_from_lse_kernel<T><<<static_cast<unsigned>(probs_blocks(rows * s.seq_k)), kSoftmaxThreads, 0, stream>>>(
          scores, a.lse, probs, rows, s.seq_q, s.seq_k, s.causal, clamped_window(s));
      ATTNPROF_CUDA_CHECK(cudaGetLastError());
    }
    // Row-major dV (seq_k x dv) is column-major dV^T = dO^T P: A = dO (dv x rows), B = P^T (P is
    // seq_k x rows column-major).
    if (hook) hook->before_stage(stage++);
    ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_T, dv, n_keys, m_rows, &one, a.d_o, io_type, dv, g.rows_per_batch * g.hdim_v,
        probs, io_type, n_keys, g.rows_per_batch * g.seq_k, &zero, a.dv, io_type, dv, g.seq_k * g.hdim_v,
        g.batch_count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // Row-major dP (rows x seq_k) is column-major dP^T = V dO^T: A = V^T (V is dv x seq_k column-major),
    // B = dO (dv x rows).
    if (hook) hook->before_stage(stage++);
    ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, n_keys, m_rows, dv, &one, a.v, io_type, dv, g.seq_k * g.hdim_v, a.d_o,
        io_type, dv, g.rows_per_batch * g.hdim_v, &zero, scores, CUDA_R_32F, n_keys, g.rows_per_batch * g.seq_k,
        g.batch_count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (hook) hook->before_stage(stage++);
    dsoftmax_rows_kernel<T><<<static_cast<unsigned>(rows), kSoftmaxThreads, 0, stream>>>(
        scores, probs, static_cast<const T*>(a.d_o), static_cast<const T*>(a.o), s.seq_k, s.value_hdim());
    ATTNPROF_CUDA_CHECK(cudaGetLastError());
    // Row-major dQ (rows x d) is column-major dQ^T = K^T dS^T: A = K (d x seq_k), B = dS (seq_k x rows).
    if (hook) hook->before_stage(stage++);
    ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, d, m_rows, n_keys, &scale, a.k, io_type, d, g.seq_k * g.hdim, probs, io_type,
        n_keys, g.rows_per_batch * g.seq_k, &zero, a.dq, io_type, d, g.rows_per_batch * g.hdim, g.batch_count,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // Row-major dK (seq_k x d) is column-major dK^T = Q^T dS: A = Q (d x rows), B = dS^T.
    if (hook) hook->before_stage(stage);
    ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_T, d, n_keys, m_rows, &scale, a.q, io_type, d, g.rows_per_batch * g.hdim, probs,
        io_type, n_keys, g.rows_per_batch * g.seq_k, &zero, a.dk, io_type, d, g.seq_k * g.hdim, g.batch_count,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (hook) hook->after_last();
  }

  // A packed batch: the same three stages, one sequence at a time (the reference is there to be right).
  // Sequence b's Q/O rows of one head are contiguous but its heads are tokens * hdim apart, so each GEMM
  // is one (sequence, kv head) batched over that kv head's query heads, all reading the one K and V
  // (stride 0). S and P of sequence b are its (heads, len, len) block, after the blocks of the
  // sequences before it (each block 16-byte aligned: packed_block_entries).
  template <typename T>
  void run_packed(const AttentionArgs& a, StageHook* hook, cudaDataType_t io_type, cublasHandle_t handle,
                  float* scores, T* probs) const {
    const core::Shape& s = a.shape;
    auto stream = static_cast<cudaStream_t>(a.stream);
    const std::vector<int64_t> cu = s.cu_seqlens();
    const int64_t tokens = s.tokens_q(), d = s.hdim, dv = s.value_hdim(), group = s.heads / s.kv_heads;
    std::vector<int64_t> score_base(cu.size() - 1);  // first entry of sequence b's (heads, len, len) block
    for (size_t b = 0, next = 0; b < score_base.size(); ++b) {
      score_base[b] = static_cast<int64_t>(next);
      next += static_cast<size_t>(packed_block_entries(s, s.seq_lens[b]));
    }
    const auto* q = static_cast<const T*>(a.q);
    const auto* k = static_cast<const T*>(a.k);
    const auto* v = static_cast<const T*>(a.v);
    auto* o = static_cast<T*>(a.o);
    const float scale = static_cast<float>(core::softmax_scale(s));
    const float one = 1.f, zero = 0.f;
    // Element offset of token `start` of head h in Q (or kv head h in K), rows `width` apart: d for Q
    // and K, dv for V and O.
    const auto row0 = [&](int64_t h, int64_t start, int64_t width) { return (h * tokens + start) * width; };

    if (hook) hook->before_stage(0);
    for (size_t b = 0; b < score_base.size(); ++b) {
      const int64_t len = s.seq_lens[b], start = cu[b];
      for (int64_t g = 0; g < s.kv_heads; ++g)
        ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(len), static_cast<int>(len), static_cast<int>(d),
            &scale, k + row0(g, start, d), io_type, static_cast<int>(d), 0, q + row0(g * group, start, d), io_type,
            static_cast<int>(d), tokens * d, &zero, scores + score_base[b] + g * group * len * len, CUDA_R_32F,
            static_cast<int>(len), len * len, static_cast<int>(group), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }

    if (hook) hook->before_stage(1);
    for (size_t b = 0; b < score_base.size(); ++b) {
      const core::Shape seq = s.sequence(static_cast<int64_t>(b));
      const SoftmaxLaunch softmax = softmax_launch_for<T>(seq);
      softmax.enqueue(softmax, scores + score_base[b], probs + score_base[b], a.lse + cu[b], seq, tokens, stream);
      ATTNPROF_CUDA_CHECK(cudaGetLastError());
    }

    if (hook) hook->before_stage(2);
    for (size_t b = 0; b < score_base.size(); ++b) {
      const int64_t len = s.seq_lens[b], start = cu[b];
      for (int64_t g = 0; g < s.kv_heads; ++g)
        ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(dv), static_cast<int>(len), static_cast<int>(len), &one,
            v + row0(g, start, dv), io_type, static_cast<int>(dv), 0, probs + score_base[b] + g * group * len * len,
            io_type, static_cast<int>(len), len * len, &zero, o + row0(g * group, start, dv), io_type,
            static_cast<int>(dv), tokens * dv, static_cast<int>(group), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    if (hook) hook->after_last();
  }
};

const ReferenceKernel kInstance;
const Registrar kReg{&kInstance};

}  // namespace

}  // namespace attnprof::kernels
