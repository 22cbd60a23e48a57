#include "kernels/fused_auto.hpp"

#include <stdexcept>

namespace attnprof::kernels {

FusedAutoKernel::FusedAutoKernel(std::string preferred, std::string fallback)
    : preferred_name_(std::move(preferred)), fallback_name_(std::move(fallback)) {}

FusedAutoKernel::FusedAutoKernel(const Kernel* preferred, const Kernel* fallback)
    : preferred_name_(preferred ? preferred->name() : ""),
      fallback_name_(fallback ? fallback->name() : ""),
      preferred_(preferred),
      fallback_(fallback) {}

const Kernel* FusedAutoKernel::preferred() const {
  return preferred_ ? preferred_ : find(Backend::cuda, preferred_name_);
}
const Kernel* FusedAutoKernel::fallback() const { return fallback_ ? fallback_ : find(Backend::cuda, fallback_name_); }

const Kernel* FusedAutoKernel::choose(const core::Shape& s) const {
  if (const Kernel* k = preferred(); k && k->unsupported_reason(s).empty()) return k;
  if (const Kernel* k = fallback(); k && k->unsupported_reason(s).empty()) return k;
  return nullptr;
}

std::string FusedAutoKernel::description() const {
  return "the fastest fused kernel for the shape on this device: " + preferred_name_ + " where it runs, else " +
         fallback_name_ + " (the launch's kernel name in the counters says which ran)";
}

std::string FusedAutoKernel::unsupported_reason(const core::Shape& s) const {
  if (choose(s)) return {};
  std::string why;
  for (const auto& [name, kernel] : {std::pair{preferred_name_, preferred()}, std::pair{fallback_name_, fallback()}}) {
    why += why.empty() ? "" : "; ";
    why += kernel ? name + ": " + kernel->unsupported_reason(s) : name + ": not built into this binary";
  }
  return "no fused kernel runs this shape here (" + why + ")";
}

size_t FusedAutoKernel::workspace_bytes(const core::Shape& s) const {
  const Kernel* k = choose(s);
  return k ? k->workspace_bytes(s) : 0;
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
const FusedAutoKernel kInstance{"fused-sm90", "fused"};
const Registrar kReg{&kInstance};
}  // namespace
#endif

}  // namespace attnprof::kernels
