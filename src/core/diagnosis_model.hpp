// The diagnosis of one point as a typed value: verdict and flags as enums, the metrics it rests on as
// named fields, one entry per launch of a multi-launch call. core::diagnose (diagnosis.hpp) computes it
// once and stores it in Record::diagnosis; renderers read its fields. to_json/from_json keep the JSON
// shape of docs/diagnosis.md (verdict and flags as their strings, metrics as an object of numbers,
// strings or null), so files written before the type existed read back.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnprof::core {

// In the order the rules decide them (docs/diagnosis.md).
enum class Verdict { launch_bound, latency_bound, occupancy_bound, compute_bound, memory_bound, unknown };
// In the order they are always listed.
enum class Flag {
  under_filled,
  tail_effect,
  excess_traffic,
  throttled,
  noisy,
  host_bound,
  unverified,
  counters_unavailable,
  borderline
};
// The memory level a memory-bound verdict names: HBM (dram__), L2 (lts__), L1/shared (l1tex__), or
// on_chip when only the combined memory throughput was collected and DRAM does not account for it.
enum class MemoryLevel { dram, l2, l1, on_chip };

inline constexpr Verdict kAllVerdicts[] = {Verdict::launch_bound,  Verdict::latency_bound,
                                           Verdict::occupancy_bound, Verdict::compute_bound,
                                           Verdict::memory_bound,  Verdict::unknown};
inline constexpr Flag kAllFlags[] = {Flag::under_filled, Flag::tail_effect, Flag::excess_traffic,
                                     Flag::throttled,    Flag::noisy,       Flag::host_bound,
                                     Flag::unverified,   Flag::counters_unavailable, Flag::borderline};

std::string_view to_string(Verdict);  // "memory-bound", ...
std::string_view to_string(Flag);     // "tail-effect", ...
std::string_view to_string(MemoryLevel);   // "dram", "l2", "l1", "on-chip"
std::string_view level_name(MemoryLevel);  // "HBM (DRAM)", "L2", "L1/shared", "L2 or L1/shared"
std::optional<Verdict> parse_verdict(std::string_view);
std::optional<Flag> parse_flag(std::string_view);
std::optional<MemoryLevel> parse_memory_level(std::string_view);

