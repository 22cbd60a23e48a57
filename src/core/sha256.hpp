// SHA-256 (FIPS 180-4) of a file's bytes: how the results name the exact build of a plugin.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace attnprof::core {

// Lower-case hex digest of `bytes`.
std::string sha256_hex(std::string_view bytes);
// Of a file's contents; throws InputError when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace attnprof::core
