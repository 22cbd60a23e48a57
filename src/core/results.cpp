#include "core/results.hpp"

#include <charconv>
#include <cmath>
#include <type_traits>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"

namespace attnprof::core {

using nlohmann::json;

namespace {

// JSON has no NaN or infinity: write them as strings "nan", "inf", "-inf" so they survive a round trip
// and a reader sees them explicitly instead of a silent null.
json num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double get_num(const json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw InputError(fmt::format("field '{}' holds '{}', not a number", key, s));
  }
  return it->get<double>();
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return json_int<T>(*it, key);
  else return it->get<T>();
}

json nums(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(num(x));
  return a;
}

std::vector<double> get_nums(const json& j, const char* key) {
  std::vector<double> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) throw InputError(fmt::format("field '{}' is not an array", key));
  if (it->size() > static_cast<size_t>(kMaxSamplesPerPoint))
    throw InputError(fmt::format("field '{}' holds {} values (at most {} are read)", key, it->size(),
                                 kMaxSamplesPerPoint));
  json wrap;
  for (const auto& x : *it) {
    wrap["x"] = x;
    out.push_back(get_num(wrap, "x"));
  }
  return out;
}

json num_map(const std::map<std::string, double>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = num(v);
  return o;
}

std::map<std::string, double> get_num_map(const json& j, const char* key) {
  std::map<std::string, double> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  for (auto e = it->begin(); e != it->end(); ++e) out[e.key()] = get_num(*it, e.key().c_str());
  return out;
}

}  // namespace

namespace {

template <class E>
std::string_view name_of(E value) {
  for (const auto& [v, name] : EnumNames<E>::names)
    if (v == value) return name;
  return "?";
}

}  // namespace

std::string_view to_string(Status s) { return name_of(s); }
std::string_view to_string(CounterStatus s) { return name_of(s); }
std::string_view to_string(BackendKind b) { return name_of(b); }
std::string_view to_string(TimingMode m) { return name_of(m); }
std::string_view to_string(DramSource d) { return name_of(d); }

DramSource dram_source_of(const Counters& c) {
  if (c.dram_source != DramSource::none || c.status != CounterStatus::ok) return c.dram_source;
  const bool replayed = c.reason.find("kernel replay") != std::string::npos ||
                        c.reason.starts_with("batched session not used");
  return replayed ? DramSource::replayed : DramSource::ranges;
}

template <class E>
E parse_enum(std::string_view s) {
  std::string accepted;
  for (const auto& [v, name] : EnumNames<E>::names) {
    if (name == s) return v;
    accepted += fmt::format("{}'{}'", accepted.empty() ? "" : ", ", name);
  }
  throw InputError(fmt::format("unknown {} '{}' (expected {})", EnumNames<E>::what, escape::one_line(s),
                               accepted));
}
template Status parse_enum<Status>(std::string_view);
template CounterStatus parse_enum<CounterStatus>(std::string_view);
template BackendKind parse_enum<BackendKind>(std::string_view);
template TimingMode parse_enum<TimingMode>(std::string_view);
template DramSource parse_enum<DramSource>(std::string_view);

TimingMode graph_replayed(TimingMode mode) {
  switch (mode) {
    case TimingMode::cold: return TimingMode::cold_graph;
    case TimingMode::warm: return TimingMode::warm_graph;
    default: return mode;
  }
}

// A JSON value that is not a string is as unknown as a string no table holds.
#define ATTNPROF_JSON_ENUM_DEF(E)                                                                      \
  void to_json(json& j, const E& e) { j = std::string(to_string(e)); }                                  \
  void from_json(const json& j, E& e) {                                                                 \
    if (!j.is_string()) throw InputError(fmt::format("{} {} is not a string", EnumNames<E>::what, j.dump())); \
    e = parse_enum<E>(j.get_ref<const std::string&>());                                                 \
  }
ATTNPROF_JSON_ENUM_DEF(Status)
ATTNPROF_JSON_ENUM_DEF(CounterStatus)
ATTNPROF_JSON_ENUM_DEF(BackendKind)
ATTNPROF_JSON_ENUM_DEF(TimingMode)
#undef ATTNPROF_JSON_ENUM_DEF

