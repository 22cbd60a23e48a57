// An attnprof plugin whose kernel is library calls: three launches per call, the way unfused
// framework code runs attention. Per (batch, kv head), the query heads of a group are one matrix
// (grouped-query attention needs no copy in the BHSD layout):
//   S = scale * Q K^T   cuBLAS strided-batched GEMM, fp32 out        (workspace)
//   P = softmax(S)      this file's kernel, bottom-right causal mask  (workspace; LSE out)
//   O = P V             cuBLAS strided-batched GEMM, fp32 accumulate
// attnprof's CUPTI launch records show the cuBLAS kernels' names, grids, registers and occupancy.
//
// Build outside attnprof (docs/plugins.md):
//   nvcc -shared -Xcompiler -fPIC -O2 -arch=sm_90 -I<attnprof>/include cublas_attention.cu -lcublas -o cublas_attention.so
#include <attnprof/plugin.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

namespace {

constexpr int kSoftmaxThreads = 256;

template <typename T> __device__ T from_float(float x);
template <> __device__ float from_float<float>(float x) { return x; }
template <> __device__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float partial[kSoftmaxThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) v = is_max ? fmaxf(v, partial[w]) : v + partial[w];
  __syncthreads();
  return v;
}

// One block per row of S. Row r of the whole S is query row r of attnprof's canonical order, so
// LSE is indexed by r too. Masked entries get P = 0.
template <typename T>
__global__ void softmax_rows(const float* s, T* p, float* lse, int64_t seq_q, int64_t seq_k, int causal) {
  const int64_t r = blockIdx.x;
  const int64_t i = r % seq_q;
  const int64_t visible = causal ? min(seq_k, max(int64_t{0}, i + seq_k - seq_q + 1)) : seq_k;
  const float* row = s + r * seq_k;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_reduce(m, true);
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) sum += expf(row[j] - m);
  sum = block_reduce(sum, false);
  for (int64_t j = threadIdx.x; j < seq_k; j += blockDim.x)
    p[r * seq_k + j] = from_float<T>(j < visible ? expf(row[j] - m) / sum : 0.f);
  if (threadIdx.x == 0 && lse != nullptr) lse[r] = visible > 0 ? m + logf(sum) : -INFINITY;
}

struct State {
  attnprof_shape n;
  attnprof_tensors t;
  cublasHandle_t handle;
};

