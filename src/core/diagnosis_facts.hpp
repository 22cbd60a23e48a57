// The numbers a diagnosis judges by, computed once from a Record and its Context: the work (exact and
// counted FLOPs, DRAM bytes read and written, their trust), the roofline, speed of light, the memory
// levels and the one that binds, the compute pipes, stalls, the instruction mix, occupancy, launches,
// the decode view, the traffic against the minimum, the clock and the noise. The rules (diagnosis_rules.hpp) are functions
// of this struct alone, and core::diagnose (diagnosis.hpp) runs them over it; docs/diagnosis.md says how
// each number is obtained.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnosis_decode.hpp"
#include "core/diagnosis_model.hpp"
#include "core/instruction_mix.hpp"
#include "core/results.hpp"
#include "core/roofline.hpp"
#include "core/work_split.hpp"

namespace attnprof::core {

// The compute side a verdict compares with memory: the busier of the tensor and FMA pipes, else
// sm__throughput (`sm`), else the achieved FLOP/s over the roof (`derived`, without counters).
enum class ComputePipe { tensor, fma, sm, derived };
// Where the speed-of-light percentages come from.
enum class SolSource { counters, derived_counted_bytes, derived_cost_model };
// Where the roofline's DRAM bytes come from.
enum class BytesSource {
  counters,             // dram__bytes_read + dram__bytes_write (+ the L2 tail)
  counted_reads,        // counted reads + the outputs' minimum writes: the counted writes are not the call's
  minimum_over_counts,  // the counted bytes fall under the cost-model minimum, which stands in
  cost_model            // no counters
};

std::string_view to_string(ComputePipe);  // "tensor", "fma", "sm", "derived" (metrics.compute_pipe)
std::string_view to_string(SolSource);    // metrics.sol_source
std::string_view to_string(BytesSource);  // metrics.bytes_source

// FLOPs and DRAM bytes. The roofline places a point on the cost model's exact FLOPs: counted tensor
// ops include the padded rows of a query tile (128x the real work at one query row), which is the
// kernel's waste, not its position.
struct WorkFacts {
  double exact_flops = 0;                  // cost.flops
  std::optional<double> counted_flops;     // tensor-op (+ FP32) or FP32 instruction counters
  std::string counted_flops_source;        // "tensor-op counters", ...
  double counted_tensor_ops = 0;           // the tensor-op counters alone (0 when not counted)
  double min_bytes_read = 0, min_bytes_write = 0;
  bool counters_ok = false;
  std::optional<double> dram_read, dram_write;  // counted by the call's ranges (or passes)
  std::optional<double> dram_total;             // dram__bytes.sum, when the split was not collected
  bool writes_trusted = true;                   // core::dram_writes_trusted
  std::optional<double> l2_tail;                // lines left dirty in L2, written back after the call
  std::optional<double> read_bytes, write_bytes;  // used: counted reads; writes counted + tail, or the minimum
  std::optional<double> measured_bytes;           // read_bytes + write_bytes (or the total + tail)
  double bytes = 0;                               // the roofline's bytes: measured, never under the minimum
  BytesSource bytes_source = BytesSource::cost_model;

