// Files in and out: the one writer every output goes through, the readers' limits, and the check
// that no output of a command names one of its inputs or another of its outputs. Paths are bytes:
// nothing here assumes they are UTF-8.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <limits>
#include <istream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnprof::core {

// Deepest JSON nesting any reader accepts. attnprof's own files nest 6 deep; a hostile file nested
// tens of thousands deep would otherwise exhaust the stack in the recursive copy/dump/destroy paths.
inline constexpr int kMaxJsonDepth = 64;
// Largest sweep file read (a {"shapes": [...]} list of kMaxSweepPoints shapes is about 1 MB).
inline constexpr size_t kMaxSpecFileBytes = size_t{4} << 20;

// Writes `content` to `path` so that a reader never sees a partial file: it goes to
// `path.tmp.<pid>` in the same folder, every write and the fsync are checked, then it is renamed
// over `path`; on any failure the temporary file is removed and EnvironmentError (exit 4) names
// `path` and the OS's reason. An existing non-regular target (/dev/null, a FIFO) cannot be renamed
// onto, and a path under /dev or /proc (/dev/stdout) names a stream, not a file to replace: both
// are written in place, every write checked (/dev/full fails). A folder
// at `path` is bad input (InputError, exit 2). A symbolic link is followed: its target is replaced.
void write_file(const std::string& path, std::string_view content);

// A file written a record at a time (a journal): opened for appending, each append() written whole,
// every write checked, and fsynced before it returns, so that a crash loses at most the record being
// written. EnvironmentError (exit 4) names the path and the OS's reason. Create the file first with
// write_file.
class AppendFile {
 public:
  explicit AppendFile(std::string path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void append(std::string_view content);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// The whole of a text file of at most `max_bytes`, read by at most max_bytes + 1 bytes so that an
// endless file (/dev/zero) is refused early. InputError when it is missing, a folder, unreadable
// or too large. `what` names the file in messages ("sweep file").
std::string read_file(const std::string& path, std::string_view what, size_t max_bytes);

// Parses JSON refusing nesting deeper than kMaxJsonDepth. Throws nlohmann's parse_error for bad
// syntax (callers add the file name) and InputError for the depth.
nlohmann::json parse_json(std::string_view text);
nlohmann::json parse_json(std::istream& in);

// An integer field read from a file, checked: nlohmann's get<int64_t> wraps 2^64 and casts 1e30
// (undefined behaviour). InputError names `key` when the value is not an integer in T's range.
template <class T>
T json_int(const nlohmann::json& v, std::string_view key);

// Opens a results-like file for parse_json: InputError when it is missing, unreadable or a folder.
std::ifstream open_input(const std::string& path, std::string_view what);

// The JSON text of `j`, with any byte sequence that is not UTF-8 (a path from the command line)
// replaced by U+FFFD instead of throwing: a results file is never lost to a byte in a path.
std::string dump_json(const nlohmann::json& j, int indent = -1);

// One file a command names: the option it came from ("--html") and the path as given.
struct NamedPath {
  std::string option;
  std::string path;
};
// Refuses (InputError, exit 2), before any work, an output that is one of the inputs or another
// output: same device and inode when both exist, else the same weakly-canonical path. Empty paths
// (option not given) and existing non-regular files (/dev/null, /dev/stdout) are not compared. An
// output that is an existing folder is refused too.
void check_distinct_paths(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

[[noreturn]] void throw_bad_int(const nlohmann::json& v, std::string_view key);

template <class T>
T json_int(const nlohmann::json& v, std::string_view key) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw_bad_int(v, key);
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0 || static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw_bad_int(v, key);
    } else {
      if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) || i > static_cast<int64_t>(std::numeric_limits<T>::max()))
        throw_bad_int(v, key);
    }
    return static_cast<T>(i);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^digits is the first value past T's range, exactly representable as a double.
    if (!(d == std::floor(d) && d >= static_cast<double>(std::numeric_limits<T>::min()) &&
          d < std::ldexp(1.0, std::numeric_limits<T>::digits)))
      throw_bad_int(v, key);
    return static_cast<T>(d);
  }
  throw_bad_int(v, key);
}

}  // namespace attnprof::core
