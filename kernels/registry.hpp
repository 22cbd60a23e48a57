// The one small interface every attention kernel implements, and the registry the measurement code
// and the CLI read. Adding a kernel is one file: implement Kernel and register it with
// `static const attnprof::kernels::Registrar kReg{&kInstance};` (kernels are built as an object library
// so that static registrars are never dropped by the linker).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend_kind.hpp"
#include "core/cost_model.hpp"
#include "core/shape.hpp"

namespace attnprof::kernels {

// The backend a kernel runs on: core::BackendKind (cuda or cpu), the enum results files record.
using Backend = core::BackendKind;

// How Q, K, V and O sit in memory. bhsd is core/shape.hpp's convention and every built-in kernel's;
// bshd ([batch, seq, heads, hdim], FlashAttention's) exists for plugin kernels that take only it.
// LSE is [batch, heads, seq_q] in both.
enum class Layout { bhsd, bshd };
std::string_view to_string(Layout);

// Pointers are device pointers for CUDA kernels and host pointers for CPU kernels. Tensors follow the
// layout in core/shape.hpp. For CPU kernels every tensor (Q, K, V, O) is fp32 whatever shape.dtype says,
// but a quantized K and V and fp8 prefill's Q (one byte per element, below; kernels/cpu/kv_cache.hpp).
struct AttentionArgs {
  core::Shape shape;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  void* stream = nullptr;  // cudaStream_t for CUDA kernels
  Layout layout = Layout::bhsd;  // of q, k, v, o
  // Paged KV cache (shape.page_size > 0): k and v are the page pools and this is the block table,
  // int32 [batch, shape.pages_per_seq()] (core/shape.hpp). nullptr when K and V are contiguous.
  const int32_t* block_table = nullptr;
  // Packed variable-length batch (shape.varlen()): int32 [batch + 1], sequence b's first token
  // (core/shape.hpp); a device pointer for CUDA kernels, a host pointer for CPU kernels. nullptr dense.
  const int32_t* cu_seqlens = nullptr;
  // Backward pass (shape.pass bwd or fwd_bwd, core/shape.hpp), in the layout of q, k, v and o: d_o (as
  // O) is an input; dq (as Q), dk (as K) and dv (as V, kv_heads wide) are outputs every call overwrites.
  // A bwd call reads o and lse as inputs (the measurement filled them with this kernel's forward,
  // untimed) and leaves them unchanged; a fwd_bwd call writes them first. nullptr for a forward point.
  const void* d_o = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  // Quantized KV cache (shape.quantized_kv(), core/shape.hpp): k and v hold one byte per element (fp8
  // E4M3 or int8) and these their float32 scales, shape.kv_scale_elems() each; nullptr otherwise.
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  // fp8 prefill (shape.dtype fp8_e4m3, shape.quantized_q()): q, k and v hold E4M3 bytes, and q_scale,
  // k_scale and v_scale one float32 each (the shape's kv_scale is tensor); o is bf16 on CUDA (fp32 on
  // the CPU, as every CPU output). nullptr otherwise.
  const float* q_scale = nullptr;
};

// Lets the timer put an event between the stages of a multi-launch kernel.
// before_stage(i) is called right before stage i is launched; after_last() after the last one.
// One launch that is the kernel's own (a cuBLAS launch has func == nullptr): what the occupancy
// calculator needs. func is the __global__ function's address, as cudaFuncGetAttributes takes it.
struct LaunchInfo {
  std::string kernel_name;
  const void* func = nullptr;
  int64_t grid_blocks = 0;
  int block_threads = 0;
  size_t dynamic_smem_bytes = 0;
};

struct StageHook {
  virtual ~StageHook() = default;
  virtual void before_stage(int index) = 0;
  virtual void after_last() = 0;
};

// One prepared call of a kernel on fixed buffers: what the timer, the verification and the counter
// passes launch. Kernel::prepare makes it, outside every timed region.
class Call {
 public:
  virtual ~Call() = default;
  // Enqueues one call. Throws std::runtime_error on a launch failure.
  virtual void launch(StageHook* hook = nullptr) = 0;
  // Untimed, after the launch that is verified: makes O (and LSE) hold that launch's result, for a
  // call that computes into buffers of its own (a plugin's write_output). Nothing for the rest.
  virtual void write_output() {}
};

// Thrown by Kernel::prepare when planning finds the shape cannot run: the point is "unsupported"
// with this reason, as if unsupported_reason() had said so.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual std::string name() const = 0;          // "reference", "fused": the key in results
  virtual Backend backend() const = 0;
  virtual core::KernelKind kind() const = 0;     // which cost model applies
  virtual std::string description() const = 0;
  // Empty when the shape runs; otherwise the reason (recorded with status "unsupported").
  // Whether a sweep without --kernels runs it (an alias of other kernels is not).
  virtual bool listed_by_default() const { return true; }
  virtual std::string unsupported_reason(const core::Shape&) const = 0;
  // Device scratch of one call. It is zero when first handed to the kernel; a kernel that keeps
  // state there across its CTAs (the decode kernel's split counters) sets it back to zero by the end
  // of every call. needs_zeroed_workspace() asks for zero before every call instead.
  virtual size_t workspace_bytes(const core::Shape&) const = 0;
  // Names of the launches one call makes on this shape, in order ("qk_gemm", "softmax", "pv_gemm").
  virtual std::vector<std::string> stage_names(const core::Shape&) const { return {name()}; }
  // The kernel's plan for this shape as it will run (tile sizes, split count, variant), recorded
  // with each point; empty when the kernel has none to report.
  virtual std::map<std::string, int64_t> plan(const core::Shape&) const { return {}; }
  // The launches of one call that the occupancy calculator can see (empty on CPU).
  virtual std::vector<LaunchInfo> launch_info(const core::Shape&) const { return {}; }
  // Enqueues one call. Throws std::runtime_error on a launch failure.
  virtual void launch(const AttentionArgs&, StageHook* hook = nullptr) const = 0;
  // Untimed set-up for calls on `args`' buffers (a plugin's planning, handles, JIT). The default
  // call launches launch(args, hook). Throws std::runtime_error when preparing fails.
  virtual std::unique_ptr<Call> prepare(const AttentionArgs& args) const;

