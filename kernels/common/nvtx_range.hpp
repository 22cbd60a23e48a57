// An NVTX range for the lifetime of a scope, popped on every way out (exceptions too), so that a
// timeline (nsys, Nsight Compute's --nvtx filters) shows what ran: each kernel's call and each phase
// of the measurement.
#pragma once
#include <string>

#include <nvtx3/nvToolsExt.h>

namespace attnprof::kernels {

class ScopedNvtxRange {
 public:
  explicit ScopedNvtxRange(const char* name) { nvtxRangePushA(name); }
  explicit ScopedNvtxRange(const std::string& name) : ScopedNvtxRange(name.c_str()) {}
  ~ScopedNvtxRange() { nvtxRangePop(); }
  ScopedNvtxRange(const ScopedNvtxRange&) = delete;
  ScopedNvtxRange& operator=(const ScopedNvtxRange&) = delete;
};

}  // namespace attnprof::kernels
