#include "measure/calibrate.hpp"

#include <string>

#include <fmt/format.h>

#include "core/calibration.hpp"
#include "core/errors.hpp"
#include "core/version.hpp"
#ifdef ATTNPROF_HAVE_CUDA
#include "measure/cuda/calibration_probes.hpp"
#endif

namespace attnprof::measure {

core::Results run_calibration(const CalibrateOptions& options) {
  // Before anything runs: calibrate's probes are CUDA kernels, so it needs an NVIDIA GPU.
  if (std::string why; !cuda_available(&why))
    throw EnvironmentError(fmt::format("attnprof calibrate needs an NVIDIA GPU: {}", why));
  const std::unique_ptr<Backend> backend = make_backend("cuda", options.device, nullptr);
  core::Results results;
  core::Context& ctx = results.context;
  ctx.tool_version = std::string(core::tool_version());
  ctx.git_revision = std::string(core::git_revision());
  ctx.command_line = options.command_line;
  ctx.backend = backend->kind();
  ctx.device = backend->device_info();
  ctx.ceilings = backend->ceilings(options.remeasure_ceilings);
  ctx.sweep = {{"calibrate", true}, {"points", core::calibration_probes().size()}};
#ifdef ATTNPROF_HAVE_CUDA
  MeasureOptions measure;
  measure.counters = options.counters;
  measure.verify = false;
  results.records = measure_calibration_probes(options.device, ctx.device, measure);
  ctx.options = measure;
#endif
  return results;
}

}  // namespace attnprof::measure
