#include "core/results.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <fmt/format.h>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/stats.hpp"

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

// A number as num() writes it; null reads as 0. `key` names the field in the error.
double number(const json& v, std::string_view key) {
  if (v.is_null()) return 0;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw InputError(fmt::format("field '{}' holds '{}', not a number", key, s));
  }
  return v.get<double>();
}

// The JSON of one field's value: numbers (alone, in arrays and in maps) through num(), an absent
// optional as null, everything else through its own to_json.
json to_value(double v) { return num(v); }
json to_value(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(num(x));
  return a;
}
json to_value(const std::map<std::string, double>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = num(v);
  return o;
}
template <class T>
json to_value(const T& v) {
  return v;
}
template <class T>
json to_value(const std::optional<T>& v) {
  return v ? to_value(*v) : json(nullptr);
}

// One field's value read back (never null: read_field skips null and absent keys). Integers are
// range-checked (json_int); an optional number is read like a number; an optional record is read
// only when it is an object, anything else leaving it absent.
void read_value(const json& v, std::string_view key, double& out) { out = number(v, key); }
void read_value(const json& v, std::string_view key, std::vector<double>& out) {
  if (!v.is_array()) throw InputError(fmt::format("field '{}' is not an array", key));
  if (v.size() > static_cast<size_t>(kMaxSamplesPerPoint))
    throw InputError(fmt::format("field '{}' holds {} values (at most {} are read)", key, v.size(),
                                 kMaxSamplesPerPoint));
  for (const auto& x : v) out.push_back(number(x, "x"));  // an element is field 'x' in messages
}
void read_value(const json& v, std::string_view, std::map<std::string, double>& out) {
  for (auto e = v.begin(); e != v.end(); ++e) out[e.key()] = number(*e, e.key());
}
template <class T>
void read_value(const json& v, std::string_view key, T& out) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) out = json_int<T>(v, key);
  else out = v.get<T>();
}
template <class T>
void read_value(const json& v, std::string_view key, std::optional<T>& out) {
  if constexpr (std::is_same_v<T, double>) {
    out = number(v, key);
  } else if (v.is_object()) {
    out = v.get<T>();
  }
}

// One key of a record's JSON and the member it holds. Absent or null, an optional field keeps the
// member's default; a required one is an error. `check`, when set, validates the value read.
template <class S, class T, bool Required>
struct Field {
  const char* key;
  T S::*member;
  void (*check)(const T&) = nullptr;
};
template <class S, class T>
constexpr Field<S, T, false> field(const char* key, T S::*member, void (*check)(const T&) = nullptr) {
  return {key, member, check};
}
template <class S, class T>
constexpr Field<S, T, true> required(const char* key, T S::*member) {
  return {key, member};
}

// Each record's fields, one table each: to_json and from_json walk the same table, so every key is
// spelled once. Read in table order (the first malformed field is the one an error names); written
// in key order (nlohmann sorts an object's keys).
template <class S, class... F>
void write_fields(json& j, const S& s, const std::tuple<F...>& fields) {
  std::apply([&](const auto&... f) { ((j[f.key] = to_value(s.*f.member)), ...); }, fields);
}

template <class S, class T, bool Required>
void read_field(const json& j, const Field<S, T, Required>& f, S& s) {
  T& out = s.*f.member;
  if constexpr (Required) {
    out = j.at(f.key).template get<T>();
  } else if (const auto it = j.find(f.key); it != j.end() && !it->is_null()) {
    read_value(*it, f.key, out);
  }
  if (f.check) f.check(out);
}
template <class S, class... F>
void read_fields(const json& j, S& s, const std::tuple<F...>& fields) {
  s = S{};
  std::apply([&](const auto&... f) { (read_field(j, f, s), ...); }, fields);
}

void check_latency_samples(const std::vector<double>& samples) {
  for (double v : samples)
    if (v < 0) throw InputError(fmt::format("latency sample {} is negative", v));
}
void check_stage_samples(const std::vector<double>& samples) {
  for (double v : samples)
    if (v < 0) throw InputError(fmt::format("stage sample {} is negative", v));
}

constexpr std::tuple kLatencySummaryFields{
    field("n", &LatencySummary::n),
    field("mean_us", &LatencySummary::mean_us),
    field("stddev_us", &LatencySummary::stddev_us),
    field("rel_stddev", &LatencySummary::rel_stddev),
    field("min_us", &LatencySummary::min_us),
    field("p50_us", &LatencySummary::p50_us),
    field("p90_us", &LatencySummary::p90_us),
    field("p99_us", &LatencySummary::p99_us),
    field("max_us", &LatencySummary::max_us),
    field("p50_ci_low_us", &LatencySummary::p50_ci_low_us),
    field("p50_ci_high_us", &LatencySummary::p50_ci_high_us),
};