  // What the measurement must do for this kernel; the built-in kernels take every default.
  virtual Layout layout() const { return Layout::bhsd; }
  virtual bool writes_lse() const { return true; }
  // Output depends only on the inputs: counter passes may replay the call without restoring them.
  virtual bool pure() const { return true; }
  virtual bool graph_capturable() const { return true; }
  // The workspace is zeroed before every call, outside the timed region.
  virtual bool needs_zeroed_workspace() const { return false; }
  // The host side of a call may be slow (a plugin's: Python, library planning): event timing holds
  // the stream until the call is enqueued, so GPU time never includes waiting for the host.
  virtual bool host_side_heavy() const { return false; }
  // "built-in", or the plugin's name and path: where the kernel comes from.
  virtual std::string origin() const { return "built-in"; }
  // Reads a paged KV cache through AttentionArgs::block_table (shape.page_size > 0).
  virtual bool reads_paged_kv() const { return false; }
  // Cuts the keys into shape.kv_splits parts when it is set (a split-KV kernel).
  virtual bool splits_kv() const { return false; }
  // Honours shape.window (sliding-window attention, core/shape.hpp). A kernel that does not say so
  // never runs a windowed point: full attention there would pass for a window it never applied.
  virtual bool masks_window() const { return false; }
  // Runs a packed variable-length batch (shape.varlen(), AttentionArgs::cu_seqlens). A kernel that does
  // not say so never runs one: it would read the packed tensors as a dense batch.
  virtual bool runs_varlen() const { return false; }
  // Runs a value head dim other than the query/key one (shape.hdim_v: V and O value_hdim() wide). A
  // kernel that does not say so never runs such a point: it would read V and write O hdim wide.
  virtual bool runs_distinct_hdim_v() const { return false; }
  // Runs the backward pass (shape.pass bwd and fwd_bwd, AttentionArgs' gradients) besides the forward.
  // workspace_bytes, stage_names, plan and launch_info see the pass in the shape. A kernel that does
  // not say so gets backward points `unsupported`.
  virtual bool runs_backward() const { return false; }
  // Reads a quantized KV cache (shape.kv_dtype fp8_e4m3 or int8 at each kv_scale granularity,
  // AttentionArgs::k_scale and v_scale). A kernel that does not say so gets quantized points
  // `unsupported`: it would read the bytes as the dtype.
  virtual bool reads_quantized_kv() const { return false; }
  // Runs fp8 prefill (shape.dtype fp8_e4m3: Q, K and V in E4M3 with per-tensor scales, O in bf16;
  // AttentionArgs::q_scale, k_scale, v_scale). A kernel that does not say so gets fp8 points
  // `unsupported`; one that does needs no reads_quantized_kv() for them (their K and V are fp8 per tensor
  // by definition).
  virtual bool runs_fp8() const { return false; }
  // What support_reason says of a windowed (packed, distinct-hdim_v) point when masks_window()
  // (runs_varlen(), runs_distinct_hdim_v()) is false: the built-in kernels lack the mask (the packed
  // path, a second tile width); a plugin kernel says why it was not given one (its ABI version, or a
  // flag it does not declare).
  virtual std::string no_window_reason() const;
  virtual std::string no_varlen_reason() const;
  virtual std::string no_hdim_v_reason() const { return "one tile width for Q, K and V"; }
  virtual std::string no_backward_reason() const;
  virtual std::string no_quantized_kv_reason() const;
  virtual std::string no_fp8_reason() const;
};

// Empty when `kernel` runs `shape`; otherwise why not: what the shape asks of every kernel (a paged
// cache, a split count, a sliding window, a packed variable-length batch, a value head dim of its own,
// a backward pass, a quantized KV cache) checked against its traits, then the kernel's own unsupported_reason (which, for a packed batch a
// kernel does not run, may say why before the generic reason). The measurement, the catalogue and
// fused-auto all ask this, never unsupported_reason alone.
std::string support_reason(const Kernel& kernel, const core::Shape& shape);

// Built-in kernels first (in a stable order), then plugin kernels in the order they were loaded.
std::vector<const Kernel*> registered(Backend);
std::vector<const Kernel*> all_registered();
const Kernel* find(Backend, std::string_view name);  // nullptr if absent
const Kernel* find_any(std::string_view name);       // any backend; nullptr if absent

struct Registrar {
  explicit Registrar(const Kernel* kernel);
};
// A kernel made at run time (a plugin's): the registry owns it from here.
void register_owned(std::unique_ptr<Kernel> kernel);

}  // namespace attnprof::kernels
