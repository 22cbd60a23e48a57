#include "kernels/fused_auto.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace attnprof::kernels {

FusedAutoKernel::FusedAutoKernel(std::vector<std::string> candidates) : names_(std::move(candidates)) {}

FusedAutoKernel::FusedAutoKernel(std::vector<const Kernel*> candidates) : kernels_(std::move(candidates)) {
  for (const Kernel* k : kernels_) names_.push_back(k ? k->name() : "");
}

std::vector<const Kernel*> FusedAutoKernel::resolved() const {
  if (!kernels_.empty()) return kernels_;
  std::vector<const Kernel*> out;
  for (const std::string& name : names_) out.push_back(find(Backend::cuda, name));
  return out;
}

const Kernel* FusedAutoKernel::choose(const core::Shape& s) const {
  for (const Kernel* k : resolved())
    if (k && support_reason(*k, s).empty()) return k;
  return nullptr;
}

std::string FusedAutoKernel::description() const {
  return fmt::format("the fastest fused kernel for the shape on this device: {} (the first that runs the shape; "
                     "the launch's kernel name in the counters says which ran)",
                     fmt::join(names_, ", else "));
}

std::string FusedAutoKernel::unsupported_reason(const core::Shape& s) const {
  if (choose(s)) return {};
  std::vector<std::string> why;  // one per candidate
  const std::vector<const Kernel*> kernels = resolved();
  for (size_t i = 0; i < names_.size(); ++i) {
    if (!kernels[i]) {
      why.push_back(names_[i] + ": not built into this binary");
      continue;
    }
    // Reasons of the shape's own axes already start with the kernel's name.
    const std::string reason = support_reason(*kernels[i], s);
    why.push_back(reason.starts_with(names_[i]) ? reason : names_[i] + ": " + reason);
  }
  return fmt::format("no fused kernel runs this shape here ({})", fmt::join(why, "; "));
}

size_t FusedAutoKernel::workspace_bytes(const core::Shape& s) const {
  const Kernel* k = choose(s);
  return k ? k->workspace_bytes(s) : 0;
}

std::vector<std::string> FusedAutoKernel::stage_names(const core::Shape& s) const {
  const Kernel* k = choose(s);
  return k ? k->stage_names(s) : std::vector<std::string>{name()};
}

std::map<std::string, int64_t> FusedAutoKernel::plan(const core::Shape& s) const {
  const Kernel* k = choose(s);
  return k ? k->plan(s) : std::map<std::string, int64_t>{};
}

std::vector<LaunchInfo> FusedAutoKernel::launch_info(const core::Shape& s) const {
  const Kernel* k = choose(s);
  return k ? k->launch_info(s) : std::vector<LaunchInfo>{};
}

void FusedAutoKernel::launch(const AttentionArgs& a, StageHook* hook) const {
  const Kernel* k = choose(a.shape);
  if (!k) throw std::runtime_error(unsupported_reason(a.shape));
  k->launch(a, hook);
}

// An alias of CUDA kernels: without the CUDA backend there is nothing for it to choose.
#if ATTNPROF_HAVE_CUDA
namespace {
const FusedAutoKernel kInstance{std::vector<std::string>{"decode", "fused-sm90", "fused"}};
const Registrar kReg{&kInstance};
}  // namespace
#endif

}  // namespace attnprof::kernels
