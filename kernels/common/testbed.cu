// CUDA testbed for one attention problem (kernels/common/testbed.hpp): device buffers, counter-based
// inputs generated on the device, NaN-poisoned outputs, and verification that counts unwritten
// elements over all of O and LSE on the device but copies back only the rows the float64 reference
// checks.
#include "kernels/common/testbed.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/layout.hpp"
#include "kernels/common/paged.hpp"
#include "kernels/common/quant.hpp"
#include "kernels/common/random.hpp"
#include "kernels/common/verify.hpp"

namespace attnprof::kernels {

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU; the kernels below are grid-stride loops.
constexpr int64_t kMaxBlocks = 4096;

int blocks_for(int64_t elems) {
  const int64_t blocks = (elems + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// Element i of the buffer (in the kernel's layout) holds canonical element canonical_index(map, i).
template <typename T>
__global__ void fill_kernel(T* out, int64_t elems, TensorMap map, uint64_t seed, int tensor, int q_scale_log2) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elems;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = from_float<T>(input_value(seed, tensor, static_cast<uint64_t>(canonical_index(map, i)), q_scale_log2));
}

// Paged K or V: logical element i (canonical bhsd index over [batch, kv_heads, seq_k, hdim], hdim
// being V's own width for V) goes to its place in the page pool.
template <typename T>
__global__ void fill_paged_kernel(T* pool, int64_t elems, const int32_t* table, int64_t pages_per_seq, int64_t kv_heads,
                                  int64_t seq_k, int64_t page_size, int64_t hdim, uint64_t seed, int tensor) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elems; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t d = i % hdim;
    const int64_t j = (i / hdim) % seq_k;
    const int64_t bh = i / (hdim * seq_k);
    const int64_t h = bh % kv_heads, b = bh / kv_heads;
    pool[paged_offset(table, pages_per_seq, kv_heads, page_size, hdim, b, h, j, d)] =
        from_float<T>(input_value(seed, tensor, static_cast<uint64_t>(i), 0));
  }
}

// A quantized K or V (kernels/common/quant.hpp): one thread per logical row r (canonical, over [batch,
// kv_heads, seq_k] or packed), `width` wide. Its bytes go to the row's place (through the layout map,
// or the block table when `table` is set) and, per token, its scale to scales[offset / width].
__global__ void fill_quant_rows_kernel(uint8_t* out, float* scales, int64_t rows, int64_t width, TensorMap map,
                                       const int32_t* table, int64_t pages_per_seq, int64_t kv_heads, int64_t seq_k,
                                       int64_t page_size, core::KvDType type, core::KvScale granularity, uint64_t seed,
                                       int tensor) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows; r += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t first = static_cast<uint64_t>(r * width);  // canonical index of the row's first element
    float amax = 0;
    for (int64_t d = 0; d < width; ++d) amax = fmaxf(amax, fabsf(input_value(seed, tensor, first + d, 0)));
    const float scale = scale_of(type, granularity, amax);
    int64_t offset = 0;
    if (table != nullptr) {
      const int64_t j = r % seq_k, bh = r / seq_k;
      offset = paged_offset(table, pages_per_seq, kv_heads, page_size, width, bh / kv_heads, bh % kv_heads, j, 0);
    } else {
      offset = physical_row_offset(map, r);
    }
    for (int64_t d = 0; d < width; ++d) out[offset + d] = quantize(type, input_value(seed, tensor, first + d, 0), scale);
    if (granularity == core::KvScale::token) scales[offset / width] = scale;
  }
}

// fp8 prefill's Q (kernels/common/quant.hpp): element i of the buffer, in the kernel's layout, holds the
// E4M3 byte of canonical element canonical_index(map, i) at the tensor's one scale.
__global__ void fill_quant_q_kernel(uint8_t* out, int64_t elems, TensorMap map, uint64_t seed, int q_scale_log2,
                                    float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elems; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = quantize(core::KvDType::fp8_e4m3,
                      input_value(seed, 0, static_cast<uint64_t>(canonical_index(map, i)), q_scale_log2), scale);
}

__global__ void fill_value_kernel(float* out, int64_t elems, float value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elems; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = value;
}

