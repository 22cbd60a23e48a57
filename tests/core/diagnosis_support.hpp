// Known-answer inputs of the diagnosis tests (test_diagnosis_rules.cpp, test_diagnosis_facts.cpp): a GPU
// context with round ceilings and a prefill record carrying every counter of the default set.
#pragma once
#include <algorithm>
#include <string>

#include "core/diagnosis.hpp"
#include "core/results.hpp"

namespace attnprof::core::test {

constexpr double kBw = 4e12;        // [bytes/s]
constexpr double kPeakBf16 = 8e14;  // [FLOP/s]; ridge 200 FLOP/B

inline Context gpu_context() {
  Context ctx;
  ctx.backend = BackendKind::cuda;
  ctx.device.name = "Test GPU (not in the datasheet table)";
  ctx.ceilings.peak_bw_bytes_per_s = kBw;
  ctx.ceilings.peak_flops_per_s["bf16"] = kPeakBf16;
  ctx.ceilings.source = "measured";
  return ctx;
}

// A prefill point with every counter of the default set: 1e11 FLOP, 1e8 B read and 5e7 B written (the
// minimum), in 300 us; the SOL, level and stall figures are set per test.
inline Record counted_record() {
  Record r;
  r.shape = Shape{4, 16, 16, 2048, 2048, 128, false, DType::bf16};
  r.kernel = "vendor";
  r.backend = BackendKind::cuda;
  r.status = Status::ok;
  r.cost.flops = 1.0e11;
  r.cost.flops_dense = 1.0e11;
  r.cost.min_bytes_read = 1.0e8;
  r.cost.min_bytes_write = 0.5e8;
  r.latency.n = 50;
  r.latency.p50_us = 300;
  r.latency.p99_us = 310;
  r.latency.rel_stddev = 0.01;
  r.counters.status = CounterStatus::ok;
  r.counters.total[kMetricDramRead] = 1.0e8;
  r.counters.total[kMetricDramWrite] = 0.5e8;
  r.counters.total[kMetricTensorOpsBf16] = 1.0e11;
  r.counters.total[kMetricComputeSol] = 30;
  r.counters.total[kMetricMemorySol] = 40;
  r.counters.total[kMetricTensorPipeActive] = 20;
  r.counters.total[kMetricDramSol] = 30;
  r.counters.total[kMetricL2Sol] = 35;
  r.counters.total[kMetricL1Sol] = 20;
  r.counters.total[kMetricL2Bytes] = 1.6e8;
  r.counters.total[kMetricL2HitRate] = 5;
  r.occupancy.grid_blocks = 1056;
  r.occupancy.blocks_per_sm = 8;
  r.occupancy.sm_count = 132;
  r.occupancy.waves = 1.0;
  r.occupancy.theoretical_pct = 100;
  r.verification.checked = r.verification.passed = true;
  return r;
}

// HBM and L2 throughputs with the L2 traffic `l2_over_dram` x the DRAM bytes at `hit_rate` %.
inline void with_levels(Record& r, double dram, double l2, double l2_over_dram, double hit_rate) {
  r.counters.total[kMetricDramSol] = dram;
  r.counters.total[kMetricL2Sol] = l2;
  r.counters.total[kMetricMemorySol] = std::max(dram, l2);
  r.counters.total[kMetricL2Bytes] =
      l2_over_dram * (r.counters.total[kMetricDramRead] + r.counters.total[kMetricDramWrite]);
  r.counters.total[kMetricL2HitRate] = hit_rate;
}

// Low occupancy with idle issue slots and the warps waiting `stall_share` of their cycles on results.
inline void with_stalls(Record& r, double stall_share, double issue_active = 30) {
  r.occupancy.theoretical_pct = 12.5;
  r.occupancy.limiter = "registers";
  r.counters.total[kMetricIssueActive] = issue_active;
  r.counters.total[kMetricWarpsPerIssue] = 4;
  r.counters.total[kMetricStallLongScoreboard] = 4 * stall_share;
  r.counters.total[kMetricStallShortScoreboard] = 0;
  r.counters.total[kMetricStallWait] = 0;
}

// The instruction mix of `sweep --stalls`: `total` warp instructions, 30% FMA, 20% ALU, 15% load/store,
// 10% tensor, 10% uniform, 5% transcendental, 5% branch/barrier (CBU 4%, ADU 1%), no TMA, 5% in no listed pipe.
inline void with_instruction_mix(Record& r, double total = 1e9) {
  r.counters.total[kMetricInstExecuted] = total;
  r.counters.total[kMetricInstPipeTensor] = 0.10 * total;
  r.counters.total[kMetricInstPipeFma] = 0.30 * total;
  r.counters.total[kMetricInstPipeAlu] = 0.20 * total;
  r.counters.total[kMetricInstPipeXu] = 0.05 * total;
  r.counters.total[kMetricInstPipeLsu] = 0.15 * total;
  r.counters.total[kMetricInstPipeCbu] = 0.04 * total;
  r.counters.total[kMetricInstPipeAdu] = 0.01 * total;
  r.counters.total[kMetricInstPipeUniform] = 0.10 * total;
  r.counters.total[kMetricInstPipeTma] = 0;
  r.counters.total[kMetricInstPipeFp64] = 0;
}

inline std::string evidence_text(const Diagnosis& d) {
  std::string all;
  for (const auto& line : d.evidence) all += line + "\n";
  return all;
}

inline Diagnosis diagnosed(const Record& r) { return diagnose(r, gpu_context()); }

}  // namespace attnprof::core::test
