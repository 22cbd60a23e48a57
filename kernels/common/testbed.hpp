// CUDA testbed for one problem: device buffers for Q, K, V (dtype), O (Shape::out_dtype), LSE (fp32) and the
// kernel's workspace (V and O value_hdim() wide, V's pages too); fills inputs on the device from kernels/common/random.hpp, poisons outputs
// (NaN bit patterns), and verifies: counts unwritten/non-finite elements over all of O and LSE on the
// device, copies back only the sampled rows, and compares them with the float64 reference.
// A paged shape (page_size > 0) gets K and V as page pools with a shuffled block table
// (kernels/common/paged.hpp); the pad past seq_k in each sequence's last page holds NaN, so a kernel
// that reads a key it must not fails verification. A packed variable-length batch gets its tensors
// packed (core/shape.hpp) and a device copy of cu_seqlens; the unwritten-element count covers the
// whole packed O and LSE, and the sampled rows cover every sequence (rows_to_check).
// A quantized KV cache (core/shape.hpp's kv_dtype) gets K and V as bytes with float32 scales, from the
// quantizer the float64 reference shares (kernels/common/quant.hpp); fp8 prefill (dtype fp8_e4m3) gets
// Q as E4M3 bytes with its one scale too, and O in bf16 (Shape::out_dtype), poisoned as any O.
// A backward shape (core/shape.hpp's pass) adds dO (filled from tensor 3) and dQ, dK, dV. Its outputs
// are the pass's: dQ, dK and dV for bwd, O and LSE too for fwd_bwd. A bwd problem made for a kernel
// runs that kernel's forward in fill_inputs (untimed), so O and LSE hold what its backward reads;
// verify checks them against the float64 forward and the gradients against the float64 backward of
// those O and LSE (kernels/common/verify.hpp).
// Used by the GPU tests and by the CUDA measurement backend. Only built with nvcc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "core/results.hpp"
#include "kernels/common/cuda_errors.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels {

inline constexpr int kMaxQScaleLog2 = 8;

class CudaProblem {
 public:
  // q_scale_log2: Q's values times 2^q_scale_log2 (kernels/common/random.hpp), in [0, kMaxQScaleLog2];
  // fill_inputs and verify both use it. layout: of Q, K, V, O as the kernel takes them. check_lse
  // false: the kernel writes no LSE, which verify then ignores. Throws DeviceOutOfMemory, CudaError.
  CudaProblem(const core::Shape&, size_t workspace_bytes, int q_scale_log2 = 0, Layout layout = Layout::bhsd,
              bool check_lse = true);
  // For a kernel of the registry: its workspace (a bwd shape's: the larger of its forward's and its
  // backward's), layout and LSE; a bwd shape's fill_inputs runs its forward. The kernel must outlive
  // the problem. A bwd shape needs this constructor (std::invalid_argument from the other).
  CudaProblem(const core::Shape&, const Kernel&);
  ~CudaProblem();
  CudaProblem(const CudaProblem&) = delete;
  CudaProblem& operator=(const CudaProblem&) = delete;

  // Q, K, V (and dO); for a bwd shape then O and LSE by the kernel's forward (synchronises).
  void fill_inputs(uint64_t seed, void* stream);
  // NaN in every output of the shape's pass.
  void poison_outputs(void* stream);
  void zero_workspace(void* stream);
  AttentionArgs args(void* stream) const;
  // Synchronises the stream, then checks as described above.
  core::Verification verify(uint64_t seed, int max_rows, void* stream) const;
  size_t allocated_bytes() const { return allocated_bytes_; }
  const core::Shape& shape() const { return shape_; }

 private:
  core::Shape shape_;
  void run_forward(void* stream);
  void prepare_pages(uint64_t seed, void* stream);
  void fill_quantized_q(uint64_t seed, void* stream);
  void fill_quantized_kv(uint64_t seed, void* stream);
  core::Verification verify_grads(uint64_t seed, int max_rows, void* stream) const;

  const Kernel* kernel_ = nullptr;  // whose forward fills O and LSE of a bwd shape
  void *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *o_ = nullptr, *workspace_ = nullptr;
  void *do_ = nullptr, *dq_ = nullptr, *dk_ = nullptr, *dv_ = nullptr;  // backward shapes only
  float* lse_ = nullptr;
  float *k_scale_ = nullptr, *v_scale_ = nullptr;  // a quantized KV cache's (core/shape.hpp)
  float* q_scale_ = nullptr;                        // fp8 prefill's Q's
  int32_t* block_table_ = nullptr;  // paged shapes: kernels/common/paged.hpp
  int32_t* cu_seqlens_ = nullptr;   // packed batches: int32 [batch + 1] (core/shape.hpp)
  size_t workspace_bytes_ = 0, allocated_bytes_ = 0;
  int q_scale_log2_ = 0;
  Layout layout_ = Layout::bhsd;
  bool check_lse_ = true;
};

}  // namespace attnprof::kernels