// O (or a gradient): NaN or inf anywhere means unwritten or broken. LSE: only NaN (a row with no visible key
// legitimately has LSE = -inf).
template <typename T>
__global__ void count_bad_kernel(const T* o, int64_t o_elems, const float* lse, int64_t lse_elems,
                                 unsigned long long* bad) {
  unsigned long long local = 0;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < o_elems; i += stride)
    local += isfinite(to_float(o[i])) ? 0 : 1;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < lse_elems; i += stride)
    local += isnan(lse[i]) ? 1 : 0;
  for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffffu, local, offset);
  if ((threadIdx.x & 31) == 0 && local != 0) atomicAdd(bad, local);
}

// The whole tensor as float in the canonical order (the float64 backward reads all of O).
template <typename T>
__global__ void to_canonical_kernel(const T* x, int64_t elems, TensorMap map, float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elems; i += int64_t{gridDim.x} * blockDim.x)
    out[canonical_index(map, i)] = to_float(x[i]);
}

// The canonical rows `rows` of a tensor, `width` wide, as float.
template <typename T>
__global__ void gather_tensor_rows_kernel(const T* x, TensorMap map, const int64_t* rows, int row_count, int width,
                                          float* out) {
  const int64_t total = int64_t{row_count} * width;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = to_float(x[physical_row_offset(map, rows[i / width]) + i % width]);
}

// Copies the sampled rows of O (converted to float) and LSE into compact buffers.
template <typename T>
__global__ void gather_rows_kernel(const T* o, TensorMap o_map, const float* lse, const int64_t* rows, int row_count,
                                   int hdim, float* o_rows, float* lse_rows) {
  const int64_t total = int64_t{row_count} * hdim;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / hdim, c = i % hdim;
    o_rows[i] = to_float(o[physical_row_offset(o_map, rows[r]) + c]);
    if (c == 0) lse_rows[r] = lse[rows[r]];
  }
}

TensorMap q_map(const core::Shape& s, Layout l) { return q_tensor_map(s, l == Layout::bshd); }
TensorMap o_map(const core::Shape& s, Layout l) { return o_tensor_map(s, l == Layout::bshd); }
TensorMap kv_map(const core::Shape& s, Layout l) { return kv_tensor_map(s, l == Layout::bshd); }
TensorMap v_map(const core::Shape& s, Layout l) { return v_tensor_map(s, l == Layout::bshd); }

void* device_alloc(size_t bytes, size_t& total) {
  void* p = nullptr;
  if (bytes == 0) return nullptr;
  ATTNPROF_CUDA_CHECK(cudaMalloc(&p, bytes));
  total += bytes;
  return p;
}

// Scratch device memory of a verification, freed on every way out.
struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceScratch = std::unique_ptr<void, CudaFree>;
template <typename T>
T* scratch(size_t count, std::vector<DeviceScratch>& owned) {
  size_t unused = 0;
  owned.emplace_back(device_alloc(std::max<size_t>(count, 1) * sizeof(T), unused));
  return static_cast<T*>(owned.back().get());
}

// The built-in forward that gives a backward check its LSE when the kernel writes none: `fused`, else
// `reference`, whichever runs the forward shape `fwd`; nullptr when neither does.
const Kernel* lse_writer_for(const core::Shape& fwd) {
  for (const char* name : {"fused", "reference"})
    if (const Kernel* k = find(Backend::cuda, name); k && k->writes_lse() && support_reason(*k, fwd).empty()) return k;
  return nullptr;
}

// A backward shape's workspace holds the forward's its fill_inputs runs (the kernel's, or a built-in's
// for LSE).
size_t workspace_for(const core::Shape& shape, const Kernel& kernel) {
  size_t bytes = kernel.workspace_bytes(shape);
  if (shape.backward()) {
    core::Shape fwd = shape;
    fwd.pass = core::Pass::fwd;
    bytes = std::max(bytes, kernel.workspace_bytes(fwd));
    // A kernel without LSE borrows a built-in forward's (CudaProblem::run_forward).
    if (!kernel.writes_lse())
      if (const Kernel* writer = lse_writer_for(fwd)) bytes = std::max(bytes, writer->workspace_bytes(fwd));
  }
  return bytes;
}