void to_json(json& j, const LatencySummary& s) {
  j = {{"n", s.n},
       {"mean_us", num(s.mean_us)},
       {"stddev_us", num(s.stddev_us)},
       {"rel_stddev", num(s.rel_stddev)},
       {"min_us", num(s.min_us)},
       {"p50_us", num(s.p50_us)},
       {"p90_us", num(s.p90_us)},
       {"p99_us", num(s.p99_us)},
       {"max_us", num(s.max_us)},
       {"p50_ci_low_us", num(s.p50_ci_low_us)},
       {"p50_ci_high_us", num(s.p50_ci_high_us)}};
}
void from_json(const json& j, LatencySummary& s) {
  s.n = get_or<int64_t>(j, "n", 0);
  s.mean_us = get_num(j, "mean_us");
  s.stddev_us = get_num(j, "stddev_us");
  s.rel_stddev = get_num(j, "rel_stddev");
  s.min_us = get_num(j, "min_us");
  s.p50_us = get_num(j, "p50_us");
  s.p90_us = get_num(j, "p90_us");
  s.p99_us = get_num(j, "p99_us");
  s.max_us = get_num(j, "max_us");
  s.p50_ci_low_us = get_num(j, "p50_ci_low_us");
  s.p50_ci_high_us = get_num(j, "p50_ci_high_us");
}

void to_json(json& j, const Stage& s) {
  j = {{"name", s.name},
       {"samples_us", nums(s.samples_us)},
       {"p50_us", num(s.p50_us)},
       {"p99_us", num(s.p99_us)},
       {"share_of_p50", num(s.share_of_p50)},
       {"share_of_p99", num(s.share_of_p99)}};
}
void from_json(const json& j, Stage& s) {
  s.name = j.at("name").get<std::string>();
  s.samples_us = get_nums(j, "samples_us");
  for (double v : s.samples_us)
    if (v < 0) throw InputError(fmt::format("stage sample {} is negative", v));
  s.p50_us = get_num(j, "p50_us");
  s.p99_us = get_num(j, "p99_us");
  s.share_of_p50 = get_num(j, "share_of_p50");
  s.share_of_p99 = get_num(j, "share_of_p99");
}

void to_json(json& j, const KernelCounters& k) {
  j = {{"kernel", k.kernel}, {"metrics", num_map(k.metrics)}};
}
void from_json(const json& j, KernelCounters& k) {
  k.kernel = get_or<std::string>(j, "kernel", "");
  k.metrics = get_num_map(j, "metrics");
}

void to_json(json& j, const CounterSession& s) {
  j = {{"points", s.points}, {"pass_setup_ms", num(s.pass_setup_ms)}, {"run_ms", num(s.run_ms)},
       {"pass_close_ms", num(s.pass_close_ms)}, {"evaluate_ms", num(s.evaluate_ms)}};
}
void from_json(const json& j, CounterSession& s) {
  s.points = get_or<int64_t>(j, "points", 0);
  s.pass_setup_ms = get_num(j, "pass_setup_ms");
  s.run_ms = get_num(j, "run_ms");
  s.pass_close_ms = get_num(j, "pass_close_ms");
  s.evaluate_ms = get_num(j, "evaluate_ms");
}

void to_json(json& j, const Counters& c) {
  j = {{"status", c.status},   {"reason", c.reason}, {"per_kernel", c.per_kernel},
       {"total", num_map(c.total)}, {"passes", c.passes}, {"profiling_ms", num(c.profiling_ms)},
       {"dram_write_tail_bytes", c.dram_write_tail_bytes ? num(*c.dram_write_tail_bytes) : json(nullptr)},
       {"dram_source", to_string(c.dram_source)},
       {"session", c.session ? json(*c.session) : json(nullptr)}};
}
void from_json(const json& j, Counters& c) {
  c.status = get_or<CounterStatus>(j, "status", CounterStatus::not_collected);
  c.reason = get_or<std::string>(j, "reason", "");
  c.per_kernel = get_or<std::vector<KernelCounters>>(j, "per_kernel", {});
  c.total = get_num_map(j, "total");
  c.passes = get_or<int64_t>(j, "passes", 0);
  c.profiling_ms = get_num(j, "profiling_ms");
  if (j.contains("dram_write_tail_bytes") && !j.at("dram_write_tail_bytes").is_null())
    c.dram_write_tail_bytes = get_num(j, "dram_write_tail_bytes");
  c.dram_source = parse_enum<DramSource>(get_or<std::string>(j, "dram_source", ""));
  if (j.contains("session") && j.at("session").is_object()) c.session = j.at("session").get<CounterSession>();
}