// The numbers behind a verdict; nullopt is JSON null (unknown). Units in the names; docs/diagnosis.md
// lists every key.
struct DiagnosisMetrics {
  std::optional<double> p50_us, p99_us, launch_overhead_us, launch_latency_us;
  // The roofline's work: the cost model's exact FLOPs, and DRAM bytes (counted reads, counted writes with
  // the L2 tail or the outputs' minimum, never under the minimum). Counted FLOPs beside them.
  std::optional<double> flops, dram_bytes, min_bytes, flops_vs_cost, sp_bytes;
  std::optional<std::string> flops_source, bytes_source;
  std::optional<double> counted_flops, padded_flop_share;  // padded: 1 - exact / counted
  std::optional<std::string> counted_flops_source;
  std::optional<double> dram_bytes_read, dram_bytes_write;  // as used for the roofline and traffic
  std::optional<bool> dram_writes_trusted;                  // core::dram_writes_trusted
  std::optional<bool> materialized;
  std::optional<double> intensity_flop_per_byte, achieved_flops_per_s, achieved_bytes_per_s;
  std::optional<std::string> roof_source, roof_bound;
  std::optional<double> peak_flops_per_s, peak_bw_bytes_per_s, ridge_flop_per_byte, attainable_flops_per_s;
  std::optional<double> pct_of_roof, pct_of_clock_scaled_roof, pct_of_datasheet_roof;
  std::optional<double> roof_sm_mhz;  // the SM clock the compute roof was scaled to (per-MHz probes)
  // Speed of light: sm__throughput and the combined memory throughput (or their derived stand-ins).
  std::optional<double> compute_sol_pct, memory_sol_pct;
  std::optional<std::string> sol_source;
  // Per memory level, and which level is busiest (what memory_sol_pct is when they were collected).
  std::optional<double> dram_sol_pct, l2_sol_pct, l1_sol_pct;
  std::optional<std::string> dram_sol_source;  // "counters" or "derived from DRAM bytes / bandwidth"
  std::optional<MemoryLevel> memory_level;
  // The compute pipe compared with the memory levels: the busier of tensor and FMA.
  std::optional<double> tensor_pipe_active_pct, fma_pipe_active_pct, compute_pipe_pct;
  std::optional<std::string> compute_pipe;  // "tensor", "fma", or "sm" (sm__throughput stands in)
  std::optional<double> tensor_ops_per_instruction;
  // Latency hiding: issue-slot use and the dependency-stall share of the warps' resident cycles.
  std::optional<double> issue_active_pct, latency_stall_share;
  std::optional<std::string> top_stall;
  std::optional<double> theoretical_occupancy_pct, achieved_occupancy_pct;
  std::optional<std::string> occupancy_limiter;
  std::optional<double> l2_hit_rate_pct;
  std::optional<double> l2_over_dram_bytes;    // lts__t_bytes / the DRAM bytes
  std::optional<bool> l2_explained_by_dram;  // L2 busier than HBM but its traffic is DRAM's fills and reads
  std::optional<std::string> saturated;  // "compute" or "memory"
  // Work split: waves of a one-tile-per-CTA grid, or tiles per CTA of a persistent one.
  std::optional<double> waves, tail_idle_share;
  std::optional<std::string> tail_source;  // "waves" or "tiles per CTA"
  std::optional<std::string> kernel_variant;  // e.g. "small", "pingpong", read from the kernel name
  std::optional<int64_t> query_tile_rows, last_query_tile_rows, work_tiles;
  std::optional<bool> persistent_grid;
  std::optional<double> tiles_per_cta_max, tiles_per_cta_mean;
  std::optional<double> dram_write_tail_bytes, excess_traffic_ratio, sp_share, rel_stddev;
  std::optional<double> read_traffic_ratio, write_traffic_ratio;  // each direction against its minimum
  std::optional<std::string> verdict_rule;  // the rule that gave the verdict (docs/diagnosis.md#rule-...)
  std::optional<std::string> dominant_launch;
  std::optional<double> dominant_launch_time_share;
  std::optional<int64_t> launches_per_call;
  std::optional<double> sm_mhz_median;
  // Decode points (core::is_decode; docs/diagnosis.md "Decode points"), null for the others. The
  // read factor is excess_traffic_ratio, the achieved rate achieved_bytes_per_s.
  std::optional<bool> decode;
  std::optional<int64_t> tokens_per_call;  // batch x seq_q
  std::optional<double> kv_cache_bytes, min_bytes_per_token, dram_bytes_per_token;
  std::optional<double> pct_of_hbm_ceiling;  // achieved_bytes_per_s / peak_bw_bytes_per_s [%]
  // The short-call rule: the HBM ceiling's time for the minimum bytes, the limit it is held against
  // and the share of the P50 beyond that time.
  std::optional<double> hbm_stream_us, short_call_limit_us, fixed_time_share;
  std::optional<std::string> combine_stage;
  std::optional<double> combine_time_share;
  std::optional<int64_t> kv_tile_keys;
};

// One launch of a multi-launch call (the reference's GEMM, softmax, GEMM).
struct LaunchDiagnosis {
  std::string name, kernel;
  double time_share = 0, duration_us = 0;
  std::optional<double> dram_bytes, dram_bytes_per_s, compute_sol_pct, memory_sol_pct;
  std::optional<Verdict> verdict;
};

struct Diagnosis {
  Verdict verdict = Verdict::unknown;
  std::vector<Flag> flags;              // in kAllFlags order
  std::vector<std::string> evidence;    // sentences, each with its numbers
  std::string next_step;
  DiagnosisMetrics metrics;
  std::vector<LaunchDiagnosis> launches;  // empty for single-launch calls

  bool has(Flag f) const;
};

void to_json(nlohmann::json&, const DiagnosisMetrics&);
void from_json(const nlohmann::json&, DiagnosisMetrics&);
void to_json(nlohmann::json&, const LaunchDiagnosis&);
void from_json(const nlohmann::json&, LaunchDiagnosis&);
void to_json(nlohmann::json&, const Diagnosis&);
void from_json(const nlohmann::json&, Diagnosis&);

}  // namespace attnprof::core