// The element type of a tensor held in `dtype`: Q, K and V of a float dtype, O in Shape::out_dtype. fp8
// prefill's E4M3 bytes have none here: fill_quantized_q and fill_quantized_kv write them.
template <typename Fn>
void dispatch_dtype(core::DType dtype, Fn&& fn) {
  switch (dtype) {
    case core::DType::fp32: fn(float{}); return;
    case core::DType::fp16: fn(__half{}); return;
    case core::DType::bf16: fn(__nv_bfloat16{}); return;
    case core::DType::fp8_e4m3: break;
  }
  throw std::logic_error("testbed: no element type for fp8 E4M3 tensors (they are filled as bytes)");
}

}  // namespace

CudaProblem::CudaProblem(const core::Shape& shape, const Kernel& kernel)
    : CudaProblem(shape, workspace_for(shape, kernel), 0, kernel.layout(), kernel.writes_lse()) {
  kernel_ = &kernel;
}

CudaProblem::CudaProblem(const core::Shape& shape, size_t workspace_bytes, int q_scale_log2, Layout layout,
                         bool check_lse)
    : shape_(shape), workspace_bytes_(workspace_bytes), q_scale_log2_(q_scale_log2), layout_(layout),
      check_lse_(check_lse) {
  if (q_scale_log2 < 0 || q_scale_log2 > kMaxQScaleLog2)
    throw std::invalid_argument("CudaProblem: q_scale_log2 must be in [0, " + std::to_string(kMaxQScaleLog2) + "]");
  const size_t elem = static_cast<size_t>(core::dtype_bytes(shape.dtype));  // 1 for fp8 prefill
  const size_t out_elem = static_cast<size_t>(core::dtype_bytes(shape.out_dtype()));  // O's: bf16 for fp8
  try {
    q_ = device_alloc(shape.q_elems() * elem, allocated_bytes_);
    if (shape.quantized_q()) q_scale_ = static_cast<float*>(device_alloc(sizeof(float), allocated_bytes_));
    const size_t kv_elem = static_cast<size_t>(shape.kv_elem_bytes());  // 1 when quantized
    k_ = device_alloc(shape.kv_buffer_elems() * kv_elem, allocated_bytes_);
    v_ = device_alloc(shape.v_buffer_elems() * kv_elem, allocated_bytes_);  // V and O: value_hdim() wide
    k_scale_ = static_cast<float*>(device_alloc(shape.kv_scale_elems() * sizeof(float), allocated_bytes_));
    v_scale_ = static_cast<float*>(device_alloc(shape.kv_scale_elems() * sizeof(float), allocated_bytes_));
    o_ = device_alloc(shape.o_elems() * out_elem, allocated_bytes_);
    lse_ = static_cast<float*>(device_alloc(shape.lse_elems() * sizeof(float), allocated_bytes_));
    workspace_ = device_alloc(workspace_bytes, allocated_bytes_);
    if (shape.backward()) {
      do_ = device_alloc(shape.o_elems() * elem, allocated_bytes_);
      dq_ = device_alloc(shape.q_elems() * elem, allocated_bytes_);
      dk_ = device_alloc(shape.kv_elems() * elem, allocated_bytes_);
      dv_ = device_alloc(shape.v_elems() * elem, allocated_bytes_);
    }
    // Zero once (untimed): a kernel may keep state there that it returns to zero (Kernel::workspace_bytes).
    if (workspace_ != nullptr) ATTNPROF_CUDA_CHECK(cudaMemset(workspace_, 0, workspace_bytes));
    if (shape.paged())
      block_table_ = static_cast<int32_t*>(device_alloc(shape.block_table_elems() * sizeof(int32_t), allocated_bytes_));
    if (shape.varlen()) {
      // Fixed by the shape: copied once here (untimed), never rewritten.
      std::vector<int32_t> cu;
      for (int64_t start : shape.cu_seqlens()) cu.push_back(static_cast<int32_t>(start));  // validate(): < 2^31
      cu_seqlens_ = static_cast<int32_t*>(device_alloc(cu.size() * sizeof(int32_t), allocated_bytes_));
      ATTNPROF_CUDA_CHECK(cudaMemcpy(cu_seqlens_, cu.data(), cu.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    }
  } catch (...) {
    for (void* p : {q_, k_, v_, o_, static_cast<void*>(lse_), workspace_, static_cast<void*>(block_table_),
                    static_cast<void*>(cu_seqlens_), do_, dq_, dk_, dv_, static_cast<void*>(k_scale_),
                    static_cast<void*>(v_scale_), static_cast<void*>(q_scale_)})
      if (p) cudaFree(p);
    throw;
  }
}

CudaProblem::~CudaProblem() {
  for (void* p : {q_, k_, v_, o_, static_cast<void*>(lse_), workspace_, static_cast<void*>(block_table_),
                  static_cast<void*>(cu_seqlens_), do_, dq_, dk_, dv_, static_cast<void*>(k_scale_),
                  static_cast<void*>(v_scale_), static_cast<void*>(q_scale_)})
    if (p) cudaFree(p);
}

void CudaProblem::fill_inputs(uint64_t seed, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (shape_.quantized_q()) {
    fill_quantized_q(seed, stream);  // fp8 prefill; its K and V are a quantized cache's, below
  } else {
    dispatch_dtype(shape_.dtype, [&](auto tag) {
      using T = decltype(tag);
      const int64_t q_elems = shape_.q_elems(), k_elems = shape_.kv_elems(), v_elems = shape_.v_elems();
      const TensorMap qm = q_map(shape_, layout_), km = kv_map(shape_, layout_), vm = v_map(shape_, layout_);
      fill_kernel<T><<<blocks_for(q_elems), kThreads, 0, s>>>(static_cast<T*>(q_), q_elems, qm, seed, 0, q_scale_log2_);
      if (do_ != nullptr)
        fill_kernel<T><<<blocks_for(shape_.o_elems()), kThreads, 0, s>>>(static_cast<T*>(do_), shape_.o_elems(),
                                                                        o_map(shape_, layout_), seed, 3, 0);
      if (shape_.quantized_kv()) return;  // below
      if (!shape_.paged()) {
        fill_kernel<T><<<blocks_for(k_elems), kThreads, 0, s>>>(static_cast<T*>(k_), k_elems, km, seed, 1, 0);
        fill_kernel<T><<<blocks_for(v_elems), kThreads, 0, s>>>(static_cast<T*>(v_), v_elems, vm, seed, 2, 0);
        return;
      }
      prepare_pages(seed, stream);
      for (int tensor : {1, 2}) {
        const int64_t elems = tensor == 1 ? k_elems : v_elems;
        fill_paged_kernel<T><<<blocks_for(elems), kThreads, 0, s>>>(
            static_cast<T*>(tensor == 1 ? k_ : v_), elems, block_table_, shape_.pages_per_seq(), shape_.kv_heads,
            shape_.seq_k, shape_.page_size, tensor == 1 ? shape_.hdim : shape_.value_hdim(), seed, tensor);
      }
    });
  }
  if (shape_.quantized_kv()) fill_quantized_kv(seed, stream);
  ATTNPROF_CUDA_CHECK(cudaGetLastError());
  if (shape_.backward()) run_forward(stream);
}

// A paged shape's block table (a fresh shuffle per seed; the copy is synchronous, untimed set-up, so the
// host table can go) and its page pools all-ones bytes, so that every pad slot holds NaN (fp16, bf16,
// fp8; V's pages are value_hdim() wide). The fills then write the real rows.
void CudaProblem::prepare_pages(uint64_t seed, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const std::vector<int32_t> table = shuffled_block_table(shape_, seed);
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(block_table_, table.data(), table.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  const auto elem = static_cast<size_t>(shape_.kv_elem_bytes());
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(k_, 0xFF, static_cast<size_t>(shape_.kv_buffer_elems()) * elem, s));
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(v_, 0xFF, static_cast<size_t>(shape_.v_buffer_elems()) * elem, s));
}

// fp8 prefill's Q as E4M3 bytes with its one scale (kernels/common/quant.hpp): the bf16 point's values
// (times 2^q_scale_log2), quantized.
void CudaProblem::fill_quantized_q(uint64_t seed, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const float scale = q_tensor_scale(q_scale_log2_);
  fill_value_kernel<<<1, kThreads, 0, s>>>(q_scale_, 1, scale);
  fill_quant_q_kernel<<<blocks_for(shape_.q_elems()), kThreads, 0, s>>>(
      static_cast<uint8_t*>(q_), shape_.q_elems(), q_map(shape_, layout_), seed, q_scale_log2_, scale);
}

// K and V as one byte per element with their scales (kernels/common/quant.hpp), contiguous or paged;
// a page's pad holds all-ones bytes (NaN in fp8, a NaN scale per token).
void CudaProblem::fill_quantized_kv(uint64_t seed, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (shape_.paged()) {
    prepare_pages(seed, stream);
    if (shape_.kv_scale == core::KvScale::token)
      for (float* scales : {k_scale_, v_scale_})
        ATTNPROF_CUDA_CHECK(cudaMemsetAsync(scales, 0xFF, static_cast<size_t>(shape_.kv_scale_elems()) * sizeof(float), s));
  }
  if (shape_.kv_scale != core::KvScale::token)
    for (float* scales : {k_scale_, v_scale_})
      fill_value_kernel<<<blocks_for(shape_.kv_scale_elems()), kThreads, 0, s>>>(scales, shape_.kv_scale_elems(),
                                                                                 static_scale(shape_.kv_dtype));
  for (int tensor : {1, 2}) {
    const int64_t width = tensor == 1 ? shape_.hdim : shape_.value_hdim();
    const int64_t rows = (tensor == 1 ? shape_.kv_elems() : shape_.v_elems()) / width;
    fill_quant_rows_kernel<<<blocks_for(rows), kThreads, 0, s>>>(
        static_cast<uint8_t*>(tensor == 1 ? k_ : v_), tensor == 1 ? k_scale_ : v_scale_, rows, width,
        tensor == 1 ? kv_map(shape_, layout_) : v_map(shape_, layout_), shape_.paged() ? block_table_ : nullptr,
        shape_.pages_per_seq(), shape_.kv_heads, shape_.seq_k, shape_.page_size, shape_.kv_dtype, shape_.kv_scale, seed,
        tensor);
  }
}

// O and LSE of a bwd shape, by the kernel's forward on the same buffers, poisoned first so that
// verify's forward check sees what the forward left unwritten. A kernel that writes no LSE (PyTorch's
// SDPA) gets the float64 backward's LSE from a built-in forward run first (its O is then the kernel's
// own, as the kernel's backward saw it); the kernel's backward does not read LSE from attnprof. A
// fwd_bwd shape of such a kernel gets that LSE alone: its calls write O.
void CudaProblem::run_forward(void* stream) {
  if (kernel_ == nullptr)
    throw std::invalid_argument("CudaProblem: a backward shape needs the kernel whose forward fills O and LSE");
  auto s = static_cast<cudaStream_t>(stream);
  const size_t elem = static_cast<size_t>(core::dtype_bytes(shape_.out_dtype()));
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(o_, 0xFF, shape_.o_elems() * elem, s));
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(lse_, 0xFF, shape_.lse_elems() * sizeof(float), s));
  AttentionArgs a = args(stream);
  a.shape.pass = core::Pass::fwd;
  a.d_o = nullptr;
  a.dq = a.dk = a.dv = nullptr;
  const auto run = [&](const Kernel& kernel) {
    if (kernel.workspace_bytes(a.shape) > workspace_bytes_)
      throw std::runtime_error("the forward of " + kernel.name() + " needs more workspace than the backward's");
    const std::unique_ptr<Call> forward = kernel.prepare(a);
    if (kernel.needs_zeroed_workspace()) zero_workspace(stream);
    forward->launch();
    forward->write_output();
    ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));
  };
  if (!kernel_->writes_lse()) {
    const Kernel* lse_writer = lse_writer_for(a.shape);
    if (lse_writer == nullptr)
      throw Unsupported(kernel_->name() + " writes no LSE and no built-in forward runs this shape to give the "
                        "backward's check one");
    // The built-in reads the buffers as BHSD: in another layout its LSE would be of other inputs.
    if (layout_ != lse_writer->layout())
      throw Unsupported(kernel_->name() + " writes no LSE and takes " + std::string(to_string(layout_)) +
                        ", and the built-in forward that gives the backward's check its LSE takes " +
                        std::string(to_string(lse_writer->layout())));
    run(*lse_writer);
  }
  if (shape_.pass == core::Pass::bwd) run(*kernel_);
  // The backward starts on a zeroed workspace, as the constructor leaves it.
  zero_workspace(stream);
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));
}

