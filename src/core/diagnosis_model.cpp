#include "core/diagnosis_model.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace attnprof::core {

using nlohmann::json;

namespace {

constexpr std::pair<Verdict, std::string_view> kVerdictNames[] = {
    {Verdict::launch_bound, "launch-bound"},       {Verdict::latency_bound, "latency-bound"},
    {Verdict::occupancy_bound, "occupancy-bound"}, {Verdict::compute_bound, "compute-bound"},
    {Verdict::memory_bound, "memory-bound"},       {Verdict::unknown, "unknown"}};
constexpr std::pair<Flag, std::string_view> kFlagNames[] = {
    {Flag::under_filled, "under-filled"}, {Flag::tail_effect, "tail-effect"},
    {Flag::excess_traffic, "excess-traffic"}, {Flag::throttled, "throttled"},
    {Flag::noisy, "noisy"},               {Flag::host_bound, "host-bound"},
    {Flag::unverified, "unverified"},     {Flag::counters_unavailable, "counters-unavailable"},
    {Flag::borderline, "borderline"}};
constexpr std::pair<MemoryLevel, std::string_view> kLevelNames[] = {
    {MemoryLevel::dram, "dram"}, {MemoryLevel::l2, "l2"}, {MemoryLevel::l1, "l1"}, {MemoryLevel::on_chip, "on-chip"}};

template <class E, size_t N>
std::string_view name_of(const std::pair<E, std::string_view> (&table)[N], E e) {
  for (const auto& [value, name] : table)
    if (value == e) return name;
  return "?";
}
template <class E, size_t N>
std::optional<E> parse_of(const std::pair<E, std::string_view> (&table)[N], std::string_view s) {
  for (const auto& [value, name] : table)
    if (name == s) return value;
  return std::nullopt;
}

// One table per field type: to_json and from_json walk the same list, so a key is spelled once.
using M = DiagnosisMetrics;
constexpr std::pair<const char*, std::optional<double> M::*> kNumbers[] = {
    {"p50_us", &M::p50_us},
    {"p99_us", &M::p99_us},
    {"launch_overhead_us", &M::launch_overhead_us},
    {"launch_latency_us", &M::launch_latency_us},
    {"flops", &M::flops},
    {"dram_bytes", &M::dram_bytes},
    {"min_bytes", &M::min_bytes},
    {"flops_vs_cost", &M::flops_vs_cost},
    {"sp_bytes", &M::sp_bytes},
    {"intensity_flop_per_byte", &M::intensity_flop_per_byte},
    {"achieved_flops_per_s", &M::achieved_flops_per_s},
    {"achieved_bytes_per_s", &M::achieved_bytes_per_s},
    {"peak_flops_per_s", &M::peak_flops_per_s},
    {"peak_bw_bytes_per_s", &M::peak_bw_bytes_per_s},
    {"ridge_flop_per_byte", &M::ridge_flop_per_byte},
    {"attainable_flops_per_s", &M::attainable_flops_per_s},
    {"pct_of_roof", &M::pct_of_roof},
    {"pct_of_clock_scaled_roof", &M::pct_of_clock_scaled_roof},
    {"pct_of_datasheet_roof", &M::pct_of_datasheet_roof},
    {"roof_sm_mhz", &M::roof_sm_mhz},
    {"compute_sol_pct", &M::compute_sol_pct},
    {"memory_sol_pct", &M::memory_sol_pct},
    {"dram_sol_pct", &M::dram_sol_pct},
    {"l2_sol_pct", &M::l2_sol_pct},
    {"l1_sol_pct", &M::l1_sol_pct},
    {"tensor_pipe_active_pct", &M::tensor_pipe_active_pct},
    {"fma_pipe_active_pct", &M::fma_pipe_active_pct},
    {"compute_pipe_pct", &M::compute_pipe_pct},
    {"tensor_ops_per_instruction", &M::tensor_ops_per_instruction},
    {"issue_active_pct", &M::issue_active_pct},
    {"latency_stall_share", &M::latency_stall_share},
    {"theoretical_occupancy_pct", &M::theoretical_occupancy_pct},
    {"achieved_occupancy_pct", &M::achieved_occupancy_pct},
    {"l2_hit_rate_pct", &M::l2_hit_rate_pct},
    {"waves", &M::waves},
    {"tail_idle_share", &M::tail_idle_share},
    {"tiles_per_cta_max", &M::tiles_per_cta_max},
    {"tiles_per_cta_mean", &M::tiles_per_cta_mean},
    {"dram_write_tail_bytes", &M::dram_write_tail_bytes},
    {"excess_traffic_ratio", &M::excess_traffic_ratio},
    {"sp_share", &M::sp_share},
    {"rel_stddev", &M::rel_stddev},
    {"dominant_launch_time_share", &M::dominant_launch_time_share},
    {"sm_mhz_median", &M::sm_mhz_median},
    {"kv_cache_bytes", &M::kv_cache_bytes},
    {"min_bytes_per_token", &M::min_bytes_per_token},
    {"dram_bytes_per_token", &M::dram_bytes_per_token},
    {"pct_of_hbm_ceiling", &M::pct_of_hbm_ceiling},
    {"hbm_stream_us", &M::hbm_stream_us},
    {"short_call_limit_us", &M::short_call_limit_us},
    {"fixed_time_share", &M::fixed_time_share},
    {"combine_time_share", &M::combine_time_share},
    {"counted_flops", &M::counted_flops},
    {"padded_flop_share", &M::padded_flop_share},
    {"dram_bytes_read", &M::dram_bytes_read},
    {"dram_bytes_write", &M::dram_bytes_write},
    {"l2_over_dram_bytes", &M::l2_over_dram_bytes},
    {"read_traffic_ratio", &M::read_traffic_ratio},
    {"write_traffic_ratio", &M::write_traffic_ratio},
};
constexpr std::pair<const char*, std::optional<int64_t> M::*> kCounts[] = {
    {"query_tile_rows", &M::query_tile_rows},
    {"last_query_tile_rows", &M::last_query_tile_rows},
    {"work_tiles", &M::work_tiles},
    {"launches_per_call", &M::launches_per_call},
    {"tokens_per_call", &M::tokens_per_call},
    {"kv_tile_keys", &M::kv_tile_keys},
};
constexpr std::pair<const char*, std::optional<std::string> M::*> kStrings[] = {
    {"flops_source", &M::flops_source},
    {"bytes_source", &M::bytes_source},
    {"roof_source", &M::roof_source},
    {"roof_bound", &M::roof_bound},
    {"sol_source", &M::sol_source},
    {"dram_sol_source", &M::dram_sol_source},
    {"compute_pipe", &M::compute_pipe},
    {"top_stall", &M::top_stall},
    {"occupancy_limiter", &M::occupancy_limiter},
    {"saturated", &M::saturated},
    {"tail_source", &M::tail_source},
    {"kernel_variant", &M::kernel_variant},
    {"dominant_launch", &M::dominant_launch},
    {"combine_stage", &M::combine_stage},
    {"counted_flops_source", &M::counted_flops_source},
    {"verdict_rule", &M::verdict_rule},
};
constexpr std::pair<const char*, std::optional<bool> M::*> kBools[] = {
    {"materialized", &M::materialized},
    {"persistent_grid", &M::persistent_grid},
    {"decode", &M::decode},
    {"dram_writes_trusted", &M::dram_writes_trusted},
    {"l2_explained_by_dram", &M::l2_explained_by_dram},
};

json maybe(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}
template <class T>
json maybe(const std::optional<T>& v) {
  if (!v) return nullptr;
  return *v;
}

// A number, or nullopt for null, a missing key, or anything else (an old writer's "nan").
std::optional<double> number_at(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}
std::optional<std::string> string_at(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

std::string_view to_string(Verdict v) { return name_of(kVerdictNames, v); }
std::string_view to_string(Flag f) { return name_of(kFlagNames, f); }
std::string_view to_string(MemoryLevel l) { return name_of(kLevelNames, l); }
std::string_view level_name(MemoryLevel l) {
  switch (l) {
    case MemoryLevel::dram: return "HBM (DRAM)";
    case MemoryLevel::l2: return "L2";
    case MemoryLevel::l1: return "L1/shared";
    case MemoryLevel::on_chip: return "L2 or L1/shared";
  }
  return "?";
}
std::optional<Verdict> parse_verdict(std::string_view s) { return parse_of(kVerdictNames, s); }
std::optional<Flag> parse_flag(std::string_view s) { return parse_of(kFlagNames, s); }
std::optional<MemoryLevel> parse_memory_level(std::string_view s) { return parse_of(kLevelNames, s); }

bool Diagnosis::has(Flag f) const { return std::find(flags.begin(), flags.end(), f) != flags.end(); }

void to_json(json& j, const DiagnosisMetrics& m) {
  j = json::object();
  for (const auto& [key, field] : kNumbers) j[key] = maybe(m.*field);
  for (const auto& [key, field] : kCounts) j[key] = maybe(m.*field);
  for (const auto& [key, field] : kStrings) j[key] = maybe(m.*field);
  for (const auto& [key, field] : kBools) j[key] = maybe(m.*field);
  j["memory_level"] = m.memory_level ? json(std::string(to_string(*m.memory_level))) : json(nullptr);
}

// Lenient by design: every reader re-diagnoses (core::annotate), so a stored diagnosis only has to
// read back; a value of the wrong type or a key this version does not know is left unknown.
void from_json(const json& j, DiagnosisMetrics& m) {
  m = {};
  if (!j.is_object()) return;
  for (const auto& [key, field] : kNumbers) m.*field = number_at(j, key);
  for (const auto& [key, field] : kCounts) {
    const auto v = number_at(j, key);
    if (v && std::abs(*v) < 9e15) m.*field = static_cast<int64_t>(*v);
  }
  for (const auto& [key, field] : kStrings) m.*field = string_at(j, key);
  for (const auto& [key, field] : kBools) {
    auto it = j.find(key);
    if (it != j.end() && it->is_boolean()) m.*field = it->get<bool>();
  }
  if (const auto level = string_at(j, "memory_level")) m.memory_level = parse_memory_level(*level);
}

void to_json(json& j, const LaunchDiagnosis& l) {
  j = {{"name", l.name},
       {"kernel", l.kernel},
       {"time_share", maybe(std::optional(l.time_share))},
       {"duration_us", maybe(std::optional(l.duration_us))},
       {"dram_bytes", maybe(l.dram_bytes)},
       {"dram_bytes_per_s", maybe(l.dram_bytes_per_s)},
       {"compute_sol_pct", maybe(l.compute_sol_pct)},
       {"memory_sol_pct", maybe(l.memory_sol_pct)},
       {"verdict", l.verdict ? json(std::string(to_string(*l.verdict))) : json(nullptr)}};
}
void from_json(const json& j, LaunchDiagnosis& l) {
  l = {};
  if (!j.is_object()) return;
  l.name = string_at(j, "name").value_or("");
  l.kernel = string_at(j, "kernel").value_or("");
  l.time_share = number_at(j, "time_share").value_or(0);
  l.duration_us = number_at(j, "duration_us").value_or(0);
  l.dram_bytes = number_at(j, "dram_bytes");
  l.dram_bytes_per_s = number_at(j, "dram_bytes_per_s");
  l.compute_sol_pct = number_at(j, "compute_sol_pct");
  l.memory_sol_pct = number_at(j, "memory_sol_pct");
  if (const auto v = string_at(j, "verdict")) l.verdict = parse_verdict(*v);
}

void to_json(json& j, const Diagnosis& d) {
  json flags = json::array();
  for (Flag f : d.flags) flags.push_back(std::string(to_string(f)));
  j = {{"verdict", std::string(to_string(d.verdict))},
       {"flags", flags},
       {"evidence", d.evidence},
       {"next_step", d.next_step},
       {"metrics", d.metrics},
       {"launches", d.launches}};
}
void from_json(const json& j, Diagnosis& d) {
  d = {};
  if (!j.is_object()) return;
  if (const auto v = string_at(j, "verdict")) d.verdict = parse_verdict(*v).value_or(Verdict::unknown);
  if (auto it = j.find("flags"); it != j.end() && it->is_array()) {
    for (const auto& f : *it)
      if (f.is_string())
        if (const auto flag = parse_flag(f.get<std::string>()); flag && !d.has(*flag)) d.flags.push_back(*flag);
    std::sort(d.flags.begin(), d.flags.end());
  }
  if (auto it = j.find("evidence"); it != j.end() && it->is_array())
    for (const auto& line : *it)
      if (line.is_string()) d.evidence.push_back(line.get<std::string>());
  d.next_step = string_at(j, "next_step").value_or("");
  if (auto it = j.find("metrics"); it != j.end()) d.metrics = it->get<DiagnosisMetrics>();
  if (auto it = j.find("launches"); it != j.end() && it->is_array())
    for (const auto& l : *it) d.launches.push_back(l.get<LaunchDiagnosis>());
}

}  // namespace attnprof::core