constexpr std::tuple kStageFields{
    required("name", &Stage::name),
    field("samples_us", &Stage::samples_us, check_stage_samples),
    field("p50_us", &Stage::p50_us),
    field("p99_us", &Stage::p99_us),
    field("share_of_p50", &Stage::share_of_p50),
    field("share_of_p99", &Stage::share_of_p99),
};

constexpr std::tuple kKernelCountersFields{
    field("kernel", &KernelCounters::kernel),
    field("metrics", &KernelCounters::metrics),
};

constexpr std::tuple kCounterSessionFields{
    field("points", &CounterSession::points),
    field("pass_setup_ms", &CounterSession::pass_setup_ms),
    field("run_ms", &CounterSession::run_ms),
    field("pass_close_ms", &CounterSession::pass_close_ms),
    field("evaluate_ms", &CounterSession::evaluate_ms),
};

constexpr std::tuple kCountersFields{
    field("status", &Counters::status),
    field("reason", &Counters::reason),
    field("per_kernel", &Counters::per_kernel),
    field("total", &Counters::total),
    field("passes", &Counters::passes),
    field("profiling_ms", &Counters::profiling_ms),
    field("dram_write_tail_bytes", &Counters::dram_write_tail_bytes),
    field("dram_source", &Counters::dram_source),
    field("session", &Counters::session),
};

void check_sample_counts(const std::map<std::string, int64_t>& reasons) {
  for (const auto& [reason, n] : reasons)
    if (n < 0) throw InputError(fmt::format("warp state '{}' has {} samples", escape::one_line(reason), n));
}

constexpr std::tuple kHotSpotFields{
    field("pc_offset", &HotSpot::pc_offset),
    field("file", &HotSpot::file),
    field("line", &HotSpot::line),
    field("samples", &HotSpot::samples),
    field("reasons", &HotSpot::reasons, check_sample_counts),
};

constexpr std::tuple kKernelStallsFields{
    field("kernel", &KernelStalls::kernel),
    field("samples", &KernelStalls::samples),
    field("reasons", &KernelStalls::reasons, check_sample_counts),
    field("instructions", &KernelStalls::instructions),
    field("lines", &KernelStalls::lines),
};

constexpr std::tuple kStallsFields{
    field("status", &Stalls::status),
    field("reason", &Stalls::reason),
    field("calls", &Stalls::calls),
    field("period_log2", &Stalls::period_log2),
    field("samples", &Stalls::samples),
    field("dropped_samples", &Stalls::dropped_samples),
    field("profiling_ms", &Stalls::profiling_ms),
    field("per_kernel", &Stalls::per_kernel),
};

constexpr std::tuple kOccupancyFields{
    field("kernel", &Occupancy::kernel),
    field("threads_per_block", &Occupancy::threads_per_block),
    field("registers_per_thread", &Occupancy::registers_per_thread),
    field("smem_bytes_per_block", &Occupancy::smem_bytes_per_block),
    field("grid_blocks", &Occupancy::grid_blocks),
    field("blocks_per_sm", &Occupancy::blocks_per_sm),
    field("sm_count", &Occupancy::sm_count),
    field("theoretical_pct", &Occupancy::theoretical_pct),
    field("limiter", &Occupancy::limiter),
    field("waves", &Occupancy::waves),
    field("achieved_pct", &Occupancy::achieved_pct),
};

constexpr std::tuple kLaunchFields{
    field("name", &Launch::name),
    field("grid", &Launch::grid),
    field("block", &Launch::block),
    field("cluster", &Launch::cluster),
    field("registers_per_thread", &Launch::registers_per_thread),
    field("static_smem_bytes", &Launch::static_smem_bytes),
    field("dynamic_smem_bytes", &Launch::dynamic_smem_bytes),
    field("duration_us", &Launch::duration_us),
    field("from_graph", &Launch::from_graph),
    field("occupancy", &Launch::occupancy),
};

constexpr std::tuple kQuantCostFields{
    field("o_max_abs_err", &QuantCost::o_max_abs_err),
    field("o_mean_abs_err", &QuantCost::o_mean_abs_err),
    field("o_max_rel_err", &QuantCost::o_max_rel_err),
};

constexpr std::tuple kGradCheckFields{
    field("rows_checked", &GradCheck::rows_checked),
    field("rows_total", &GradCheck::rows_total),
    field("max_abs_err", &GradCheck::max_abs_err),
    field("mean_abs_err", &GradCheck::mean_abs_err),
    field("naive_max_abs_err", &GradCheck::naive_max_abs_err),
    field("tolerance", &GradCheck::tolerance),
    field("passed", &GradCheck::passed),
};