void CudaProblem::poison_outputs(void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  // All-ones bytes are a NaN in fp32, fp16 and bf16 alike (O of fp8 prefill is bf16).
  const size_t elem = static_cast<size_t>(core::dtype_bytes(shape_.dtype));
  if (shape_.pass != core::Pass::bwd) {
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(o_, 0xFF, shape_.o_elems() * core::dtype_bytes(shape_.out_dtype()), s));
    // A fwd_bwd call of a kernel without LSE leaves the LSE fill_inputs gave the backward's check.
    if (shape_.pass == core::Pass::fwd || check_lse_)
      ATTNPROF_CUDA_CHECK(cudaMemsetAsync(lse_, 0xFF, shape_.lse_elems() * sizeof(float), s));
  }
  if (shape_.backward()) {
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(dq_, 0xFF, shape_.q_elems() * elem, s));
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(dk_, 0xFF, shape_.kv_elems() * elem, s));
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(dv_, 0xFF, shape_.v_elems() * elem, s));
  }
}

void CudaProblem::zero_workspace(void* stream) {
  if (workspace_ != nullptr)
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(workspace_, 0, workspace_bytes_, static_cast<cudaStream_t>(stream)));
}

AttentionArgs CudaProblem::args(void* stream) const {
  AttentionArgs a;
  a.shape = shape_;
  a.q = q_;
  a.k = k_;
  a.v = v_;
  a.o = o_;
  a.lse = lse_;
  a.workspace = workspace_;
  a.workspace_bytes = workspace_bytes_;
  a.stream = stream;
  a.layout = layout_;
  a.block_table = block_table_;
  a.cu_seqlens = cu_seqlens_;
  a.d_o = do_;
  a.dq = dq_;
  a.dk = dk_;
  a.dv = dv_;
  a.k_scale = k_scale_;
  a.v_scale = v_scale_;
  a.q_scale = q_scale_;
  return a;
}

