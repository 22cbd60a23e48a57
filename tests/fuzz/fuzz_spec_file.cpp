// Fuzz target: the sweep-file reader (--spec-file). Any text must end in a SweepSpec or an
// InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/errors.hpp"
#include "core/sweep_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)attnprof::core::parse_sweep_file(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const attnprof::InputError&) {
  }
  return 0;
}
