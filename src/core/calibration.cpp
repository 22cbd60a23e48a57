#include "core/calibration.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/diagnosis.hpp"

namespace attnprof::core {

const std::vector<CalibrationProbe>& calibration_probes() {
  // Each probe is a clear case for its rule (docs/diagnosis.md), with margin on every threshold.
  static const std::vector<CalibrationProbe> probes = {
      {"hbm-copy", kVerdictMemory, DType::bf16,
       "float4 copy of 1 GiB to 1 GiB, L2 flushed: streams HBM at close to its bandwidth", MemoryLevel::dram},
      {"l2-copy", kVerdictMemory, DType::bf16,
       "copy between two buffers an eighth of L2 each, 64 passes, L2 warm: L2 bandwidth, no HBM traffic",
       MemoryLevel::l2},
      {"mma-loop", kVerdictCompute, DType::bf16,
       "8 independent mma.sync m16n8k16 bf16 chains per warp, 64 warps per SM, no memory traffic"},
      {"fma-loop", kVerdictCompute, DType::fp32,
       "8 independent FP32 FMA chains per thread, 64 warps per SM, no memory traffic"},
      {"empty-kernel", kVerdictLaunch, DType::fp32, "one block of one thread that does nothing"},
      {"pointer-chase", kVerdictLatency, DType::fp32,
       "two warps per SM, each thread 2048 dependent 4-byte loads over 512 MiB: one load in flight, "
       "neither unit busy, occupancy not limited by resources"},
      {"register-heavy", kVerdictOccupancy, DType::fp32,
       "160 live floats per thread fill the register file with one 256-thread block per SM (12.5% "
       "occupancy), each iteration waiting on a scattered load that only more warps could hide"},
  };
  return probes;
}

const CalibrationProbe* find_calibration_probe(std::string_view name) {
  for (const auto& p : calibration_probes())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<CalibrationRow> check_calibration(Results& results) {
  annotate(results);
  std::vector<CalibrationRow> rows;
  for (const auto& probe : calibration_probes()) {
    CalibrationRow row;
    row.probe = std::string(probe.name);
    row.expected = std::string(probe.expected_verdict);
    const auto it = std::find_if(results.records.begin(), results.records.end(),
                                 [&](const Record& r) { return r.kernel == probe.name; });
    if (it == results.records.end()) {
      row.got = "missing";
    } else if (it->status != Status::ok) {
      row.got = std::string(to_string(it->status));
    } else {
      const Record& r = *it;
      row.got = r.diagnosis ? std::string(to_string(r.diagnosis->verdict)) : "unknown";
      row.p50_us = r.latency.p50_us;
      if (row.p50_us > 0) {
        row.bytes_per_s = (r.cost.min_bytes_read + r.cost.min_bytes_write) / (row.p50_us * 1e-6);
        row.flops_per_s = r.cost.flops / (row.p50_us * 1e-6);
      }
      if (r.diagnosis) {
        const DiagnosisMetrics& m = r.diagnosis->metrics;
        row.compute_sol_pct = m.compute_sol_pct;
        row.memory_sol_pct = m.memory_sol_pct;
        if (m.sol_source) row.sol_source = *m.sol_source;
        // The level is known only from the per-level counters; without them it is not judged.
        if (m.dram_sol_source == "counters" || m.l2_sol_pct || m.l1_sol_pct) row.got_level = m.memory_level;
      }
    }
    row.expected_level = probe.expected_level;
    row.matches = row.got == row.expected &&
                  (!row.expected_level || !row.got_level || *row.got_level == *row.expected_level);
    rows.push_back(std::move(row));
  }
  return rows;
}

bool all_match(const std::vector<CalibrationRow>& rows) {
  return std::all_of(rows.begin(), rows.end(), [](const CalibrationRow& r) { return r.matches; });
}

}  // namespace attnprof::core