core::Verification CudaProblem::verify(uint64_t seed, int max_rows, void* stream) const {
  auto s = static_cast<cudaStream_t>(stream);
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));

  const std::vector<int64_t> rows = rows_to_check(shape_, max_rows, seed);
  const int hdim = static_cast<int>(shape_.value_hdim());  // O's row width
  const int row_count = static_cast<int>(rows.size());

  unsigned long long* bad_dev = nullptr;
  int64_t* rows_dev = nullptr;
  float* o_rows_dev = nullptr;
  float* lse_rows_dev = nullptr;
  size_t scratch_bytes = 0;
  std::vector<float> o_rows(rows.size() * hdim), lse_rows(rows.size());
  unsigned long long bad = 0;
  try {
    bad_dev = static_cast<unsigned long long*>(device_alloc(sizeof(unsigned long long), scratch_bytes));
    rows_dev = static_cast<int64_t*>(device_alloc(rows.size() * sizeof(int64_t), scratch_bytes));
    o_rows_dev = static_cast<float*>(device_alloc(o_rows.size() * sizeof(float), scratch_bytes));
    lse_rows_dev = static_cast<float*>(device_alloc(lse_rows.size() * sizeof(float), scratch_bytes));
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(bad_dev, 0, sizeof(unsigned long long), s));
    if (row_count > 0)
      ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(rows_dev, rows.data(), rows.size() * sizeof(int64_t),
                                          cudaMemcpyHostToDevice, s));
    dispatch_dtype(shape_.out_dtype(), [&](auto tag) {
      using T = decltype(tag);
      const auto* o = static_cast<const T*>(o_);
      count_bad_kernel<T><<<blocks_for(shape_.o_elems()), kThreads, 0, s>>>(
          o, shape_.o_elems(), lse_, check_lse_ ? shape_.lse_elems() : 0, bad_dev);
      if (row_count > 0)
        gather_rows_kernel<T><<<blocks_for(int64_t{row_count} * hdim), kThreads, 0, s>>>(
            o, o_map(shape_, layout_), lse_, rows_dev, row_count, hdim, o_rows_dev, lse_rows_dev);
    });
    ATTNPROF_CUDA_CHECK(cudaGetLastError());
    ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(&bad, bad_dev, sizeof(bad), cudaMemcpyDeviceToHost, s));
    if (row_count > 0) {
      ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(o_rows.data(), o_rows_dev, o_rows.size() * sizeof(float),
                                          cudaMemcpyDeviceToHost, s));
      ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(lse_rows.data(), lse_rows_dev,
                                          lse_rows.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
    }
    ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));
  } catch (...) {
    for (void* p : {static_cast<void*>(bad_dev), static_cast<void*>(rows_dev),
                    static_cast<void*>(o_rows_dev), static_cast<void*>(lse_rows_dev)})
      if (p) cudaFree(p);
    throw;
  }
  for (void* p : {static_cast<void*>(bad_dev), static_cast<void*>(rows_dev),
                  static_cast<void*>(o_rows_dev), static_cast<void*>(lse_rows_dev)})
    if (p) cudaFree(p);

  core::Verification forward =
      verify_rows(shape_, seed, rows, o_rows, lse_rows, static_cast<int64_t>(bad), q_scale_log2_, check_lse_);
  if (!shape_.backward()) return forward;
  merge_grad_checks(forward, verify_grads(seed, max_rows, stream));
  return forward;
}