void to_json(json& j, const Occupancy& o) {
  j = {{"kernel", o.kernel},
       {"threads_per_block", o.threads_per_block},
       {"registers_per_thread", o.registers_per_thread},
       {"smem_bytes_per_block", o.smem_bytes_per_block},
       {"grid_blocks", o.grid_blocks},
       {"blocks_per_sm", o.blocks_per_sm},
       {"sm_count", o.sm_count},
       {"theoretical_pct", num(o.theoretical_pct)},
       {"limiter", o.limiter},
       {"waves", num(o.waves)},
       {"achieved_pct", o.achieved_pct ? num(*o.achieved_pct) : json(nullptr)}};
}
void from_json(const json& j, Occupancy& o) {
  o.kernel = get_or<std::string>(j, "kernel", "");
  o.threads_per_block = get_or<int64_t>(j, "threads_per_block", 0);
  o.registers_per_thread = get_or<int64_t>(j, "registers_per_thread", 0);
  o.smem_bytes_per_block = get_or<int64_t>(j, "smem_bytes_per_block", 0);
  o.grid_blocks = get_or<int64_t>(j, "grid_blocks", 0);
  o.blocks_per_sm = get_or<int64_t>(j, "blocks_per_sm", 0);
  o.sm_count = get_or<int64_t>(j, "sm_count", 0);
  o.theoretical_pct = get_num(j, "theoretical_pct");
  o.limiter = get_or<std::string>(j, "limiter", "");
  o.waves = get_num(j, "waves");
  auto it = j.find("achieved_pct");
  if (it != j.end() && !it->is_null()) o.achieved_pct = get_num(j, "achieved_pct");
}

void to_json(json& j, const Launch& l) {
  j = {{"name", l.name},
       {"grid", l.grid},
       {"block", l.block},
       {"cluster", l.cluster},
       {"registers_per_thread", l.registers_per_thread},
       {"static_smem_bytes", l.static_smem_bytes},
       {"dynamic_smem_bytes", l.dynamic_smem_bytes},
       {"duration_us", num(l.duration_us)},
       {"from_graph", l.from_graph},
       {"occupancy", l.occupancy}};
}
void from_json(const json& j, Launch& l) {
  l.name = get_or<std::string>(j, "name", "");
  l.grid = get_or<std::array<int64_t, 3>>(j, "grid", {});
  l.block = get_or<std::array<int64_t, 3>>(j, "block", {});
  l.cluster = get_or<std::array<int64_t, 3>>(j, "cluster", {});
  l.registers_per_thread = get_or<int64_t>(j, "registers_per_thread", 0);
  l.static_smem_bytes = get_or<int64_t>(j, "static_smem_bytes", 0);
  l.dynamic_smem_bytes = get_or<int64_t>(j, "dynamic_smem_bytes", 0);
  l.duration_us = get_num(j, "duration_us");
  l.from_graph = get_or<bool>(j, "from_graph", false);
  l.occupancy = get_or<Occupancy>(j, "occupancy", {});
}