  double min_bytes() const { return min_bytes_read + min_bytes_write; }
  bool bytes_measured() const { return measured_bytes.has_value(); }
  std::optional<double> flops_vs_cost() const;  // counted / exact
};

struct RoofFacts {
  bool known = false;
  Ceilings ceilings;  // at the point's SM clock where the roofs were measured per MHz
  std::string source;
  // Why ceilings that place other points hold no roof for this point's dtype (core::missing_roof: an
  // fp8 point against ceilings measured without the fp8 probes); empty otherwise.
  std::string missing;
  double bw_bytes_per_s = 0, peak_flops_per_s = 0, ridge_flop_per_byte = 0;
  std::optional<double> roof_sm_mhz;
  std::optional<double> intensity;  // exact FLOPs / bytes
  std::optional<double> achieved_flops_per_s, achieved_bytes_per_s;
  std::optional<double> attainable_flops_per_s;
  std::optional<Bound> bound;
  std::optional<double> pct_of_roof, pct_of_clock_scaled_roof, pct_of_datasheet_roof;
  double clock_share = 1;  // median SM clock under load / maximum (1 when unknown)
};

struct SolFacts {
  std::optional<double> compute_pct, memory_pct;  // sm__throughput, combined memory (or derived)
  std::optional<SolSource> source;
  bool derived() const { return source && *source != SolSource::counters; }
};

// The memory levels and the one that binds (docs/diagnosis.md#rule-memory-level).
struct MemoryFacts {
  std::optional<double> dram_pct;  // counted dram__throughput, else DRAM bytes / P50 / bandwidth
  bool dram_counted = false;
  std::optional<double> dram_derived_pct;
  std::optional<double> l2_pct, l1_pct;
  std::optional<double> l2_bytes, l2_hit_rate_pct;
  std::optional<double> l2_over_dram;  // L2 bytes / the DRAM bytes measured
  std::optional<double> l2_bw_bytes_per_s;  // the L2 ceiling, when the results carry one
  // L2 led DRAM by the margin, but its traffic is DRAM's fills and reads (no re-reads shown), or HBM
  // is saturated: DRAM is named instead.
  bool l2_explained_by_dram = false;
  std::optional<bool> l2_rereads;  // L2 bytes / hit rate show re-reads; nullopt when neither was collected
  std::optional<MemoryLevel> level;
  std::optional<double> level_pct;  // the memory side of every verdict
  std::string how;                  // without per-level counters: how the level was decided
  bool per_level() const { return dram_counted || l2_pct || l1_pct; }
};

struct PipeFacts {
  std::optional<double> tensor_pct, fma_pct;
  std::optional<ComputePipe> pipe;
  std::optional<double> pct;
  double ops_per_instruction = 0;  // counted tensor ops per tensor instruction; 0 when unknown
  bool on_wgmma = false;           // over kWgmmaOpsPerInstructionAbove: Hopper's warpgroup MMA
};

// Where the resident warps of a scheduler are per issue cycle (diagnosis_facts.cpp).
struct StallFacts {
  std::optional<double> issue_active_pct;
  std::optional<double> latency_share;  // (long + short scoreboard + wait) / warps resident per issue
  std::string top;                      // the largest collected reason
  double top_share = 0;
  bool known() const { return issue_active_pct && latency_share; }
};

struct LaunchFacts {
  double p50_us = 0;
  int64_t launches = 1;          // CUPTI launch records or stages, at least one
  double latency_us = 0;         // an empty kernel's launch; 0 when not measured
  double limit_per_launch_us = 0;
  double limit_us() const { return limit_per_launch_us * static_cast<double>(launches); }
  bool launch_bound() const { return p50_us > 0 && p50_us < limit_us(); }
};

struct DecodeFacts {
  bool decode = false;
  DecodeInputs in;
  DecodeView view;
  DiagnosisMetrics metrics;  // the decode metrics decode_view filled
};

struct TrafficFacts {
  std::optional<double> read_ratio, write_ratio;  // each direction against its own minimum
  std::optional<double> total_ratio;               // all bytes (with the L2 tail) against the minimum
  bool materialized = false;
  double sp_share = 0;
};

struct SplitFacts {
  std::optional<RecordTiling> tiling;
  std::optional<PersistentSplit> split;
};

struct DiagnosisFacts {
  const Record* record = nullptr;
  const Context* context = nullptr;
  WorkFacts work;
  RoofFacts roof;
  SolFacts sol;
  MemoryFacts memory;
  PipeFacts pipes;
  StallFacts stalls;
  std::optional<InstructionMix> mix;  // warp instructions by class, when collected (sweep --stalls)
  double theoretical_occupancy_pct = 0;  // the occupancy calculator's (record.occupancy)
  std::optional<double> achieved_occupancy_pct;
  LaunchFacts launch;
  DecodeFacts decode;
  TrafficFacts traffic;
  SplitFacts tiles;
  std::vector<LaunchDiagnosis> launches;  // per launch of a multi-launch call
  std::string launches_line;              // the evidence line that lists them
  bool host_bound = false;
  double p50_ci_half_share = 0;  // the P50's 95% CI half-width / P50

  const Record& r() const { return *record; }
  bool counters_ok() const { return work.counters_ok; }
};

// Everything above, computed once. Pure.
DiagnosisFacts gather_facts(const Record&, const Context&);

// The metrics of Diagnosis::metrics that the facts hold (all but the verdict's own).
void fill_metrics(const DiagnosisFacts&, DiagnosisMetrics&);

}  // namespace attnprof::core