constexpr std::tuple kVerificationFields{
    field("checked", &Verification::checked),
    field("lse_checked", &Verification::lse_checked),
    field("seed", &Verification::seed),
    field("rows_checked", &Verification::rows_checked),
    field("rows_total", &Verification::rows_total),
    field("unwritten", &Verification::unwritten),
    field("o_max_abs_err", &Verification::o_max_abs_err),
    field("o_mean_abs_err", &Verification::o_mean_abs_err),
    field("lse_max_abs_err", &Verification::lse_max_abs_err),
    field("naive_o_max_abs_err", &Verification::naive_o_max_abs_err),
    field("tolerance", &Verification::tolerance),
    field("o_max_bound_ratio", &Verification::o_max_bound_ratio),  // fp8 points, 1.14 on
    field("passed", &Verification::passed),
};

constexpr std::tuple kCostFields{
    field("flops", &Cost::flops),
    field("flops_dense", &Cost::flops_dense),
    field("flops_fa_convention", &Cost::flops_fa_convention),  // absent before 1.5: upgrade_cost
    field("min_bytes_read", &Cost::min_bytes_read),
    field("min_bytes_write", &Cost::min_bytes_write),
    field("sp_bytes", &Cost::sp_bytes),
    field("workspace_bytes", &Cost::workspace_bytes),
    field("intensity", &Cost::intensity),
};
// Written only for a packed batch (padded_flops > 0); absent: dense (or before 1.8).
constexpr std::tuple kPaddedCostFields{
    field("padded_flops", &Cost::padded_flops),
    field("padded_min_bytes", &Cost::padded_min_bytes),
};

constexpr std::tuple kClockInfoFields{
    field("sm_mhz_min", &ClockInfo::sm_mhz_min),
    field("sm_mhz_max", &ClockInfo::sm_mhz_max),
    field("sm_mhz_median", &ClockInfo::sm_mhz_median),  // absent before schema 1.1: 0
    field("sm_mhz_unthrottled", &ClockInfo::sm_mhz_unthrottled),
    field("throttled_samples", &ClockInfo::throttled_samples),
    field("sm_mhz_batches", &ClockInfo::sm_mhz_batches),
    field("samples_per_reading", &ClockInfo::samples_per_reading),
};

// "key" (point_key) is written too, and never read: it follows from shape and kernel.
constexpr std::tuple kRecordFields{
    required("shape", &Record::shape),
    required("kernel", &Record::kernel),
    field("backend", &Record::backend),
    field("device_id", &Record::device_id),
    required("status", &Record::status),
    field("reason", &Record::reason),
    field("samples_us", &Record::samples_us, check_latency_samples),
    field("latency", &Record::latency),
    field("stages", &Record::stages),
    field("tflops", &Record::tflops),
    field("tflops_fa_convention", &Record::tflops_fa_convention),
    field("launch_overhead_us", &Record::launch_overhead_us),
    field("timing_mode", &Record::timing_mode),
    field("sampling_stop", &Record::sampling_stop),
    field("clock", &Record::clock),
    field("counters", &Record::counters),
    field("occupancy", &Record::occupancy),
    field("launches", &Record::launches),
    field("layout", &Record::layout),
    field("plan", &Record::plan),
    field("verification", &Record::verification),
    field("cost", &Record::cost),
    field("stalls", &Record::stalls),
    field("timeline", &Record::timeline),
    field("diagnosis", &Record::diagnosis),
    field("wall_s", &Record::wall_s),
};

constexpr std::tuple kProbeRateFields{
    field("flops_per_s", &ProbeRate::flops_per_s),
    field("sm_mhz", &ProbeRate::sm_mhz),
    field("not_run", &ProbeRate::not_run),
};

constexpr std::tuple kCeilingsFields{
    field("peak_bw_bytes_per_s", &Ceilings::peak_bw_bytes_per_s),
    field("peak_flops_per_s", &Ceilings::peak_flops_per_s),
    field("source", &Ceilings::source),
    field("launch_latency_us", &Ceilings::launch_latency_us),  // absent before schema 1.5
    field("datasheet_bw_bytes_per_s", &Ceilings::datasheet_bw_bytes_per_s),
    field("datasheet_flops_per_s", &Ceilings::datasheet_flops_per_s),
    // Schema 1.5; absent (zero, empty) in older files.
    field("flops_per_s_per_mhz", &Ceilings::flops_per_s_per_mhz),
    field("probe_sm_mhz", &Ceilings::probe_sm_mhz),
    field("l2_bw_bytes_per_s", &Ceilings::l2_bw_bytes_per_s),
};