void to_json(json& j, const Verification& v) {
  j = {{"checked", v.checked},
       {"lse_checked", v.lse_checked},
       {"seed", v.seed},
       {"rows_checked", v.rows_checked},
       {"rows_total", v.rows_total},
       {"unwritten", v.unwritten},
       {"o_max_abs_err", num(v.o_max_abs_err)},
       {"o_mean_abs_err", num(v.o_mean_abs_err)},
       {"lse_max_abs_err", num(v.lse_max_abs_err)},
       {"naive_o_max_abs_err", num(v.naive_o_max_abs_err)},
       {"tolerance", num(v.tolerance)},
       {"passed", v.passed}};
}
void from_json(const json& j, Verification& v) {
  v.checked = get_or<bool>(j, "checked", false);
  v.lse_checked = get_or<bool>(j, "lse_checked", true);
  v.seed = get_or<uint64_t>(j, "seed", 0);
  v.rows_checked = get_or<int64_t>(j, "rows_checked", 0);
  v.rows_total = get_or<int64_t>(j, "rows_total", 0);
  v.unwritten = get_or<int64_t>(j, "unwritten", 0);
  v.o_max_abs_err = get_num(j, "o_max_abs_err");
  v.o_mean_abs_err = get_num(j, "o_mean_abs_err");
  v.lse_max_abs_err = get_num(j, "lse_max_abs_err");
  v.naive_o_max_abs_err = get_num(j, "naive_o_max_abs_err");
  v.tolerance = get_num(j, "tolerance");
  v.passed = get_or<bool>(j, "passed", false);
}

void to_json(json& j, const Cost& c) {
  j = {{"flops", num(c.flops)},
       {"flops_dense", num(c.flops_dense)},
       {"flops_fa_convention", num(c.flops_fa_convention)},
       {"min_bytes_read", num(c.min_bytes_read)},
       {"min_bytes_write", num(c.min_bytes_write)},
       {"sp_bytes", num(c.sp_bytes)},
       {"workspace_bytes", num(c.workspace_bytes)},
       {"intensity", num(c.intensity)}};
  if (c.padded_flops > 0) {
    j["padded_flops"] = num(c.padded_flops);
    j["padded_min_bytes"] = num(c.padded_min_bytes);
  }
}
void from_json(const json& j, Cost& c) {
  c.flops = get_num(j, "flops");
  c.flops_dense = get_num(j, "flops_dense");
  c.flops_fa_convention = get_num(j, "flops_fa_convention");  // absent before 1.5: upgrade_cost
  c.min_bytes_read = get_num(j, "min_bytes_read");
  c.min_bytes_write = get_num(j, "min_bytes_write");
  c.sp_bytes = get_num(j, "sp_bytes");
  c.workspace_bytes = get_num(j, "workspace_bytes");
  c.intensity = get_num(j, "intensity");
  c.padded_flops = j.contains("padded_flops") ? get_num(j, "padded_flops") : 0;  // absent: dense (or before 1.8)
  c.padded_min_bytes = j.contains("padded_min_bytes") ? get_num(j, "padded_min_bytes") : 0;
}

void to_json(json& j, const ClockInfo& c) {
  j = {{"sm_mhz_min", num(c.sm_mhz_min)},
       {"sm_mhz_max", num(c.sm_mhz_max)},
       {"sm_mhz_median", num(c.sm_mhz_median)},
       {"sm_mhz_unthrottled", num(c.sm_mhz_unthrottled)},
       {"throttled_samples", c.throttled_samples},
       {"sm_mhz_batches", nums(c.sm_mhz_batches)},
       {"samples_per_reading", c.samples_per_reading}};
}
void from_json(const json& j, ClockInfo& c) {
  c.sm_mhz_min = get_num(j, "sm_mhz_min");
  c.sm_mhz_max = get_num(j, "sm_mhz_max");
  c.sm_mhz_median = get_num(j, "sm_mhz_median");  // absent before schema 1.1: 0
  c.sm_mhz_unthrottled = get_num(j, "sm_mhz_unthrottled");
  c.throttled_samples = get_or<int64_t>(j, "throttled_samples", 0);
  c.sm_mhz_batches = get_nums(j, "sm_mhz_batches");
  c.samples_per_reading = get_or<int64_t>(j, "samples_per_reading", 0);
}

