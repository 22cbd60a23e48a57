// "fused-auto": the fastest fused kernel this device runs for a shape. It forwards every call to the
// first of an ordered list of kernels that supports the shape on the current device: decode (the
// split-KV kernel, for seq_q <= 16), then fused-sm90 (the Hopper-native one), then fused (the portable
// FlashAttention-2 kernel). The order is the measured one: on the H200 decode is faster than both
// prefill kernels at every decode shape and fused-sm90 faster than fused at every prefill shape
// (docs/PERFORMANCE.md). It is what a user who asks for "the fused kernel" gets; sweeps list it only
// when asked for by name (--kernels fused-auto), since by default they already run every kernel it
// chooses between.
#pragma once
#include <string>
#include <vector>

#include "kernels/registry.hpp"

namespace attnprof::kernels {

class FusedAutoKernel final : public Kernel {
 public:
  // The kernels are looked up by name in the registry at each call (registration order is not
  // known at static initialisation); tests pass their own.
  explicit FusedAutoKernel(std::vector<std::string> candidates);
  explicit FusedAutoKernel(std::vector<const Kernel*> candidates);

  // The kernel a call of shape `s` runs: the first candidate that supports s here; nullptr when none
  // does (or none is built in).
  const Kernel* choose(const core::Shape& s) const;

  std::string name() const override { return "fused-auto"; }
  Backend backend() const override { return Backend::cuda; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  bool listed_by_default() const override { return false; }
  std::string description() const override;
  std::string unsupported_reason(const core::Shape&) const override;
  size_t workspace_bytes(const core::Shape&) const override;
  std::vector<std::string> stage_names(const core::Shape&) const override;
  std::map<std::string, int64_t> plan(const core::Shape&) const override;
  std::vector<LaunchInfo> launch_info(const core::Shape&) const override;
  void launch(const AttentionArgs&, StageHook* hook = nullptr) const override;
  // What the chosen kernel does (choose checks each candidate's own traits): a paged cache, the
  // backward pass (fused-sm90's on sm_90, else fused's), a quantized KV cache, fp8 prefill.
  bool reads_paged_kv() const override { return true; }
  bool runs_backward() const override { return true; }
  bool reads_quantized_kv() const override { return true; }
  bool runs_fp8() const override { return true; }
  bool splits_kv() const override { return true; }
  bool masks_window() const override { return true; }
  bool runs_varlen() const override { return true; }
  bool runs_distinct_hdim_v() const override { return true; }

 private:
  std::vector<const Kernel*> resolved() const;  // nullptr for a name not built in
  std::vector<std::string> names_;
  std::vector<const Kernel*> kernels_;
};

}  // namespace attnprof::kernels