constexpr std::tuple kDeviceInfoFields{
    field("name", &DeviceInfo::name),
    field("compute_capability", &DeviceInfo::compute_capability),
    field("sm_count", &DeviceInfo::sm_count),
    field("l2_bytes", &DeviceInfo::l2_bytes),
    field("memory_bytes", &DeviceInfo::memory_bytes),
    field("driver_version", &DeviceInfo::driver_version),
    field("runtime_version", &DeviceInfo::runtime_version),
    field("sm_clock_max_mhz", &DeviceInfo::sm_clock_max_mhz),
    field("mem_clock_mhz", &DeviceInfo::mem_clock_mhz),
};

constexpr std::tuple kHostLoadFields{
    field("load_avg_1m", &HostLoad::load_avg_1m),
    field("cores", &HostLoad::cores),
};

constexpr std::tuple kContextFields{
    field("tool_version", &Context::tool_version),
    field("git_revision", &Context::git_revision),
    field("command_line", &Context::command_line),
    field("date_utc", &Context::date_utc),
    field("host", &Context::host),
    field("backend", &Context::backend),
    field("device", &Context::device),
    field("ceilings", &Context::ceilings),
    field("sweep", &Context::sweep),
    field("options", &Context::options),
    field("notices", &Context::notices),
    field("plugins", &Context::plugins),
    field("host_load", &Context::host_load),  // schema 1.11; absent (or null) in older files
};

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

void check_backend_choice(std::string_view which) {
  if (std::find(kBackendChoices.begin(), kBackendChoices.end(), which) == kBackendChoices.end())
    throw InputError(fmt::format("unknown backend '{}' (expected auto, cuda or cpu)", which));
}
std::string_view to_string(TimingMode m) { return name_of(m); }
std::string_view to_string(DramSource d) { return name_of(d); }
std::string_view to_string(SamplingStatus s) { return name_of(s); }

std::optional<double> counter_total(const Record& r, const std::string& metric) {
  if (r.counters.status != CounterStatus::ok) return std::nullopt;
  const auto it = r.counters.total.find(metric);
  if (it == r.counters.total.end()) return std::nullopt;
  return finite(it->second);
}

void mark_nothing_counted(Counters& c) {
  if (c.status != CounterStatus::ok || !c.total.empty() || !c.per_kernel.empty()) return;
  c.status = CounterStatus::unavailable;
  c.reason = fmt::format("{}{}no counter value: the session recorded no range (none of the call's kernel launches "
                         "was profiled)",
                         c.reason, c.reason.empty() ? "" : "; ");
  c.dram_source = DramSource::none;
}

DramSource dram_source_of(const Counters& c) {
  if (c.dram_source != DramSource::none || c.status != CounterStatus::ok) return c.dram_source;
  const bool replayed = c.reason.find("kernel replay") != std::string::npos ||
                        c.reason.starts_with("batched session not used");
  return replayed ? DramSource::replayed : DramSource::ranges;
}

template <class E>
E parse_enum(std::string_view s) {
  for (const auto& [v, name] : EnumNames<E>::names)
    if (name == s) return v;
  std::vector<std::string> quoted;
  for (const auto& entry : EnumNames<E>::names) quoted.push_back(fmt::format("'{}'", entry.second));
  throw InputError(fmt::format("unknown {} '{}' (expected {})", EnumNames<E>::what, escape::one_line(s),
                               fmt::join(quoted, ", ")));
}
template Status parse_enum<Status>(std::string_view);
template CounterStatus parse_enum<CounterStatus>(std::string_view);
template BackendKind parse_enum<BackendKind>(std::string_view);
template TimingMode parse_enum<TimingMode>(std::string_view);
template DramSource parse_enum<DramSource>(std::string_view);
template SamplingStatus parse_enum<SamplingStatus>(std::string_view);

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
ATTNPROF_JSON_ENUM_DEF(DramSource)
ATTNPROF_JSON_ENUM_DEF(SamplingStatus)
#undef ATTNPROF_JSON_ENUM_DEF