// The gradients: non-finite elements over all of dQ, dK and dV, their sampled rows, and the whole of
// O and LSE (the float64 backward's inputs, as the backward read them).
core::Verification CudaProblem::verify_grads(uint64_t seed, int max_rows, void* stream) const {
  auto s = static_cast<cudaStream_t>(stream);
  const GradRows rows = grad_rows_to_check(shape_, max_rows, seed);
  const int64_t dim = shape_.hdim, dim_v = shape_.value_hdim();
  std::vector<float> o_all(static_cast<size_t>(shape_.o_elems())), lse_all(static_cast<size_t>(shape_.lse_elems()));
  std::vector<float> dq_rows(rows.q_rows.size() * dim), dk_rows(rows.kv_rows.size() * dim),
      dv_rows(rows.kv_rows.size() * dim_v);
  unsigned long long bad = 0;
  std::vector<DeviceScratch> owned;
  auto* bad_dev = scratch<unsigned long long>(1, owned);
  auto* o_dev = scratch<float>(o_all.size(), owned);
  auto* q_rows_dev = scratch<int64_t>(rows.q_rows.size(), owned);
  auto* kv_rows_dev = scratch<int64_t>(rows.kv_rows.size(), owned);
  auto* dq_dev = scratch<float>(dq_rows.size(), owned);
  auto* dk_dev = scratch<float>(dk_rows.size(), owned);
  auto* dv_dev = scratch<float>(dv_rows.size(), owned);
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(bad_dev, 0, sizeof(bad), s));
  const auto upload = [&](int64_t* dst, const std::vector<int64_t>& src) {
    if (!src.empty())
      ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  };
  upload(q_rows_dev, rows.q_rows);
  upload(kv_rows_dev, rows.kv_rows);
  dispatch_dtype(shape_.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (const auto& [x, elems] : {std::pair{dq_, shape_.q_elems()}, std::pair{dk_, shape_.kv_elems()},
                                   std::pair{dv_, shape_.v_elems()}})
      count_bad_kernel<T><<<blocks_for(elems), kThreads, 0, s>>>(static_cast<const T*>(x), elems, nullptr, 0, bad_dev);
    to_canonical_kernel<T><<<blocks_for(shape_.o_elems()), kThreads, 0, s>>>(
        static_cast<const T*>(o_), shape_.o_elems(), o_map(shape_, layout_), o_dev);
    const auto gather = [&](const void* x, const TensorMap& map, const int64_t* rows_dev, size_t count, int64_t width,
                            float* out) {
      if (count == 0) return;
      gather_tensor_rows_kernel<T><<<blocks_for(static_cast<int64_t>(count) * width), kThreads, 0, s>>>(
          static_cast<const T*>(x), map, rows_dev, static_cast<int>(count), static_cast<int>(width), out);
    };
    gather(dq_, q_map(shape_, layout_), q_rows_dev, rows.q_rows.size(), dim, dq_dev);
    gather(dk_, kv_map(shape_, layout_), kv_rows_dev, rows.kv_rows.size(), dim, dk_dev);
    gather(dv_, v_map(shape_, layout_), kv_rows_dev, rows.kv_rows.size(), dim_v, dv_dev);
  });
  ATTNPROF_CUDA_CHECK(cudaGetLastError());
  const auto download = [&](std::vector<float>& dst, const void* src) {
    if (!dst.empty())
      ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src, dst.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
  };
  ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(&bad, bad_dev, sizeof(bad), cudaMemcpyDeviceToHost, s));
  download(o_all, o_dev);
  ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(lse_all.data(), lse_, lse_all.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
  download(dq_rows, dq_dev);
  download(dk_rows, dk_dev);
  download(dv_rows, dv_dev);
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));
  return kernels::verify_grads(shape_, seed, rows, o_all, lse_all, dq_rows, dk_rows, dv_rows,
                               static_cast<int64_t>(bad));
}

}  // namespace attnprof::kernels
