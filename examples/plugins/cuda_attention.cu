// An attnprof plugin with one CUDA kernel: attention forward written for clarity, not speed.
// One warp computes one query row: for each visible key it takes the dot product q.k across the
// warp, then updates the online softmax (running max m, running sum l) and the output accumulator.
// Lane t holds elements t, t + 32, ... of the row, so hdim may be any multiple of 32 up to 256.
// Tensors are read through their strides, so both of attnprof's layouts (BHSD, BSHD) work. It runs
// sliding windows (a row's keys are cut to its window) and packed variable-length batches (a warp
// finds its row's sequence in cu_seqlens by binary search), plugin ABI version 2's additions, and reads
// a quantized KV cache (K and V one byte per element, fp8 E4M3 or int8, with float32 scales per
// tensor, per kv head or per token), version 4's: a key row's scale multiplies its dot product, a
// value row's its softmax weight.
//
// Build outside attnprof (docs/plugins.md):
//   nvcc -shared -Xcompiler -fPIC -O2 -arch=sm_90 -I<attnprof>/include cuda_attention.cu -o cuda_attention.so
// Run:
//   attnprof sweep --plugin ./cuda_attention.so --kernels example-cuda,fused --axes "seq=512,1024;hdim=64,128"
//   attnprof sweep --plugin ./cuda_attention.so --kernels example-cuda,fused \
//     --axes "batch=8;heads=8;hdim=128;causal=1;window=0,256;lengths=uniform:64:1024"
//   attnprof sweep --plugin ./cuda_attention.so --kernels example-cuda,decode \
//     --axes "batch=8;heads=32;kv_heads=8;seq_q=1;seq_k=4096;hdim=128;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head"
#include <attnprof/plugin.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

// The name, layouts and flags are macros so that attnprof's GPU test can build a twin that takes
// only BSHD and is neither pure nor graph-capturable (tests/plugins/CMakeLists.txt).
#ifndef EXAMPLE_CUDA_NAME
#define EXAMPLE_CUDA_NAME "example-cuda"
#endif
#ifndef EXAMPLE_CUDA_LAYOUTS
#define EXAMPLE_CUDA_LAYOUTS (ATTNPROF_LAYOUT_BHSD | ATTNPROF_LAYOUT_BSHD)
#endif
#ifndef EXAMPLE_CUDA_FLAGS
#define EXAMPLE_CUDA_FLAGS                                                                                 \
  (ATTNPROF_KERNEL_PURE | ATTNPROF_KERNEL_GRAPH_CAPTURABLE | ATTNPROF_KERNEL_WRITES_LSE |                      \
   ATTNPROF_KERNEL_MASKS_WINDOW | ATTNPROF_KERNEL_RUNS_VARLEN | ATTNPROF_KERNEL_READS_QUANTIZED_KV)
#endif

namespace {

constexpr int kWarpsPerBlock = 4;

__device__ float to_float(float x) { return x; }
__device__ float to_float(__half x) { return __half2float(x); }
__device__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ T from_float(float x);
template <> __device__ float from_float<float>(float x) { return x; }
template <> __device__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

struct Problem {
  attnprof_shape shape;
  attnprof_tensors t;
};

// Element (b, h, s, d) of a tensor: its address from the strides attnprof handed over.
template <typename T>
__device__ const T& at(const attnprof_tensor& x, int64_t b, int64_t h, int64_t s, int64_t d) {
  const T* base = reinterpret_cast<const T*>(x.data);
  return base[b * x.stride[0] + h * x.stride[1] + s * x.stride[2] + d * x.stride[3]];
}

// Element (b, h, s, d) of K or V as a float, at scale 1: in the dtype, or a quantized byte's value
// (E4M3, or int8).
template <typename T>
__device__ float kv_value(const attnprof_shape& n, const attnprof_tensor& x, int64_t b, int64_t h, int64_t s, int64_t d) {
  if (n.kv_dtype == ATTNPROF_KV_DTYPE_NONE) return to_float(at<T>(x, b, h, s, d));
  const uint8_t byte = at<uint8_t>(x, b, h, s, d);
  if (n.kv_dtype == ATTNPROF_KV_DTYPE_INT8) return static_cast<float>(static_cast<int8_t>(byte));
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(byte, __NV_E4M3)));
}

