#include "kernels/registry.hpp"

#include <algorithm>

namespace attnprof::kernels {

namespace {
std::vector<const Kernel*>& builtin_table() {
  static std::vector<const Kernel*> kernels;
  return kernels;
}
std::vector<std::unique_ptr<Kernel>>& owned_table() {
  static std::vector<std::unique_ptr<Kernel>> kernels;
  return kernels;
}

class DefaultCall final : public Call {
 public:
  DefaultCall(const Kernel& kernel, const AttentionArgs& args) : kernel_(kernel), args_(args) {}
  void launch(StageHook* hook) override { kernel_.launch(args_, hook); }

 private:
  const Kernel& kernel_;
  AttentionArgs args_;
};
}  // namespace

std::string_view to_string(Layout l) { return l == Layout::bhsd ? "bhsd" : "bshd"; }

std::unique_ptr<Call> Kernel::prepare(const AttentionArgs& args) const {
  return std::make_unique<DefaultCall>(*this, args);
}

std::string support_reason(const Kernel& kernel, const core::Shape& s) {
  if (s.backward() && !kernel.runs_backward()) return kernel.no_backward_reason();
  if (s.quantized_q() && !kernel.runs_fp8()) return kernel.no_fp8_reason();
  // fp8 prefill's K and V are fp8 per tensor by definition: runs_fp8 covers them.
  if (s.quantized_kv() && !s.quantized_q() && !kernel.reads_quantized_kv())
    return kernel.no_quantized_kv_reason() + " (kv_dtype " + std::string(core::to_string(s.kv_dtype)) + ")";
  if (s.paged() && !kernel.reads_paged_kv())
    return kernel.name() + " reads contiguous K and V only (no paged KV cache); the decode kernel reads pages";
  if (s.kv_splits > 0 && !kernel.splits_kv())
    return kernel.name() + " does not split the keys (kv_splits applies to split-KV kernels such as decode)";
  if (s.windowed() && !kernel.masks_window())
    return kernel.no_window_reason() + " (window " + std::to_string(s.window) + ")";
  if (s.distinct_hdim_v() && !kernel.runs_distinct_hdim_v())
    return kernel.name() + ": value head dim " + std::to_string(s.value_hdim()) +
           " differs from the query/key head dim " + std::to_string(s.hdim) + " (" + kernel.no_hdim_v_reason() + ")";
  if (s.varlen() && !kernel.runs_varlen()) {
    if (std::string own = kernel.unsupported_reason(s); !own.empty()) return own;
    return kernel.no_varlen_reason();
  }
  return kernel.unsupported_reason(s);
}

std::string Kernel::no_backward_reason() const { return name() + " runs the forward pass only (no backward)"; }

std::string Kernel::no_quantized_kv_reason() const {
  return name() + " reads K and V in the dtype only (no quantized KV cache)";
}

std::string Kernel::no_fp8_reason() const {
  return name() + " runs fp16, bf16 and fp32 inputs only (no fp8 Q, K and V)";
}

std::string Kernel::no_window_reason() const { return name() + " has no sliding-window mask"; }

std::string Kernel::no_varlen_reason() const {
  return name() + " runs dense batches only (no packed variable-length batch)";
}

Registrar::Registrar(const Kernel* kernel) { builtin_table().push_back(kernel); }

void register_owned(std::unique_ptr<Kernel> kernel) { owned_table().push_back(std::move(kernel)); }

std::vector<const Kernel*> all_registered() {
  std::vector<const Kernel*> out = builtin_table();
  // Registration order depends on link order: sort so "reference" comes before "fused" etc. stably.
  std::stable_sort(out.begin(), out.end(), [](const Kernel* a, const Kernel* b) { return a->name() > b->name(); });
  for (const auto& k : owned_table()) out.push_back(k.get());
  return out;
}

std::vector<const Kernel*> registered(Backend backend) {
  std::vector<const Kernel*> out;
  for (const Kernel* k : all_registered())
    if (k->backend() == backend) out.push_back(k);
  return out;
}

const Kernel* find(Backend backend, std::string_view name) {
  for (const Kernel* k : all_registered())
    if (k->backend() == backend && k->name() == name) return k;
  return nullptr;
}

const Kernel* find_any(std::string_view name) {
  for (const Kernel* k : all_registered())
    if (k->name() == name) return k;
  return nullptr;
}

}  // namespace attnprof::kernels
