// The sweep journal, DIR/results.journal.jsonl: a header line naming the sweep, then one JSON record
// per finished point, each flushed to disk (fsync) before the next point starts. It is what --resume
// reads and what survives a crash or a kill; results.json is rebuilt from it. With a counter phase
// (--counter-batch > 1) a point appears twice: timed with counters "pending", then complete; the later
// line wins, and --resume collects the counters still pending without timing those points again.
#pragma once
#include <istream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "core/results.hpp"

namespace attnprof::run {

inline constexpr int kJournalVersion = 1;

struct Journal {
  nlohmann::json identity;             // what makes two runs the same sweep (spec, shard, kernels, ...)
  std::vector<core::Record> records;   // finished points, in the order they finished
  bool dropped_torn_tail = false;      // the last line was cut short (killed mid-write) and ignored
};

// Throws InputError (one line) when the file is unreadable, has no header, or a line other than the
// last is not a record. A torn last line is dropped: it is the point that was being written.
Journal read_journal(const std::string& path);
Journal parse_journal(std::istream& in, const std::string& name);

class JournalWriter {
 public:
  // Rewrites `path` atomically (core::write_file) with the header and `existing` records, then keeps
  // it open for append.
  JournalWriter(std::string path, const nlohmann::json& identity,
                const std::vector<core::Record>& existing);

  // Appends one line and fsyncs it; throws EnvironmentError when the disk refuses.
  void append(const core::Record&);
  const std::string& path() const { return file_.path(); }

 private:
  core::AppendFile file_;
};

}  // namespace attnprof::run