void to_json(json& j, const Record& r) {
  j = {{"key", point_key(r)},
       {"shape", r.shape},
       {"kernel", r.kernel},
       {"backend", r.backend},
       {"device_id", r.device_id},
       {"status", r.status},
       {"reason", r.reason},
       {"samples_us", nums(r.samples_us)},
       {"latency", r.latency},
       {"stages", r.stages},
       {"tflops", num(r.tflops)},
       {"tflops_fa_convention", num(r.tflops_fa_convention)},
       {"launch_overhead_us", num(r.launch_overhead_us)},
       {"timing_mode", r.timing_mode},
       {"sampling_stop", r.sampling_stop},
       {"clock", r.clock},
       {"counters", r.counters},
       {"occupancy", r.occupancy},
       {"launches", r.launches},
       {"layout", r.layout},
       {"plan", r.plan},
       {"verification", r.verification},
       {"cost", r.cost},
       {"diagnosis", r.diagnosis ? json(*r.diagnosis) : json(nullptr)},
       {"wall_s", num(r.wall_s)}};
}
void from_json(const json& j, Record& r) {
  r.shape = j.at("shape").get<Shape>();
  r.kernel = j.at("kernel").get<std::string>();
  r.backend = get_or<BackendKind>(j, "backend", BackendKind::none);
  r.device_id = get_or<int>(j, "device_id", 0);
  r.status = j.at("status").get<Status>();
  r.reason = get_or<std::string>(j, "reason", "");
  r.samples_us = get_nums(j, "samples_us");
  for (double v : r.samples_us)
    if (v < 0) throw InputError(fmt::format("latency sample {} is negative", v));
  r.latency = get_or<LatencySummary>(j, "latency", {});
  r.stages = get_or<std::vector<Stage>>(j, "stages", {});
  r.tflops = get_num(j, "tflops");
  r.tflops_fa_convention = get_num(j, "tflops_fa_convention");
  r.launch_overhead_us = get_num(j, "launch_overhead_us");
  r.timing_mode = get_or<TimingMode>(j, "timing_mode", TimingMode::none);
  r.sampling_stop = get_or<std::string>(j, "sampling_stop", "");
  r.clock = get_or<ClockInfo>(j, "clock", {});
  r.counters = get_or<Counters>(j, "counters", {});
  r.occupancy = get_or<Occupancy>(j, "occupancy", {});
  r.launches = get_or<std::vector<Launch>>(j, "launches", {});
  r.layout = get_or<std::string>(j, "layout", "bhsd");
  r.plan = get_or<std::map<std::string, int64_t>>(j, "plan", {});
  r.verification = get_or<Verification>(j, "verification", {});
  r.cost = get_or<Cost>(j, "cost", {});
  if (auto it = j.find("diagnosis"); it != j.end() && it->is_object()) r.diagnosis = it->get<Diagnosis>();
  else r.diagnosis.reset();
  r.wall_s = get_num(j, "wall_s");
}

void to_json(json& j, const Ceilings& c) {
  j = {{"peak_bw_bytes_per_s", num(c.peak_bw_bytes_per_s)},
       {"peak_flops_per_s", num_map(c.peak_flops_per_s)},
       {"source", c.source},
       {"launch_latency_us", num(c.launch_latency_us)},
       {"datasheet_bw_bytes_per_s", num(c.datasheet_bw_bytes_per_s)},
       {"datasheet_flops_per_s", num_map(c.datasheet_flops_per_s)},
       {"flops_per_s_per_mhz", num_map(c.flops_per_s_per_mhz)},
       {"probe_sm_mhz", num_map(c.probe_sm_mhz)},
       {"l2_bw_bytes_per_s", num(c.l2_bw_bytes_per_s)}};
}
void from_json(const json& j, Ceilings& c) {
  c.peak_bw_bytes_per_s = get_num(j, "peak_bw_bytes_per_s");
  c.peak_flops_per_s = get_num_map(j, "peak_flops_per_s");
  c.source = get_or<std::string>(j, "source", "");
  c.launch_latency_us = get_num(j, "launch_latency_us");  // absent before schema 1.5
  c.datasheet_bw_bytes_per_s = get_num(j, "datasheet_bw_bytes_per_s");
  c.datasheet_flops_per_s = get_num_map(j, "datasheet_flops_per_s");
  // Schema 1.5; absent (zero, empty) in older files.
  c.flops_per_s_per_mhz = get_num_map(j, "flops_per_s_per_mhz");
  c.probe_sm_mhz = get_num_map(j, "probe_sm_mhz");
  c.l2_bw_bytes_per_s = get_num(j, "l2_bw_bytes_per_s");
}