// The scale of row s of kv head h of K or V (`width` wide; `scales` its k_scale or v_scale): 1 when not
// quantized, else the tensor's, the kv head's, or the row's own, at the row's offset / width (plugin.h).
__device__ float kv_row_scale(const attnprof_shape& n, const attnprof_tensor& x, attnprof_deviceptr scales,
                              int64_t width, int64_t b, int64_t h, int64_t s) {
  if (n.kv_dtype == ATTNPROF_KV_DTYPE_NONE) return 1.f;
  const float* scale = reinterpret_cast<const float*>(scales);
  if (n.kv_scale == ATTNPROF_KV_SCALE_TENSOR) return scale[0];
  if (n.kv_scale == ATTNPROF_KV_SCALE_HEAD) return scale[h];
  return scale[(b * x.stride[0] + h * x.stride[1] + s * x.stride[2]) / width];
}

// Query rows of one call: (b * heads + h) * seq_q + i dense, h * total_tokens + token packed.
__host__ __device__ int64_t query_rows(const attnprof_shape& n) {
  return n.packed_seqs > 0 ? n.heads * n.total_tokens : n.batch * n.heads * n.seq_q;
}

// The keys [begin, end) row i of a sequence of seq_q queries and seq_k keys sees (plugin.h's masks).
__device__ void keys_of_row(const attnprof_shape& n, int64_t seq_q, int64_t seq_k, int64_t i, int64_t* begin,
                            int64_t* end) {
  const int64_t p = i + seq_k - seq_q;  // bottom-right alignment
  const int64_t w = min(n.window, seq_q + seq_k);  // a wider window cuts nothing; p + w cannot overflow
  int64_t e = n.causal ? p + 1 : (w > 0 ? p + w : seq_k);
  e = min(seq_k, max(int64_t{0}, e));
  *begin = w > 0 ? min(e, max(int64_t{0}, p - w + 1)) : 0;
  *end = e;
}

// kPerLane = hdim / 32: the row's elements each lane holds.
template <typename T, int kPerLane>
__global__ void attention_rows(Problem p) {
  const attnprof_shape& n = p.shape;
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= query_rows(n)) return;
  int64_t b, h, i, first = 0, seq_q = n.seq_q, seq_k = n.seq_k;
  if (n.packed_seqs > 0) {
    // Token t of head h; its sequence b is the last whose first token cu_seqlens[b] <= t.
    const int32_t* cu_seqlens = reinterpret_cast<const int32_t*>(p.t.cu_seqlens);
    const int64_t t = row % n.total_tokens;
    h = row / n.total_tokens;
    int64_t lo = 0, hi = n.packed_seqs - 1;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (cu_seqlens[mid] <= t) lo = mid;
      else hi = mid - 1;
    }
    b = lo, first = cu_seqlens[b], i = t - first;
    seq_q = seq_k = cu_seqlens[b + 1] - first;
  } else {
    i = row % n.seq_q, h = (row / n.seq_q) % n.heads, b = row / (n.seq_q * n.heads);
  }
  const int64_t kv_h = h / (n.heads / n.kv_heads);
  int64_t key_begin, key_end;
  keys_of_row(n, seq_q, seq_k, i, &key_begin, &key_end);

  // A packed sequence's rows are rows first .. first + seq_q - 1 of the one batch entry (stride[0] 0).
  float q[kPerLane], acc[kPerLane];
  for (int e = 0; e < kPerLane; ++e) {
    q[e] = to_float(at<T>(p.t.q, b, h, first + i, lane + 32 * e)) * static_cast<float>(p.t.softmax_scale);
    acc[e] = 0.f;
  }
  float row_max = -INFINITY, row_sum = 0.f;
  for (int64_t j = key_begin; j < key_end; ++j) {
    float score = 0.f;
    for (int e = 0; e < kPerLane; ++e) score += q[e] * kv_value<T>(n, p.t.k, b, kv_h, first + j, lane + 32 * e);
    for (int offset = 16; offset > 0; offset /= 2) score += __shfl_xor_sync(0xffffffffu, score, offset);
    score *= kv_row_scale(n, p.t.k, p.t.k_scale, n.hdim, b, kv_h, first + j);
    const float new_max = fmaxf(row_max, score);
    const float rescale = expf(row_max - new_max);  // 0 on the first key (row_max = -inf)
    const float weight = expf(score - new_max);
    row_sum = row_sum * rescale + weight;
    const float v_weight = weight * kv_row_scale(n, p.t.v, p.t.v_scale, n.hdim_v, b, kv_h, first + j);
    for (int e = 0; e < kPerLane; ++e)
      acc[e] = acc[e] * rescale + v_weight * kv_value<T>(n, p.t.v, b, kv_h, first + j, lane + 32 * e);
    row_max = new_max;
  }
  T* o = reinterpret_cast<T*>(p.t.o.data);
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t d = lane + 32 * e;
    o[b * p.t.o.stride[0] + h * p.t.o.stride[1] + (first + i) * p.t.o.stride[2] + d * p.t.o.stride[3]] =
        from_float<T>(row_sum > 0.f ? acc[e] / row_sum : 0.f);
  }
  if (lane == 0 && p.t.lse.data != 0) {
    float* lse = reinterpret_cast<float*>(p.t.lse.data);
    lse[b * p.t.lse.stride[0] + h * p.t.lse.stride[1] + (first + i) * p.t.lse.stride[2]] =
        row_sum > 0.f ? row_max + logf(row_sum) : -INFINITY;
  }
}

