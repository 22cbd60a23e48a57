#include "core/version.hpp"

#include "attnprof_revision.inc"  // ATTNPROF_GIT_REVISION, written at every build (cmake/revision.cmake)

namespace attnprof::core {

std::string_view tool_version() { return ATTNPROF_VERSION; }
std::string_view git_revision() { return ATTNPROF_GIT_REVISION; }

}  // namespace attnprof::core
