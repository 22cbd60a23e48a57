// "fused-auto": the fastest fused kernel this device runs for a shape. It forwards every call to a
// preferred kernel (fused-sm90, the Hopper-native one) when that kernel supports the shape on the
// current device, and otherwise to a fallback (fused, the portable FlashAttention-2 kernel). It is
// what a user who asks for "the fused kernel" gets; sweeps list it only when asked for by name
// (--kernels fused-auto), since by default they already run both kernels it chooses between.
#pragma once
#include <string>
#include <vector>

#include "kernels/registry.hpp"

namespace attnprof::kernels {

class FusedAutoKernel final : public Kernel {
 public:
  // The kernels are looked up by name in the registry at each call (registration order is not
  // known at static initialisation); tests pass their own.
  FusedAutoKernel(std::string preferred, std::string fallback);
  FusedAutoKernel(const Kernel* preferred, const Kernel* fallback);

  // The kernel a call of shape `s` runs: preferred if it supports s here, else fallback; nullptr
  // when neither does (or neither is built in).
  const Kernel* choose(const core::Shape& s) const;

  std::string name() const override { return "fused-auto"; }
  Backend backend() const override { return Backend::cuda; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  bool listed_by_default() const override { return false; }
  std::string description() const override;
  std::string unsupported_reason(const core::Shape&) const override;
  size_t workspace_bytes(const core::Shape&) const override;
  std::vector<LaunchInfo> launch_info(const core::Shape&) const override;
  void launch(const AttentionArgs&, StageHook* hook = nullptr) const override;

 private:
  const Kernel* preferred() const;
  const Kernel* fallback() const;
  std::string preferred_name_, fallback_name_;
  const Kernel* preferred_ = nullptr;
  const Kernel* fallback_ = nullptr;
};

}  // namespace attnprof::kernels
