#include "core/version.hpp"

namespace attnprof::core {

std::string_view tool_version() { return ATTNPROF_VERSION; }
std::string_view git_revision() {
  return
#include "attnprof_revision.inc"
      ;
}

}  // namespace attnprof::core
