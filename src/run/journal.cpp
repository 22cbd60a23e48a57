#include "run/journal.hpp"

#include <fstream>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/files.hpp"

namespace attnprof::run {

using nlohmann::json;

namespace {

std::string record_line(const core::Record& record) { return core::dump_json(json(record)) + '\n'; }

// Replaces `path` (core::write_file: atomic, every write checked) with the header and `existing`;
// returns `path`, ready to append to.
std::string rewritten(std::string path, const json& identity, const std::vector<core::Record>& existing) {
  std::string text = core::dump_json(json{{"attnprof_journal", kJournalVersion}, {"identity", identity}}) + '\n';
  for (const auto& r : existing) text += record_line(r);
  core::write_file(path, text);
  return path;
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
    : file_(rewritten(std::move(path), identity, existing)) {}

// One write of the whole line: a kill leaves at most a torn last line, which the reader drops.
void JournalWriter::append(const core::Record& record) { file_.append(record_line(record)); }

}  // namespace attnprof::run
