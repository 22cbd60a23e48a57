// The one small interface every attention kernel implements, and the registry the measurement code
// and the CLI read. Adding a kernel is one file: implement Kernel and register it with
// `static const attnprof::kernels::Registrar kReg{&kInstance};` (kernels are built as an object library
// so that static registrars are never dropped by the linker).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost_model.hpp"
#include "core/shape.hpp"

namespace attnprof::kernels {

enum class Backend { cpu, cuda };
std::string_view to_string(Backend);

// Pointers are device pointers for CUDA kernels and host pointers for CPU kernels. Tensors follow the
// layout in core/shape.hpp. For CPU kernels every tensor (Q, K, V, O) is fp32 whatever shape.dtype says.
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
  virtual size_t workspace_bytes(const core::Shape&) const = 0;
  // Names of the launches one call makes, in order ("qk_gemm", "softmax", "pv_gemm").
  virtual std::vector<std::string> stage_names() const { return {name()}; }
  // The launches of one call that the occupancy calculator can see (empty on CPU).
  virtual std::vector<LaunchInfo> launch_info(const core::Shape&) const { return {}; }
  // Enqueues one call. Throws std::runtime_error on a launch failure.
  virtual void launch(const AttentionArgs&, StageHook* hook = nullptr) const = 0;
};

std::vector<const Kernel*> registered(Backend);
const Kernel* find(Backend, std::string_view name);  // nullptr if absent

struct Registrar {
  explicit Registrar(const Kernel* kernel);
};

}  // namespace attnprof::kernels
