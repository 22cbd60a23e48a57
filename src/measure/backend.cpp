// The backend factory: CUDA when this binary has it and a GPU is visible, else the CPU backend.
#include "measure/backend.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "measure/cpu_backend.hpp"
#ifdef ATTNPROF_HAVE_CUDA
#include "measure/cuda/cuda_backend.hpp"
#endif

namespace attnprof::measure {

void to_json(nlohmann::json& j, const MeasureOptions& o) {
  j = {{"warmup_calls", o.warmup_calls},
       {"warmup_seconds", o.warmup_seconds},
       {"min_seconds_per_point", o.min_seconds_per_point},
       {"min_samples", o.min_samples},
       {"max_samples", o.max_samples},
       {"target_rel_ci", o.target_rel_ci},
       {"max_seconds_per_point", o.max_seconds_per_point},
       {"cold_l2", o.cold_l2},
       {"counters", o.counters},
       {"extra_metrics", o.extra_metrics},
       {"verify", o.verify},
       {"verify_rows", o.verify_rows},
       {"seed", o.seed},
       {"point_timeout_s", o.point_timeout_s},
       {"counter_batch", o.counter_batch}};
}

void from_json(const nlohmann::json& j, MeasureOptions& o) {
  o.warmup_calls = j.at("warmup_calls").get<int>();
  o.warmup_seconds = j.at("warmup_seconds").get<double>();
  o.min_seconds_per_point = j.at("min_seconds_per_point").get<double>();
  o.min_samples = j.at("min_samples").get<int>();
  o.max_samples = j.at("max_samples").get<int>();
  o.target_rel_ci = j.at("target_rel_ci").get<double>();
  o.max_seconds_per_point = j.at("max_seconds_per_point").get<double>();
  o.cold_l2 = j.at("cold_l2").get<bool>();
  o.counters = j.at("counters").get<bool>();
  o.extra_metrics = j.at("extra_metrics").get<std::vector<std::string>>();
  o.verify = j.at("verify").get<bool>();
  o.verify_rows = j.at("verify_rows").get<int>();
  o.seed = j.at("seed").get<uint64_t>();
  o.point_timeout_s = j.at("point_timeout_s").get<double>();
  o.counter_batch = j.at("counter_batch").get<int>();
}

void Backend::collect_counters(std::vector<core::Record>& records, const MeasureOptions&) {
  for (auto& record : records) {
    if (record.counters.status != "pending") continue;
    record.counters.status = "not_collected";
    record.counters.reason = fmt::format("the {} backend has no counters", name());
  }
}

bool cuda_available(std::string* why_not) {
#ifdef ATTNPROF_HAVE_CUDA
  std::string why;
  const bool present = cuda_device_present(&why);
  if (!present && why_not) *why_not = why.empty() ? "no CUDA device visible" : why;
  return present;
#else
  if (why_not) *why_not = "this attnprof was built without CUDA";
  return false;
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
  if (which == "cpu") return make_cpu_backend();
  if (which == "cuda") {
    std::string why;
    if (!cuda_available(&why))
      throw EnvironmentError(fmt::format("the cuda backend was asked for, but {}", why));
    return cuda_backend(device_index);
  }
  if (which == "auto") {
    std::string why;
    if (cuda_available(&why)) return cuda_backend(device_index);
    if (notices) notices->push_back(fmt::format("no GPU found ({}): running the CPU backend", why));
    return make_cpu_backend();
  }
  throw InputError(fmt::format("unknown backend '{}' (expected auto, cuda or cpu)", which));
}

}  // namespace attnprof::measure