void to_json(json& j, const DeviceInfo& d) {
  j = {{"name", d.name},
       {"compute_capability", d.compute_capability},
       {"sm_count", d.sm_count},
       {"l2_bytes", d.l2_bytes},
       {"memory_bytes", d.memory_bytes},
       {"driver_version", d.driver_version},
       {"runtime_version", d.runtime_version},
       {"sm_clock_max_mhz", num(d.sm_clock_max_mhz)},
       {"mem_clock_mhz", num(d.mem_clock_mhz)}};
}
void from_json(const json& j, DeviceInfo& d) {
  d.name = get_or<std::string>(j, "name", "");
  d.compute_capability = get_or<std::string>(j, "compute_capability", "");
  d.sm_count = get_or<int64_t>(j, "sm_count", 0);
  d.l2_bytes = get_or<int64_t>(j, "l2_bytes", 0);
  d.memory_bytes = get_or<int64_t>(j, "memory_bytes", 0);
  d.driver_version = get_or<std::string>(j, "driver_version", "");
  d.runtime_version = get_or<std::string>(j, "runtime_version", "");
  d.sm_clock_max_mhz = get_num(j, "sm_clock_max_mhz");
  d.mem_clock_mhz = get_num(j, "mem_clock_mhz");
}

void to_json(json& j, const Context& c) {
  j = {{"tool_version", c.tool_version}, {"git_revision", c.git_revision},
       {"command_line", c.command_line}, {"date_utc", c.date_utc},
       {"host", c.host},                 {"backend", c.backend},
       {"device", c.device},             {"ceilings", c.ceilings},
       {"sweep", c.sweep},               {"options", c.options},
       {"plugins", c.plugins},           {"notices", c.notices}};
}
void from_json(const json& j, Context& c) {
  c.tool_version = get_or<std::string>(j, "tool_version", "");
  c.git_revision = get_or<std::string>(j, "git_revision", "");
  c.command_line = get_or<std::string>(j, "command_line", "");
  c.date_utc = get_or<std::string>(j, "date_utc", "");
  c.host = get_or<std::string>(j, "host", "");
  c.backend = get_or<BackendKind>(j, "backend", BackendKind::none);
  c.device = get_or<DeviceInfo>(j, "device", {});
  c.ceilings = get_or<Ceilings>(j, "ceilings", {});
  c.sweep = j.contains("sweep") ? j.at("sweep") : json(nullptr);
  c.options = j.contains("options") ? j.at("options") : json(nullptr);
  c.notices = get_or<std::vector<std::string>>(j, "notices", {});
  c.plugins = j.contains("plugins") && j.at("plugins").is_array() ? j.at("plugins") : json::array();
}

namespace {

// Before schema 1.5, cost.flops and tflops were FlashAttention's convention (dense, halved when
// causal) and the causal reference's minimum counted S read whole. They become the convention's
// figures; a causal point's cost is recomputed by this cost model (its kind read from sp_bytes: only a
// materialized kernel has S/P traffic) and its TFLOP/s from its P50. A dense point's figures are the
// same under both conventions and stay as written.
// A shape any kernel could have run (Shape::validate's limits), checked in doubles first: a file's
// sizes can be anything, and int64 products of them can overflow.
bool measurable(const Shape& s) {
  const double dims[] = {double(s.batch), double(s.heads), double(s.kv_heads), double(s.seq_q), double(s.seq_k), double(s.hdim)};
  for (double d : dims)
    if (!(d >= 1 && d < 0x1p31)) return false;
  if (dims[0] * dims[1] * dims[3] * dims[5] >= 0x1p31 || dims[0] * dims[2] * dims[4] * dims[5] >= 0x1p31) return false;
  try {
    s.validate();
  } catch (const InputError&) {
    return false;
  }
  return true;
}

void upgrade_cost_before_1_5(Record& r) {
  r.cost.flops_fa_convention = r.cost.flops;
  r.tflops_fa_convention = r.tflops;
  if (!r.shape.causal || !measurable(r.shape)) return;
  const double written_tflops = r.tflops;
  r.cost = cost_of(r.shape, r.cost.sp_bytes > 0 ? KernelKind::materialized : KernelKind::fused);
  set_tflops(r);
  if (!(r.latency.p50_us > 0)) r.tflops = r.tflops_fa_convention = written_tflops;
}

}  // namespace

