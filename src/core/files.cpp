#include "core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/escape.hpp"

namespace attnprof::core {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void write_failed(const std::string& path, int error) {
  throw EnvironmentError(fmt::format("cannot write '{}': {}", escape::one_line(path), std::strerror(error)));
}

// 0 on success, else the errno of the first failing write.
int write_all(int fd, std::string_view content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// A device, FIFO or stream: written where it is, since rename cannot replace it. O_APPEND: /dev/stdout
// redirected to a file opens that file anew, and must not write over what is already in it.
void write_in_place(const std::string& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) write_failed(path, errno);
  int error = write_all(fd, content);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) write_failed(path, error);
}

// Throws the depth error from inside nlohmann's parser, before the deep value is ever built.
json::parser_callback_t depth_guard() {
  // `depth` of a container's start event counts the containers around it (0 for the outermost).
  return [](int depth, json::parse_event_t event, json&) {
    const bool opens = event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth)
      throw InputError(fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth));
    return true;
  };
}

struct FileId {
  std::optional<struct stat> st;  // when it exists
  std::string canonical;
};

FileId identify(const std::string& path) {
  FileId id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) id.st = st;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::path(path), ec);
  id.canonical = ec ? fs::absolute(fs::path(path), ec).lexically_normal().string() : canonical.string();
  return id;
}

bool same_file(const FileId& a, const FileId& b) {
  if (a.st && b.st) return a.st->st_dev == b.st->st_dev && a.st->st_ino == b.st->st_ino;
  return a.canonical == b.canonical;
}

bool comparable(const FileId& id) { return !id.st || S_ISREG(id.st->st_mode) || S_ISDIR(id.st->st_mode); }

}  // namespace

void write_file(const std::string& given, std::string_view content) {
  // /dev/stdout, /dev/fd/3, /proc/self/fd/1 name open streams (perhaps a file the shell redirected
  // to), not files to replace: written where they are.
  std::error_code ec;
  const std::string absolute = fs::absolute(fs::path(given), ec).lexically_normal().string();
  if (absolute.starts_with("/dev/") || absolute.starts_with("/proc/")) return write_in_place(given, content);
  // Through a symbolic link the target is replaced, not the link (which rename alone would do).
  std::string path = given;
  struct stat lst {};
  if (::lstat(given.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    const fs::path target = fs::weakly_canonical(fs::path(given), ec);
    if (!ec) path = target.string();
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      throw InputError(fmt::format("cannot write '{}': it is a folder", escape::one_line(path)));
    if (!S_ISREG(st.st_mode)) return write_in_place(path, content);
  }
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) write_failed(path, errno);
  int error = write_all(fd, content);
  // fsync before rename: otherwise a crash right after could leave the new name on empty data.
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    write_failed(path, error);
  }
}

AppendFile::AppendFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) write_failed(path_, errno);
}

AppendFile::~AppendFile() { ::close(fd_); }

void AppendFile::append(std::string_view content) {
  int error = write_all(fd_, content);
  if (error == 0 && ::fsync(fd_) != 0) error = errno;
  if (error != 0) write_failed(path_, error);
}

std::string read_file(const std::string& path, std::string_view what, size_t max_bytes) {
  const std::string shown = escape::one_line(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("cannot read {} '{}': {}", what, shown, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError(fmt::format("{} '{}' is a folder, not a file", what, shown));
  }
  std::string text;
  char buffer[1 << 16];
  while (text.size() <= max_bytes) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw InputError(fmt::format("cannot read {} '{}': {}", what, shown, std::strerror(error)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (text.size() > max_bytes)
    throw InputError(fmt::format("{} '{}' is larger than {} bytes", what, shown, max_bytes));
  return text;
}

std::ifstream open_input(const std::string& path, std::string_view what) {
  const std::string shown = escape::one_line(path);
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("{} '{}' is a folder, not a file", what, shown));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot read {} '{}': {}", what, shown, std::strerror(errno)));
  return in;
}

json parse_json(std::string_view text) { return json::parse(text.begin(), text.end(), depth_guard()); }
json parse_json(std::istream& in) { return json::parse(in, depth_guard()); }

void throw_bad_int(const json& v, std::string_view key) {
  throw InputError(fmt::format("field '{}' holds {}, not an integer in range", key, dump_json(v)));
}

std::string dump_json(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

void check_distinct_paths(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  std::vector<std::pair<const NamedPath*, FileId>> seen;
  for (const auto& in : inputs)
    if (!in.path.empty()) seen.emplace_back(&in, identify(in.path));
  const size_t input_count = seen.size();
  for (const auto& out : outputs) {
    if (out.path.empty()) continue;
    FileId id = identify(out.path);
    // Refused now, not after a sweep's work: write_file would refuse it at the end.
    if (id.st && S_ISDIR(id.st->st_mode))
      throw InputError(fmt::format("{} '{}' is a folder, not a file", out.option, escape::one_line(out.path)));
    if (!comparable(id)) continue;
    for (size_t i = 0; i < seen.size(); ++i) {
      if (!comparable(seen[i].second) || !same_file(id, seen[i].second)) continue;
      const NamedPath& other = *seen[i].first;
      throw InputError(fmt::format("{} '{}' is the same file as {} '{}'{}", out.option, escape::one_line(out.path),
                                   i < input_count ? "the input" : "the output", escape::one_line(other.path),
                                   other.option.empty() ? "" : " (" + other.option + ")"));
    }
    seen.emplace_back(&out, std::move(id));
  }
}

}  // namespace attnprof::core