int64_t group_rows(const attnprof_shape& n) { return n.heads / n.kv_heads * n.seq_q; }  // M of one GEMM
uint64_t score_elems(const attnprof_shape& n) {
  return static_cast<uint64_t>(n.batch * n.kv_heads) * static_cast<uint64_t>(group_rows(n) * n.seq_k);
}
int element_bytes(int32_t dtype) { return dtype == ATTNPROF_DTYPE_FP32 ? 4 : 2; }
cudaDataType_t cuda_type(int32_t dtype) {
  return dtype == ATTNPROF_DTYPE_FP16 ? CUDA_R_16F : dtype == ATTNPROF_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

int supports(void*, const attnprof_shape* n, char* reason, size_t size) {
  const int64_t limit = 0x7fffffff;
  if (group_rows(*n) * n->seq_k > limit || n->batch * n->kv_heads > limit) {
    snprintf(reason, size, "a score matrix of %lld x %lld is past cuBLAS's 32-bit sizes",
             static_cast<long long>(group_rows(*n)), static_cast<long long>(n->seq_k));
    return 0;
  }
  return 1;
}

// S in fp32, then P in the element type.
uint64_t workspace_bytes(void*, const attnprof_shape* n) { return score_elems(*n) * (4 + element_bytes(n->dtype)); }

int prepare(void*, const attnprof_shape* n, const attnprof_tensors* t, void** state, char* error, size_t size) {
  if (t->element_dtype != n->dtype) {
    snprintf(error, size, "expected elements of the shape's dtype");
    return 1;
  }
  State* st = static_cast<State*>(malloc(sizeof(State)));
  if (st == nullptr) return 1;
  st->n = *n;
  st->t = *t;
  if (const cublasStatus_t s = cublasCreate(&st->handle); s != CUBLAS_STATUS_SUCCESS) {
    snprintf(error, size, "cublasCreate: %s", cublasGetStatusString(s));
    free(st);
    return 1;
  }
  *state = st;
  return ATTNPROF_OK;
}

int launch(void* state, attnprof_stream stream, char* error, size_t size) {
  const State& st = *static_cast<State*>(state);
  const attnprof_shape& n = st.n;
  const int m = static_cast<int>(group_rows(n)), keys = static_cast<int>(n.seq_k), d = static_cast<int>(n.hdim);
  const int batches = static_cast<int>(n.batch * n.kv_heads);
  const cudaDataType_t type = cuda_type(n.dtype);
  float* s = reinterpret_cast<float*>(st.t.workspace);
  void* p = s + score_elems(n);
  const float scale = static_cast<float>(st.t.softmax_scale), one = 1.f, zero = 0.f;
  cublasSetStream(st.handle, stream);
  // Row-major S (m x keys) = Q K^T is column-major S^T = K Q^T.
  cublasStatus_t status = cublasGemmStridedBatchedEx(
      st.handle, CUBLAS_OP_T, CUBLAS_OP_N, keys, m, d, &scale, reinterpret_cast<const void*>(st.t.k.data), type, d,
      int64_t{keys} * d, reinterpret_cast<const void*>(st.t.q.data), type, d, int64_t{m} * d, &zero, s, CUDA_R_32F,
      keys, int64_t{m} * keys, batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) {
    snprintf(error, size, "QK^T GEMM: %s", cublasGetStatusString(status));
    return 1;
  }
  const unsigned rows = static_cast<unsigned>(int64_t{batches} * m);
  float* lse = reinterpret_cast<float*>(st.t.lse.data);
  switch (n.dtype) {
    case ATTNPROF_DTYPE_FP16:
      softmax_rows<<<rows, kSoftmaxThreads, 0, stream>>>(s, static_cast<__half*>(p), lse, n.seq_q, n.seq_k, n.causal);
      break;
    case ATTNPROF_DTYPE_BF16:
      softmax_rows<<<rows, kSoftmaxThreads, 0, stream>>>(s, static_cast<__nv_bfloat16*>(p), lse, n.seq_q, n.seq_k, n.causal);
      break;
    default:
      softmax_rows<<<rows, kSoftmaxThreads, 0, stream>>>(s, static_cast<float*>(p), lse, n.seq_q, n.seq_k, n.causal);
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    snprintf(error, size, "softmax launch: %s", cudaGetErrorString(e));
    return 1;
  }
  // Row-major O (m x d) = P V is column-major O^T = V^T P^T.
  status = cublasGemmStridedBatchedEx(st.handle, CUBLAS_OP_N, CUBLAS_OP_N, d, m, keys, &one,
                                      reinterpret_cast<const void*>(st.t.v.data), type, d, int64_t{keys} * d, p, type,
                                      keys, int64_t{m} * keys, &zero, reinterpret_cast<void*>(st.t.o.data), type, d,
                                      int64_t{m} * d, batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) {
    snprintf(error, size, "PV GEMM: %s", cublasGetStatusString(status));
    return 1;
  }
  return ATTNPROF_OK;
}

void release(void*, void* state) {
  State* st = static_cast<State*>(state);
  cublasDestroy(st->handle);
  free(st);
}

const attnprof_kernel kKernels[] = {{
    sizeof(attnprof_kernel),
    "example-cublas",
    "cuBLAS QK^T, a softmax kernel, cuBLAS PV: three launches (examples/plugins/cublas_attention.cu)",
    ATTNPROF_BACKEND_CUDA,
    ATTNPROF_COST_ATTENTION_FWD,
    ATTNPROF_LAYOUT_BHSD,
    ATTNPROF_KERNEL_PURE | ATTNPROF_KERNEL_GRAPH_CAPTURABLE | ATTNPROF_KERNEL_WRITES_LSE,
    nullptr,
    supports,
    workspace_bytes,
    prepare,
    launch,
    release,
}};

const attnprof_plugin kPlugin = ATTNPROF_PLUGIN_INIT(1, "example-cublas", "1.0", kKernels);

}  // namespace

extern "C" ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) { return &kPlugin; }