void to_json(json& j, const Results& r) {
  j = {{"schema_version", fmt::format("{}.{}", r.context.schema_major, r.context.schema_minor)},
       {"context", r.context},
       {"records", r.records}};
}

void from_json(const json& j, Results& r) {
  if (!j.is_object() || !j.contains("schema_version"))
    throw InputError("not an attnprof results file: no 'schema_version'");
  if (!j.at("schema_version").is_string()) throw InputError("schema_version is not a string");
  const auto version = j.at("schema_version").get<std::string>();
  // Exactly MAJOR.MINOR, each an int: sscanf("%d") would accept "1.3junk" and wrap 4294967297.
  int major = 0, minor = 0;
  const char* end = version.data() + version.size();
  const auto major_end = std::from_chars(version.data(), end, major);
  bool well_formed = major_end.ec == std::errc() && major_end.ptr != version.data() && major_end.ptr < end &&
                     *major_end.ptr == '.';
  if (well_formed) {
    const auto minor_end = std::from_chars(major_end.ptr + 1, end, minor);
    well_formed = minor_end.ec == std::errc() && minor_end.ptr == end && minor_end.ptr != major_end.ptr + 1 &&
                  major >= 0 && minor >= 0;
  }
  if (!well_formed) throw InputError(fmt::format("malformed schema_version '{}'", escape::one_line(version)));
  if (major != kSchemaMajor)
    throw InputError(fmt::format("results schema {} is not supported (this attnprof reads {}.x)",
                                 version, kSchemaMajor));
  if (!j.contains("context") || !j.at("context").is_object()) throw InputError("no 'context' object");
  if (!j.contains("records") || !j.at("records").is_array()) throw InputError("no 'records' array");
  r.context = j.at("context").get<Context>();
  r.context.schema_major = major;
  r.context.schema_minor = minor;
  r.records = j.at("records").get<std::vector<Record>>();
  if (minor < 5)
    for (auto& rec : r.records) upgrade_cost_before_1_5(rec);
  // A sweep measures each point once and merge keeps one record per point, so two records of one
  // point are a file edited or concatenated by hand. Which one is the point's measurement cannot be
  // told: every reader refuses the file rather than pick one (the gate), show both (the tables) or
  // export two series that a strict OpenMetrics parser rejects whole.
  std::map<std::string, size_t> first_index;
  for (size_t i = 0; i < r.records.size(); ++i) {
    const auto [it, fresh] = first_index.emplace(point_key(r.records[i]), i);
    if (!fresh)
      throw InputError(fmt::format("point '{}' is in the file twice (records {} and {}); a results file holds "
                                   "each point once", escape::one_line(it->first), it->second, i));
  }
}

namespace {

// `parse` yields the JSON (from a stream or a text); every failure becomes one InputError line.
template <class Parse>
Results results_from(const std::string& shown, Parse parse) {
  json j;
  try {
    j = parse();
  } catch (const InputError& e) {
    throw InputError(fmt::format("'{}': {}", shown, e.what()));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("'{}' is not valid JSON: {}", shown, e.what()));
  }
  try {
    return j.get<Results>();
  } catch (const InputError& e) {
    throw InputError(fmt::format("'{}': {}", shown, e.what()));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("'{}' is not a valid attnprof results file: {}", shown, e.what()));
  }
}

}  // namespace

Results read_results(const std::string& path) {
  std::ifstream in = open_input(path, "results file");
  return results_from(escape::one_line(path), [&] { return parse_json(in); });
}

Results parse_results(std::string_view text, const std::string& name) {
  return results_from(escape::one_line(name), [&] { return parse_json(text); });
}

void write_results(const Results& r, const std::string& path) { write_file(path, dump_json(json(r), 1) + '\n'); }

std::string point_key(const Record& r) { return r.shape.label() + " | " + r.kernel; }

}  // namespace attnprof::core
