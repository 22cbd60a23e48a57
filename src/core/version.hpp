// attnprof's version and the commit it was built from. Defined in version.cpp, the one file that
// sees the build's git revision, so a new commit recompiles one file rather than the whole tree.
#pragma once
#include <string_view>

namespace attnprof::core {

std::string_view tool_version();
std::string_view git_revision();

}  // namespace attnprof::core
