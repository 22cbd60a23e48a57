// Fuzz target: the results reader and everything downstream of it that reads only a results file:
// the diagnosis, every renderer and the gate (the file compared with itself, few resamples to keep
// each run short). Any text must end in output or an InputError.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

#include "core/diagnosis.hpp"
#include "core/errors.hpp"
#include "core/results.hpp"
#include "gate/compare.hpp"
#include "gate/render.hpp"
#include "report/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnprof;
  core::Results results;
  try {
    results = core::parse_results(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const InputError&) {
    return 0;
  }
  core::annotate(results);
  std::ostringstream out;
  for (const report::Renderer* renderer : report::renderers()) renderer->render(results, out);
  gate::Options options;
  options.bootstrap_resamples = 10;
  options.allow_device_mismatch = true;
  const gate::Comparison cmp = gate::compare(results, results, options);
  out << gate::render_terminal(cmp) << gate::render_markdown(cmp) << gate::render_junit(cmp)
      << gate::render_json(cmp);
  return 0;
}
