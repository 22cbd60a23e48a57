#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "run/journal.hpp"

using namespace attnprof;
using namespace attnprof::run;
using nlohmann::json;

namespace {
core::Record record(int64_t seq, const char* kernel, core::Status status) {
  core::Record r;
  r.shape.seq_q = r.shape.seq_k = seq;
  r.kernel = kernel;
  r.status = status;
  r.samples_us = {1.5, 2.25};
  return r;
}
std::string line(const core::Record& r) { return json(r).dump() + "\n"; }
const json kIdentity{{"spec", "seq=64"}, {"shard", "1/1"}};
std::string header() { return json{{"attnprof_journal", kJournalVersion}, {"identity", kIdentity}}.dump() + "\n"; }
}  // namespace

TEST_CASE("a journal parses into its identity and records") {
  std::istringstream in(header() + line(record(64, "fused", core::Status::ok)) +
                        line(record(128, "reference", core::Status::failed)));
  const auto j = parse_journal(in, "j");
  CHECK(j.identity == kIdentity);
  REQUIRE(j.records.size() == 2);
  CHECK(j.records[1].status == core::Status::failed);
  CHECK(j.records[0].samples_us == std::vector<double>{1.5, 2.25});
  CHECK_FALSE(j.dropped_torn_tail);
}

TEST_CASE("a torn last line (killed mid-write) is dropped, a corrupt middle line is an error") {
  const std::string full = line(record(64, "fused", core::Status::ok));
  std::istringstream torn(header() + full + full.substr(0, full.size() / 2));
  const auto j = parse_journal(torn, "j");
  CHECK(j.records.size() == 1);
  CHECK(j.dropped_torn_tail);

  std::istringstream corrupt(header() + "{not json\n" + full);
  CHECK_THROWS_AS(parse_journal(corrupt, "j"), InputError);

  std::istringstream no_header(full);
  CHECK_THROWS_AS(parse_journal(no_header, "j"), InputError);
  std::istringstream empty("");
  CHECK_THROWS_AS(parse_journal(empty, "j"), InputError);
  std::istringstream other_version(json{{"attnprof_journal", 99}}.dump() + "\n");
  CHECK_THROWS_AS(parse_journal(other_version, "j"), InputError);
}

TEST_CASE("the journal writer keeps earlier records and appends new ones durably") {
  const std::string path = "test_journal_writer.jsonl";
  {
    JournalWriter w(path, kIdentity, {record(64, "fused", core::Status::ok)});
    w.append(record(128, "fused", core::Status::oom));
  }
  auto j = read_journal(path);
  REQUIRE(j.records.size() == 2);
  CHECK(j.records[1].status == core::Status::oom);
  {
    // Resuming: the writer rewrites the file from what was kept, then appends.
    JournalWriter w(path, kIdentity, j.records);
    w.append(record(256, "fused", core::Status::ok));
  }
  j = read_journal(path);
  REQUIRE(j.records.size() == 3);
  CHECK(j.records[2].shape.seq_q == 256);
  CHECK(j.identity == kIdentity);
  std::remove(path.c_str());
  CHECK_THROWS_AS(read_journal("no_such_journal.jsonl"), InputError);
}
