#include "run/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/files.hpp"

namespace attnprof::run {

using nlohmann::json;

namespace {

void write_all(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw EnvironmentError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
}

std::string header_line(const json& identity) {
  return core::dump_json(json{{"attnprof_journal", kJournalVersion}, {"identity", identity}}) + '\n';
}

}  // namespace

Journal parse_journal(std::istream& in, const std::string& name) {
  Journal journal;
  std::string line;
  int line_no = 0;
  bool have_header = false;
  std::string pending_error;  // a bad line is only fatal when another line follows it
  while (std::getline(in, line)) {
    ++line_no;
    if (!pending_error.empty()) throw InputError(pending_error);
    const bool complete = !in.eof();  // getline hit a newline: the line was fully written
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      if (!complete && have_header) {
        journal.dropped_torn_tail = true;
        continue;
      }
      pending_error = fmt::format("journal '{}' line {} is not JSON", name, line_no);
      continue;
    }
    if (!have_header) {
      if (!j.is_object() || !j.contains("attnprof_journal"))
        throw InputError(fmt::format("'{}' is not an attnprof journal (no header line)", name));
      if (j.at("attnprof_journal") != kJournalVersion)
        throw InputError(fmt::format("journal '{}' has version {}, this attnprof writes {}", name,
                                     j.at("attnprof_journal").dump(), kJournalVersion));
      journal.identity = j.value("identity", json::object());
      have_header = true;
      continue;
    }
    try {
      journal.records.push_back(j.get<core::Record>());
    } catch (const std::exception& e) {
      pending_error = fmt::format("journal '{}' line {} is not a record: {}", name, line_no, e.what());
    }
  }
  if (!pending_error.empty()) {
    if (!have_header) throw InputError(pending_error);
    journal.dropped_torn_tail = true;
  }
  if (!have_header) throw InputError(fmt::format("journal '{}' is empty", name));
  return journal;
}

Journal read_journal(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("cannot read journal '{}'", path));
  return parse_journal(in, path);
}

JournalWriter::JournalWriter(std::string path, const json& identity,
                             const std::vector<core::Record>& existing)
    : path_(std::move(path)) {
  const std::string tmp = path_ + ".tmp";
  {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw EnvironmentError(fmt::format("cannot create '{}': {}", tmp, std::strerror(errno)));
    std::string text = header_line(identity);
    for (const auto& r : existing) text += core::dump_json(json(r)) + '\n';
    try {
      write_all(fd, text, tmp);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::fsync(fd);
    ::close(fd);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0)
    throw EnvironmentError(fmt::format("cannot rename '{}' to '{}': {}", tmp, path_, std::strerror(errno)));
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw EnvironmentError(fmt::format("cannot open '{}': {}", path_, std::strerror(errno)));
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JournalWriter::append(const core::Record& record) {
  // One write of the whole line: a kill leaves at most a torn last line, which the reader drops.
  write_all(fd_, core::dump_json(json(record)) + '\n', path_);
  if (::fsync(fd_) != 0)
    throw EnvironmentError(fmt::format("cannot sync '{}': {}", path_, std::strerror(errno)));
}

}  // namespace attnprof::run
