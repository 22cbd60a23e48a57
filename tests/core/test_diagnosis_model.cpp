// core/diagnosis_model.cpp: the typed diagnosis and its JSON: every verdict, flag and memory level
// named and parsed back, a full round trip, and the lenient reading of older or foreign files (nulls,
// wrong types, unknown or repeated flags).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/diagnosis_model.hpp"

using namespace attnprof::core;
using nlohmann::json;

TEST_CASE("verdicts, flags and memory levels: each name parses back to its value") {
  for (Verdict v : kAllVerdicts) CHECK(parse_verdict(to_string(v)) == v);
  for (Flag f : kAllFlags) CHECK(parse_flag(to_string(f)) == f);
  for (MemoryLevel l : {MemoryLevel::dram, MemoryLevel::l2, MemoryLevel::l1, MemoryLevel::on_chip})
    CHECK(parse_memory_level(to_string(l)) == l);
  CHECK(to_string(Verdict::memory_bound) == "memory-bound");
  CHECK(to_string(Flag::tail_effect) == "tail-effect");
  CHECK(to_string(MemoryLevel::on_chip) == "on-chip");
  CHECK(level_name(MemoryLevel::dram) == "HBM (DRAM)");
  CHECK_FALSE(parse_verdict("fast"));
  CHECK_FALSE(parse_flag("tail_effect"));  // the JSON spelling has a dash
  CHECK_FALSE(parse_memory_level(""));
}

TEST_CASE("Diagnosis: to_json and back is the same diagnosis") {
  Diagnosis d;
  d.verdict = Verdict::memory_bound;
  d.flags = {Flag::tail_effect, Flag::noisy};
  d.evidence = {"DRAM at 91% of the roof"};
  d.next_step = "read less";
  d.metrics.p50_us = 12.5;
  d.metrics.work_tiles = 160;
  d.metrics.top_stall = "long_scoreboard";
  d.metrics.persistent_grid = true;
  d.metrics.memory_level = MemoryLevel::l2;
  LaunchDiagnosis l;
  l.name = "softmax";
  l.kernel = "softmax_kernel";
  l.time_share = 0.25;
  l.duration_us = 3;
  l.dram_bytes = 1e6;
  l.verdict = Verdict::memory_bound;
  d.launches = {l};
  const json j = d;
  CHECK(j.at("verdict") == "memory-bound");
  CHECK(j.at("flags") == json({"tail-effect", "noisy"}));
  CHECK(j.at("metrics").at("p50_us") == 12.5);
  CHECK(j.at("metrics").at("p99_us").is_null());  // unknown is null, never absent
  CHECK(j.at("metrics").at("memory_level") == "l2");
  const Diagnosis back = j.get<Diagnosis>();
  CHECK(back.verdict == d.verdict);
  CHECK(back.flags == d.flags);
  CHECK(back.evidence == d.evidence);
  CHECK(back.next_step == d.next_step);
  CHECK(back.metrics.p50_us == 12.5);
  CHECK_FALSE(back.metrics.p99_us);
  CHECK(back.metrics.work_tiles == 160);
  CHECK(back.metrics.top_stall == "long_scoreboard");
  CHECK(back.metrics.persistent_grid == true);
  CHECK(back.metrics.memory_level == MemoryLevel::l2);
  REQUIRE(back.launches.size() == 1);
  CHECK(back.launches[0].name == "softmax");
  CHECK(back.launches[0].dram_bytes == 1e6);
  CHECK_FALSE(back.launches[0].compute_sol_pct);
  CHECK(back.launches[0].verdict == Verdict::memory_bound);
  CHECK(back.has(Flag::noisy));
  CHECK_FALSE(back.has(Flag::throttled));
}

TEST_CASE("Diagnosis: NaN is written as null; unknown, mistyped and repeated entries read as unknown") {
  DiagnosisMetrics m;
  m.waves = std::numeric_limits<double>::quiet_NaN();
  CHECK(json(m).at("waves").is_null());
  const json j = {{"verdict", "warp-bound"},
                  {"flags", {"noisy", "tail-effect", "noisy", "sparkly", 7}},
                  {"evidence", {"one", 2}},
                  {"metrics", {{"p50_us", "nan"}, {"work_tiles", 12.0}, {"decode", "yes"}, {"sm_mhz_median", 1755}}},
                  {"launches", {{{"name", "gemm"}, {"verdict", "nonsense"}}}}};
  const Diagnosis d = j.get<Diagnosis>();
  CHECK(d.verdict == Verdict::unknown);
  CHECK(d.flags == std::vector<Flag>{Flag::tail_effect, Flag::noisy});  // kAllFlags order, once each
  CHECK(d.evidence == std::vector<std::string>{"one"});
  CHECK_FALSE(d.metrics.p50_us);
  CHECK(d.metrics.work_tiles == 12);
  CHECK_FALSE(d.metrics.decode);
  CHECK(d.metrics.sm_mhz_median == 1755);
  REQUIRE(d.launches.size() == 1);
  CHECK(d.launches[0].name == "gemm");
  CHECK_FALSE(d.launches[0].verdict);
  CHECK(json("not an object").get<Diagnosis>().verdict == Verdict::unknown);
}