#define ATTNPROF_JSON_FIELDS_DEF(T)                                                    \
  void to_json(json& j, const T& v) {                                                  \
    j = json::object();                                                                \
    write_fields(j, v, k##T##Fields);                                                  \
  }                                                                                    \
  void from_json(const json& j, T& v) { read_fields(j, v, k##T##Fields); }
ATTNPROF_JSON_FIELDS_DEF(LatencySummary)
ATTNPROF_JSON_FIELDS_DEF(Stage)
ATTNPROF_JSON_FIELDS_DEF(KernelCounters)
ATTNPROF_JSON_FIELDS_DEF(CounterSession)
ATTNPROF_JSON_FIELDS_DEF(Counters)
ATTNPROF_JSON_FIELDS_DEF(Occupancy)
ATTNPROF_JSON_FIELDS_DEF(HotSpot)
ATTNPROF_JSON_FIELDS_DEF(KernelStalls)
ATTNPROF_JSON_FIELDS_DEF(Stalls)
ATTNPROF_JSON_FIELDS_DEF(Launch)
ATTNPROF_JSON_FIELDS_DEF(GradCheck)
ATTNPROF_JSON_FIELDS_DEF(QuantCost)
ATTNPROF_JSON_FIELDS_DEF(ClockInfo)
ATTNPROF_JSON_FIELDS_DEF(ProbeRate)
ATTNPROF_JSON_FIELDS_DEF(DeviceInfo)
ATTNPROF_JSON_FIELDS_DEF(HostLoad)
#undef ATTNPROF_JSON_FIELDS_DEF

// The compute probes (schema 1.14), written only where there are some: datasheet and CPU ceilings, and
// older files, have none.
void to_json(json& j, const Ceilings& c) {
  j = json::object();
  write_fields(j, c, kCeilingsFields);
  if (!c.compute_probes.empty()) j["compute_probes"] = c.compute_probes;
}
void from_json(const json& j, Ceilings& c) {
  read_fields(j, c, kCeilingsFields);
  const auto it = j.find("compute_probes");
  if (it == j.end() || it->is_null()) return;
  if (!it->is_object()) throw InputError("ceilings field 'compute_probes' is not an object");
  for (auto p = it->begin(); p != it->end(); ++p) {
    if (!p->is_object())
      throw InputError(fmt::format("ceilings compute_probes '{}' is not an object", escape::one_line(p.key())));
    c.compute_probes[p.key()] = p->get<ProbeRate>();
  }
}

// A backward point's gradient checks (schema 1.12), a quantized KV cache's cost (1.13) and an fp8
// point's per-element bound ratio (1.14), written only where there are some; absent, the point has none
// (a forward, unquantized or non-fp8 point, an older file).
void to_json(json& j, const Verification& v) {
  j = json::object();
  write_fields(j, v, kVerificationFields);
  if (!v.o_max_bound_ratio) j.erase("o_max_bound_ratio");
  if (!v.grads.empty()) j["grads"] = v.grads;
  if (v.quant.checked) j["quantization"] = v.quant;
}
void from_json(const json& j, Verification& v) {
  read_fields(j, v, kVerificationFields);
  if (const auto q = j.find("quantization"); q != j.end() && !q->is_null()) {
    if (!q->is_object()) throw InputError("verification field 'quantization' is not an object");
    v.quant = q->get<QuantCost>();
    v.quant.checked = true;
  }
  const auto it = j.find("grads");
  if (it == j.end() || it->is_null()) return;
  if (!it->is_object()) throw InputError("verification field 'grads' is not an object");
  for (auto g = it->begin(); g != it->end(); ++g) {
    if (!g->is_object()) throw InputError(fmt::format("verification grads '{}' is not an object", escape::one_line(g.key())));
    v.grads[g.key()] = g->get<GradCheck>();
  }
}

void to_json(json& j, const Cost& c) {
  j = json::object();
  write_fields(j, c, kCostFields);
  if (c.padded_flops > 0) write_fields(j, c, kPaddedCostFields);
}
void from_json(const json& j, Cost& c) { read_fields(j, c, std::tuple_cat(kCostFields, kPaddedCostFields)); }

void to_json(json& j, const Record& r) {
  j = json::object();
  write_fields(j, r, kRecordFields);
  if (!r.stalls) j.erase("stalls");  // written only where sampled (--stalls)
  if (!r.timeline) j.erase("timeline");  // written only where sampled (--timeline)
  j["key"] = point_key(r);
}
void from_json(const json& j, Record& r) { read_fields(j, r, kRecordFields); }

void to_json(json& j, const Context& c) {
  j = json::object();
  write_fields(j, c, kContextFields);
  if (!c.host_load) j.erase("host_load");  // not recorded (a file before 1.11 rewritten): left out, not null
}
void from_json(const json& j, Context& c) {
  read_fields(j, c, kContextFields);
  if (!c.plugins.is_array()) c.plugins = json::array();
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
  for (auto& rec : r.records) mark_nothing_counted(rec.counters);
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
