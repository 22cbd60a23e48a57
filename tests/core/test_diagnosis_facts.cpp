// core/diagnosis_facts.cpp: the numbers a verdict judges by, on known answers. The roofline's bytes
// (counted, never under the minimum, the L2 tail included, replayed writes replaced by the outputs'
// minimum), its exact FLOPs beside the counted padded ones, and the enums of pipes and sources.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/cost_model.hpp"
#include "core/diagnosis.hpp"
#include "core/diagnosis_facts.hpp"
#include "core/results.hpp"
#include "diagnosis_support.hpp"

using namespace attnprof::core;
using namespace attnprof::core::test;

TEST_CASE("replayed DRAM writes are not the call's: the outputs' minimum stands in") {
  Record r = counted_record();
  r.counters.dram_source = DramSource::replayed;
  r.counters.total[kMetricDramWrite] = 1.2e7 + 0.5e8;  // 12 MB the call never wrote
  r.counters.dram_write_tail_bytes = 3e6;
  const Diagnosis d = diagnosed(r);
  CHECK(d.metrics.dram_writes_trusted == false);
  CHECK(d.metrics.dram_bytes.value() == Approx(1.5e8));  // reads + the minimum writes
  CHECK(d.metrics.dram_bytes_write.value() == Approx(0.5e8));
  CHECK(d.metrics.bytes_source == "DRAM counters (reads) + the outputs' minimum writes");
  CHECK_FALSE(d.metrics.write_traffic_ratio.has_value());
  CHECK(d.metrics.read_traffic_ratio.value() == Approx(1.0));
  CHECK_FALSE(d.has(Flag::excess_traffic));
  CHECK_THAT(evidence_text(d), Catch::Contains("writes: 62 MB counted on replayed passes, not the call's; the outputs' "
                                               "50 MB are used"));
  // An older file says it in the counters' reason.
  r.counters.dram_source = DramSource::none;
  r.counters.reason = "batched session not used: kernel replay";
  CHECK(diagnosed(r).metrics.dram_writes_trusted == false);
  r.counters.reason.clear();
  const Diagnosis trusted = diagnosed(r);
  CHECK(trusted.metrics.dram_writes_trusted == true);
  CHECK(trusted.metrics.dram_bytes.value() == Approx(1.0e8 + 6.2e7 + 3e6));
}

TEST_CASE("the roofline's bytes include the L2 tail and are never under the minimum") {
  Record r = counted_record();
  r.counters.total[kMetricDramRead] = 0.8e8;  // inputs partly in L2 already: 1.3e8 < 1.5e8
  Diagnosis d = diagnosed(r);
  CHECK(d.metrics.dram_bytes.value() == Approx(1.5e8));
  CHECK(d.metrics.bytes_source == "cost-model minimum (over the counted DRAM bytes)");
  CHECK(d.metrics.intensity_flop_per_byte.value() == Approx(1e11 / 1.5e8));
  CHECK_THAT(evidence_text(d), Catch::Contains("under the cost model's minimum 150 MB"));
  r.counters.dram_write_tail_bytes = 0.3e8;  // with the tail, 1.6e8: over the minimum
  d = diagnosed(r);
  CHECK(d.metrics.dram_bytes.value() == Approx(1.6e8));
  CHECK(d.metrics.bytes_source == "DRAM counters");
}

TEST_CASE("padded FLOPs: a decode point sits on the roofline by its exact FLOPs, the counted ones are waste") {
  // fused at one query row: 128.6x the real FLOPs counted.
  Record r = counted_record();
  r.shape = Shape{16, 32, 8, 1, 16384, 128, false, DType::bf16};
  r.kernel = "fused";
  r.cost = cost_of(r.shape, KernelKind::fused);
  r.counters.total[kMetricDramRead] = r.cost.min_bytes_read;
  r.counters.total[kMetricDramWrite] = r.cost.min_bytes_write;
  r.counters.total[kMetricTensorOpsBf16] = 128.6 * r.cost.flops;
  r.latency.p50_us = 1452;
  const Diagnosis d = diagnosed(r);
  const double exact = r.cost.flops, bytes = r.cost.min_bytes_read + r.cost.min_bytes_write;
  CHECK(d.metrics.flops.value() == Approx(exact));
  CHECK(d.metrics.counted_flops.value() == Approx(128.6 * exact));
  CHECK(d.metrics.flops_vs_cost.value() == Approx(128.6));
  CHECK(d.metrics.padded_flop_share.value() == Approx(1 - 1 / 128.6));
  CHECK(d.metrics.intensity_flop_per_byte.value() == Approx(exact / bytes));
  const double achieved = exact / 1452e-6;
  CHECK(d.metrics.pct_of_roof.value() == Approx(achieved / std::min(kPeakBf16, kBw * exact / bytes) * 100));
  CHECK(d.metrics.pct_of_roof.value() < 50);
  CHECK_THAT(evidence_text(d), Catch::Contains("= 128.60x the cost model's"));
  CHECK_THAT(evidence_text(d), Catch::Contains("the other 99% of the counted ones are padded or redundant work"));
}

TEST_CASE("the facts: enums for pipes and sources, spelled in the metrics as before") {
  Record r = counted_record();
  DiagnosisFacts f = gather_facts(r, gpu_context());
  CHECK(f.pipes.pipe == ComputePipe::tensor);
  CHECK(f.sol.source == SolSource::counters);
  CHECK(f.work.bytes_source == BytesSource::counters);
  CHECK(to_string(ComputePipe::sm) == "sm");
  CHECK(to_string(ComputePipe::derived) == "derived");
  r.counters = Counters{};
  f = gather_facts(r, gpu_context());
  CHECK(f.pipes.pipe == ComputePipe::derived);
  CHECK(f.sol.source == SolSource::derived_cost_model);
  CHECK(f.work.bytes_source == BytesSource::cost_model);
  CHECK(diagnosed(r).metrics.compute_pipe == "derived");
}

TEST_CASE("achieved occupancy is the described launch's, not the call's mix of launches") {
  // PyTorch's flash backward on an H100: two copies at 92%, the main kernel at 12.5% (its record's).
  Record r = counted_record();
  r.occupancy.theoretical_pct = 12.5;
  r.occupancy.achieved_pct = 12.45;
  r.counters.total[kMetricAchievedOccupancy] = 33.0;  // the call's total over its five launches
  CHECK(diagnosed(r).metrics.achieved_occupancy_pct.value() == Approx(12.45));
  // A record without its launch's figure (an older file): the call's total stands in.
  r.occupancy.achieved_pct.reset();
  CHECK(diagnosed(r).metrics.achieved_occupancy_pct.value() == Approx(33.0));
  r.counters.total.erase(kMetricAchievedOccupancy);
  CHECK_FALSE(diagnosed(r).metrics.achieved_occupancy_pct.has_value());
}