template <typename T>
cudaError_t launch_rows(const Problem& p, cudaStream_t stream) {
  const int64_t rows = query_rows(p.shape);
  const dim3 grid(static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock)), block(32 * kWarpsPerBlock);
  switch (p.shape.hdim / 32) {
    case 1: attention_rows<T, 1><<<grid, block, 0, stream>>>(p); break;
    case 2: attention_rows<T, 2><<<grid, block, 0, stream>>>(p); break;
    case 3: attention_rows<T, 3><<<grid, block, 0, stream>>>(p); break;
    case 4: attention_rows<T, 4><<<grid, block, 0, stream>>>(p); break;
    case 5: attention_rows<T, 5><<<grid, block, 0, stream>>>(p); break;
    case 6: attention_rows<T, 6><<<grid, block, 0, stream>>>(p); break;
    case 7: attention_rows<T, 7><<<grid, block, 0, stream>>>(p); break;
    case 8: attention_rows<T, 8><<<grid, block, 0, stream>>>(p); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

int supports(void*, const attnprof_shape* s, char* reason, size_t size) {
  if (s->hdim % 32 != 0 || s->hdim > 256) {
    snprintf(reason, size, "hdim %lld: this example takes multiples of 32 up to 256", static_cast<long long>(s->hdim));
    return 0;
  }
  if (query_rows(*s) > int64_t{kWarpsPerBlock} * 0x7fffffff) {
    snprintf(reason, size, "more query rows than one grid dimension holds");
    return 0;
  }
  return 1;
}

int prepare(void*, const attnprof_shape* shape, const attnprof_tensors* tensors, void** state, char*, size_t) {
  Problem* p = static_cast<Problem*>(malloc(sizeof(Problem)));
  p->shape = *shape;
  p->t = *tensors;
  *state = p;
  return ATTNPROF_OK;
}

int launch(void* state, attnprof_stream stream, char* error, size_t size) {
  const Problem& p = *static_cast<Problem*>(state);
  cudaError_t e = cudaErrorInvalidValue;
  switch (p.t.element_dtype) {
    case ATTNPROF_DTYPE_FP16: e = launch_rows<__half>(p, stream); break;
    case ATTNPROF_DTYPE_BF16: e = launch_rows<__nv_bfloat16>(p, stream); break;
    case ATTNPROF_DTYPE_FP32: e = launch_rows<float>(p, stream); break;
  }
  if (e == cudaSuccess) return ATTNPROF_OK;
  snprintf(error, size, "attention_rows launch: %s", cudaGetErrorString(e));
  return 1;
}

void release(void*, void* state) { free(state); }

const attnprof_kernel kKernels[] = {{
    sizeof(attnprof_kernel),
    EXAMPLE_CUDA_NAME,
    "one warp per query row, online softmax, any layout (examples/plugins/cuda_attention.cu)",
    ATTNPROF_BACKEND_CUDA,
    ATTNPROF_COST_ATTENTION_FWD,
    EXAMPLE_CUDA_LAYOUTS,
    EXAMPLE_CUDA_FLAGS,
    nullptr,
    supports,
    nullptr,  // no workspace
    prepare,
    launch,
    release,
}};

const attnprof_plugin kPlugin = ATTNPROF_PLUGIN_INIT(1, EXAMPLE_CUDA_NAME, "1.0", kKernels);

}  // namespace

extern "C" ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) { return &kPlugin; }
