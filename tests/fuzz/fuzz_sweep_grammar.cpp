// Fuzz target: the sweep grammar (--axes) and the single-shape form (--shape). Any input must end in
// a SweepSpec or an InputError: no crash, no sanitizer report, no other exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/errors.hpp"
#include "core/sweep_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto spec = attnprof::core::parse_axes(text);
    for (const auto& s : spec.shapes) (void)s.label();
  } catch (const attnprof::InputError&) {
  }
  try {
    (void)attnprof::core::parse_shape(text);
  } catch (const attnprof::InputError&) {
  }
  return 0;
}
