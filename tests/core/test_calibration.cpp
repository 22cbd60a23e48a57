#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "core/calibration.hpp"
#include "core/diagnosis.hpp"
#include "core/roofline.hpp"

using namespace attnprof::core;

namespace {

// A probe record as calibrate leaves it, counters with the two speed-of-light percentages.
Record probe(std::string_view name, double p50_us, double compute_sol, double memory_sol) {
  Record r;
  r.kernel = std::string(name);
  r.backend = attnprof::core::BackendKind::cuda;
  r.shape.dtype = find_calibration_probe(name)->dtype;
  r.samples_us = {p50_us};
  r.latency.n = 1;
  r.latency.p50_us = r.latency.p99_us = r.latency.mean_us = p50_us;
  r.cost.min_bytes_read = 1e9;
  r.counters.status = attnprof::core::CounterStatus::ok;
  r.counters.total[kMetricComputeSol] = compute_sol;
  r.counters.total[kMetricMemorySol] = memory_sol;
  r.launches.resize(1);
  r.occupancy.theoretical_pct = 100;
  r.occupancy.limiter = "blocks";
  return r;
}

}  // namespace

TEST_CASE("the known-answer table: unique names, a verdict of the diagnosis for each") {
  const std::set<std::string_view> verdicts = {kVerdictMemory, kVerdictCompute, kVerdictLatency, kVerdictOccupancy,
                                               kVerdictLaunch};
  std::set<std::string_view> names, covered;
  for (const auto& p : calibration_probes()) {
    INFO(p.name);
    CHECK(names.insert(p.name).second);
    CHECK(verdicts.count(p.expected_verdict) == 1);
    CHECK(!p.what.empty());
    CHECK(find_calibration_probe(p.name) == &p);
    covered.insert(p.expected_verdict);
  }
  CHECK(covered == verdicts);  // every verdict has a probe
  CHECK(find_calibration_probe("no-such-probe") == nullptr);
}

TEST_CASE("check_calibration compares each probe's diagnosis with its expected verdict") {
  Results res;
  res.context.ceilings = datasheet_ceilings(*find_datasheet("h200"));
  Record copy = probe("hbm-copy", 500, 10, 92);
  // A plain stream: L2 busier than HBM by its fills, not by re-reads.
  copy.counters.total[kMetricDramSol] = 90;
  copy.counters.total[kMetricL2Sol] = 92;
  copy.counters.total[kMetricL2HitRate] = 0.5;
  res.records.push_back(copy);
  res.records.push_back(probe("fma-loop", 1000, 95, 2));
  res.records.push_back(probe("empty-kernel", 2, 0, 0));
  Record chase = probe("pointer-chase", 2000, 3, 8);
  res.records.push_back(chase);
  Record heavy = probe("register-heavy", 2000, 25, 5);
  heavy.occupancy.theoretical_pct = 12.5;
  heavy.occupancy.limiter = "registers";
  // Occupancy limits only when latency is not hidden: few issue slots used, warps waiting on memory.
  heavy.counters.total[kMetricIssueActive] = 10;
  heavy.counters.total[kMetricWarpsPerIssue] = 4;
  heavy.counters.total[kMetricStallLongScoreboard] = 3.5;
  heavy.counters.total[kMetricStallShortScoreboard] = 0;
  heavy.counters.total[kMetricStallWait] = 0.1;
  res.records.push_back(heavy);
  // The MMA probe diagnosed memory-bound: a verdict that differs.
  res.records.push_back(probe("mma-loop", 1000, 5, 90));
  // l2-copy failed to run.
  Record failed = probe("l2-copy", 0, 0, 0);
  failed.status = Status::failed;
  res.records.push_back(failed);

  const auto rows = check_calibration(res);
  REQUIRE(rows.size() == calibration_probes().size());
  auto row = [&](std::string_view name) {
    for (const auto& r : rows)
      if (r.probe == name) return r;
    FAIL("no row " << name);
    return CalibrationRow{};
  };
  CHECK(row("hbm-copy").got == kVerdictMemory);
  CHECK(row("hbm-copy").matches);
  CHECK(row("hbm-copy").bytes_per_s == Approx(1e9 / 500e-6));
  CHECK(row("hbm-copy").memory_sol_pct == Approx(92));
  CHECK(row("hbm-copy").got_level == MemoryLevel::dram);
  CHECK(row("hbm-copy").expected_level == MemoryLevel::dram);
  CHECK(row("fma-loop").matches);
  CHECK(row("empty-kernel").got == kVerdictLaunch);
  CHECK(row("pointer-chase").got == kVerdictLatency);
  CHECK(row("register-heavy").got == kVerdictOccupancy);
  CHECK(row("mma-loop").got == kVerdictMemory);
  CHECK_FALSE(row("mma-loop").matches);
  CHECK(row("l2-copy").got == "failed");
  CHECK_FALSE(all_match(rows));
  // Every record was diagnosed in place.
  REQUIRE(res.records[0].diagnosis.has_value());
  CHECK(to_string(res.records[0].diagnosis->verdict) == kVerdictMemory);

  // A missing probe reads "missing"; once all match, all_match says so.
  Results none;
  const auto missing = check_calibration(none);
  CHECK(missing.front().got == "missing");
  CHECK_FALSE(all_match(missing));
  std::vector<CalibrationRow> good(2);
  for (auto& r : good) r.matches = true;
  CHECK(all_match(good));
}

TEST_CASE("a memory probe must name its level when the per-level counters say it") {
  Results res;
  res.context.ceilings = datasheet_ceilings(*find_datasheet("h200"));
  // l2-copy: L2 at 90% with the traffic re-read from L2 (64 passes over L2-resident buffers).
  Record l2 = probe("l2-copy", 500, 10, 90);
  l2.counters.total[kMetricDramSol] = 2;
  l2.counters.total[kMetricL2Sol] = 90;
  l2.counters.total[kMetricL2HitRate] = 99;
  l2.counters.total[kMetricDramRead] = 1e7;
  l2.counters.total[kMetricDramWrite] = 1e7;
  l2.counters.total[kMetricL2Bytes] = 6.4e10;
  res.records.push_back(l2);
  auto l2_row = [](const std::vector<CalibrationRow>& rows) {
    return *std::find_if(rows.begin(), rows.end(), [](const CalibrationRow& r) { return r.probe == "l2-copy"; });
  };
  CalibrationRow row = l2_row(check_calibration(res));
  CHECK(row.got == kVerdictMemory);
  CHECK(row.got_level == MemoryLevel::l2);
  CHECK(row.matches);
  // The same verdict on the wrong level (its L2 traffic no more than the DRAM bytes: a stream) differs.
  res.records[0].counters.total[kMetricL2Bytes] = 2e7;
  res.records[0].counters.total[kMetricDramSol] = 75;
  const auto rows = check_calibration(res);
  row = l2_row(rows);
  CHECK(row.got == kVerdictMemory);
  CHECK(row.got_level == MemoryLevel::dram);
  CHECK_FALSE(row.matches);
  // Without per-level counters the level is not judged.
  for (const char* m : {kMetricDramSol, kMetricL2Sol, kMetricL2HitRate, kMetricL2Bytes}) res.records[0].counters.total.erase(m);
  row = l2_row(check_calibration(res));
  CHECK_FALSE(row.got_level.has_value());
  CHECK(row.matches);
}
