// The backend factory: CUDA when this binary has it and a GPU is visible, else the CPU backend.
#include "measure/backend.hpp"

#include <dlfcn.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "measure/cpu_backend.hpp"
#ifdef ATTNPROF_HAVE_CUDA
#include "measure/cuda/cuda_backend.hpp"
#include "measure/cuda/pc_sampling.hpp"
#endif

namespace attnprof::measure {

void Backend::collect_counters(std::vector<core::Record>& records, const MeasureOptions&) {
  for (auto& record : records) {
    if (record.counters.status != core::CounterStatus::pending) continue;
    record.counters.status = core::CounterStatus::not_collected;
    record.counters.reason = fmt::format("the {} backend has no counters", name());
  }
}

MeasureOptions timing_worker_options(const MeasureOptions& sweep) {
  MeasureOptions out = sweep;
  out.stalls = false;
  out.timeline = false;
  if (sweep.stalls)
    for (const char* name : core::kInstructionMixMetrics)
      if (std::find(out.extra_metrics.begin(), out.extra_metrics.end(), name) == out.extra_metrics.end())
        out.extra_metrics.emplace_back(name);
  return out;
}

namespace {

// Whether the NVIDIA driver's library is installed: what the CUDA build's device query checks when
// the runtime finds no driver (measure/cuda/device.cpp), asked here in a build without CUDA too.
[[maybe_unused]] bool nvidia_driver_installed() {
  void* handle = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

}  // namespace

bool cuda_available(std::string* why_not) {
#ifdef ATTNPROF_HAVE_CUDA
  std::string why;
  const bool present = cuda_device_present(&why);
  if (!present && why_not) *why_not = why.empty() ? "no CUDA device visible" : why;
  return present;
#else
  if (why_not)
    *why_not = nvidia_driver_installed()
                   ? "this attnprof was built without CUDA"
                   : "no NVIDIA driver (libcuda.so.1 is not installed), and this attnprof was built without CUDA";
  return false;
#endif
}

void prepare_stall_sampling(const Backend& backend) {
#ifdef ATTNPROF_HAVE_CUDA
  if (backend.kind() == core::BackendKind::cuda) enable_stall_sampling();
#else
  (void)backend;
#endif
}

int visible_cuda_devices() {
#ifdef ATTNPROF_HAVE_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

namespace {

std::unique_ptr<Backend> cuda_backend(int device_index) {
#ifdef ATTNPROF_HAVE_CUDA
  return make_cuda_backend(device_index);
#else
  (void)device_index;
  throw EnvironmentError("the cuda backend was asked for, but this attnprof was built without CUDA");
#endif
}

}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& which, int device_index,
                                      std::vector<std::string>* notices) {
  core::check_backend_choice(which);
  if (which == "cpu") return make_cpu_backend();
  if (which == "cuda") {
    std::string why;
    if (!cuda_available(&why))
      throw EnvironmentError(fmt::format("the cuda backend was asked for, but {}", why));
    return cuda_backend(device_index);
  }
  std::string why;  // "auto"
  if (cuda_available(&why)) return cuda_backend(device_index);
  if (notices) notices->push_back(fmt::format("no GPU found ({}): running the CPU backend", why));
  return make_cpu_backend();
}

}  // namespace attnprof::measure
