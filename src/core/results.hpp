// The results model: what a sweep produces and every later stage (report, diagnosis, gate, merge)
// reads. Serialised as JSON schema v1 (docs/results-schema.md). Units live in the field names.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend_kind.hpp"
#include "core/stalls.hpp"
#include "core/timeline.hpp"
#include "core/diagnosis_model.hpp"
#include "core/shape.hpp"

namespace attnprof::core {

inline constexpr int kSchemaMajor = 1;
inline constexpr int kSchemaMinor = 14;
// Most latency samples per point a reader accepts: the most sweep's --max-samples takes (5x its
// default).
inline constexpr int64_t kMaxSamplesPerPoint = 100000;

enum class Status { ok, skipped, unsupported, oom, failed, incorrect };
// Whether a point's counters were collected: "not_collected" (not asked for, or the point never ran),
// "ok", "unavailable" (asked for, could not be had: the reason says why), "pending" (timed; a batched
// counter session still to come).
enum class CounterStatus { not_collected, ok, unavailable, pending };
// How a point was timed: L2 flushed before every sample ("cold") or not ("warm"), "+graph" when
// replayed from a CUDA graph of many calls; none ("") where a point was never timed in a file that
// names no mode.
enum class TimingMode { none, cold, warm, cold_graph, warm_graph };
// Where a point's DRAM byte counts come from. "ranges": the ranges of its counter session, each pass
// run as the timed call runs. "single-pass": a session of the DRAM counters alone, in one pass, taken
// because the other counters came from passes that add DRAM traffic the call never made (kernel
// replay restores memory between passes; a fallback session of its own). "replayed": those passes'
// own counts, no single-pass session to replace them: the writes are not the call's. None ("") in
// files that predate the field: dram_source_of() infers it from the counters' reason.
enum class DramSource { none, ranges, single_pass, replayed };

// Each enum's JSON strings, one table per enum: to_string, parse_enum and the JSON conversions all
// read it, so a results file keeps the strings it always had.
template <class E>
struct EnumNames;
template <>
struct EnumNames<Status> {
  static constexpr std::string_view what = "point status";
  static constexpr std::pair<Status, std::string_view> names[] = {
      {Status::ok, "ok"},   {Status::skipped, "skipped"}, {Status::unsupported, "unsupported"},
      {Status::oom, "oom"}, {Status::failed, "failed"},   {Status::incorrect, "incorrect"}};
};
template <>
struct EnumNames<CounterStatus> {
  static constexpr std::string_view what = "counter status";
  static constexpr std::pair<CounterStatus, std::string_view> names[] = {
      {CounterStatus::not_collected, "not_collected"},
      {CounterStatus::ok, "ok"},
      {CounterStatus::unavailable, "unavailable"},
      {CounterStatus::pending, "pending"}};
};
template <>
struct EnumNames<DramSource> {
  static constexpr std::string_view what = "DRAM source";
  static constexpr std::pair<DramSource, std::string_view> names[] = {{DramSource::none, ""},
                                                                      {DramSource::ranges, "ranges"},
                                                                      {DramSource::single_pass, "single-pass"},
                                                                      {DramSource::replayed, "replayed"}};
};
template <>
struct EnumNames<BackendKind> {
  static constexpr std::string_view what = "backend";
  static constexpr std::pair<BackendKind, std::string_view> names[] = {
      {BackendKind::none, ""}, {BackendKind::cuda, "cuda"}, {BackendKind::cpu, "cpu"}};
};
template <>
struct EnumNames<SamplingStatus> {
  static constexpr std::string_view what = "sampling status";
  static constexpr std::pair<SamplingStatus, std::string_view> names[] = {{SamplingStatus::ok, "ok"},
                                                                          {SamplingStatus::unavailable, "unavailable"},
                                                                          {SamplingStatus::unsupported, "unsupported"}};
};
template <>
struct EnumNames<TimingMode> {
  static constexpr std::string_view what = "timing mode";
  static constexpr std::pair<TimingMode, std::string_view> names[] = {{TimingMode::none, ""},
                                                                      {TimingMode::cold, "cold"},
                                                                      {TimingMode::warm, "warm"},
                                                                      {TimingMode::cold_graph, "cold+graph"},
                                                                      {TimingMode::warm_graph, "warm+graph"}};
};

std::string_view to_string(Status);
std::string_view to_string(CounterStatus);
std::string_view to_string(TimingMode);
std::string_view to_string(DramSource);
std::string_view to_string(SamplingStatus);
// The enum value a string names; throws InputError naming the string and every accepted one.
template <class E>
E parse_enum(std::string_view);
extern template Status parse_enum<Status>(std::string_view);
extern template CounterStatus parse_enum<CounterStatus>(std::string_view);
extern template BackendKind parse_enum<BackendKind>(std::string_view);
extern template TimingMode parse_enum<TimingMode>(std::string_view);
extern template DramSource parse_enum<DramSource>(std::string_view);
extern template SamplingStatus parse_enum<SamplingStatus>(std::string_view);
inline Status parse_status(std::string_view s) { return parse_enum<Status>(s); }
// The graph-replayed mode of `mode` (cold -> cold+graph, warm -> warm+graph).
TimingMode graph_replayed(TimingMode mode);

// Summary statistics of a latency sample set (src/core/stats.hpp computes it).
struct LatencySummary {
  int64_t n = 0;
  double mean_us = 0, stddev_us = 0, rel_stddev = 0;
  double min_us = 0, p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  double p50_ci_low_us = 0, p50_ci_high_us = 0;  // 95% CI of the median (core::median_ci)
};

// One stage of a multi-kernel implementation (the reference's QK^T, softmax, PV).
struct Stage {
  std::string name;
  std::vector<double> samples_us;
  double p50_us = 0, p99_us = 0;
  double share_of_p50 = 0, share_of_p99 = 0;  // stage P50 / sum of stage P50s, likewise P99
};

// Hardware counters for one kernel launch (or a whole call when summed).
struct KernelCounters {
  std::string kernel;                     // CUDA kernel (function) name or "total"
  std::map<std::string, double> metrics;  // CUPTI metric name -> value, as CUPTI reports it
};

// Where the wall time of the CUPTI session that collected a point's counters went [ms]. A batched
// session is shared by `points` points: every one of them carries the same figures.
struct CounterSession {
  int64_t points = 0;
  double pass_setup_ms = 0;               // cuptiRangeProfilerStart, summed over the passes
  double run_ms = 0;                      // the flushes, markers and calls, run to completion
  double pass_close_ms = 0;               // cuptiRangeProfilerStop
  double evaluate_ms = 0;                 // decoding the counter data and evaluating the metrics
};

struct Counters {
  CounterStatus status = CounterStatus::not_collected;
  std::string reason;                     // why unavailable, and how to fix it
  std::vector<KernelCounters> per_kernel; // one per launch within the call
  std::map<std::string, double> total;    // summed over the call's launches (ratios: time-weighted)
  int64_t passes = 0;                     // replay passes CUPTI needed
  double profiling_ms = 0;                // wall time spent collecting
  // DRAM bytes written back by the L2 flush right after the call: the call's lines still dirty in L2
  // when its last range ended, which no range of the call counts. Cold timing only (the flush is
  // what reads it); absent otherwise.
  std::optional<double> dram_write_tail_bytes;
  DramSource dram_source = DramSource::none;
  std::optional<CounterSession> session;
};

// Counters that read "ok" without a single value (no range recorded: none of the call's kernel launches
// was profiled) become "unavailable", the reason saying so after the session's own. Collection calls
// it on every session it returns, and reading a results file on every record (files written before it
// held such points).
void mark_nothing_counted(Counters&);

// A point's DRAM source, inferred for files without Counters::dram_source: counters that name kernel
// replay or a fallback session of their own were replayed.
DramSource dram_source_of(const Counters&);
// True when the counted DRAM writes are the call's own (ranges or a single-pass session).
inline bool dram_writes_trusted(const Counters& c) {
  const DramSource s = dram_source_of(c);
  return s == DramSource::ranges || s == DramSource::single_pass;
}

struct Occupancy {
  std::string kernel;                     // which launch this describes (the dominant one)
  int64_t threads_per_block = 0, registers_per_thread = 0, smem_bytes_per_block = 0;
  int64_t grid_blocks = 0, blocks_per_sm = 0, sm_count = 0;
  double theoretical_pct = 0;             // active warps / max warps per SM
  std::string limiter;                    // "registers", "shared_memory", "threads", "blocks"
  double waves = 0;                       // grid_blocks / (blocks_per_sm * sm_count)
  std::optional<double> achieved_pct;     // from sm__warps_active counter
};

// One kernel launch of a call as CUPTI's activity API recorded it: what ran, whatever launched it (the
// kernel's own code, cuBLAS, a plugin's library), with the theoretical occupancy its resources imply.
struct Launch {
  std::string name;                        // demangled
  std::array<int64_t, 3> grid{}, block{}, cluster{};  // cluster: {0,0,0} when none
  int64_t registers_per_thread = 0, static_smem_bytes = 0, dynamic_smem_bytes = 0;
  double duration_us = 0;                  // of the recorded (untimed, warm) call
  bool from_graph = false;                 // launched by a CUDA graph's replay (CUPTI's graphId), e.g.
                                           // a Python callable that replays its own captured graph
  Occupancy occupancy;                     // theoretical; achieved_pct from its counter range if any
};

// One gradient of a backward point (dQ, dK or dV) against the float64 backward: its sampled rows'
// max error and the FlashAttention-rule tolerance from the naive low-precision backward
// (kernels/common/verify.hpp).
struct GradCheck {
  int64_t rows_checked = 0, rows_total = 0;
  double max_abs_err = 0, mean_abs_err = 0;
  double naive_max_abs_err = 0;
  double tolerance = 0;
  bool passed = false;
};

// A backward point's Verification holds the forward check of the O and LSE its backward read (the
// fields below) and one GradCheck per gradient; passed needs all of them.
// What quantizing the KV cache costs at a point (kv_dtype fp8_e4m3 or int8): the float64 attention of
// the values the stored bytes stand for against that of the unquantized inputs, over the checked rows.
// The kernel's own error is Verification's o_max_abs_err, against the former.
struct QuantCost {
  bool checked = false;
  double o_max_abs_err = 0, o_mean_abs_err = 0;
  double o_max_rel_err = 0;  // o_max_abs_err over the largest |O| of the unquantized attention
};

struct Verification {
  bool checked = false;
  bool lse_checked = true;                   // false: the kernel writes no LSE (a plugin's choice)
  uint64_t seed = 0;
  int64_t rows_checked = 0, rows_total = 0;  // rows of O compared with the float64 reference
  int64_t unwritten = 0;                     // output elements still poisoned (or non-finite)
  double o_max_abs_err = 0, o_mean_abs_err = 0;
  double lse_max_abs_err = 0;
  double naive_o_max_abs_err = 0;            // same math done naively in the same low precision
  double tolerance = 0;                      // 2 * naive + absolute term (FlashAttention rule); for
                                             // fp8 prefill the largest per-element bound checked
  // fp8 prefill (Shape::quantized_q): each O element is held to a bound of its own (docs/verification.md);
  // the largest |error| / bound over the checked elements, at most 1 when O passes. Unset otherwise.
  std::optional<double> o_max_bound_ratio;
  std::map<std::string, GradCheck> grads;    // "dq", "dk", "dv" of a backward point; empty forward
  QuantCost quant;                           // a quantized KV cache's; unchecked otherwise
  bool passed = false;
};

// Analytic cost of one (shape, kernel) point (src/core/cost_model.hpp).
struct Cost {
  double flops = 0;                // the FLOPs of the unmasked scores, exact for any mask:
                                   // 4*B*H*D * unmasked_scores; every TFLOP/s divides by it
  double flops_dense = 0;          // 4*B*H*Nq*Nk*D: every score, masked or not
  double flops_fa_convention = 0;  // FlashAttention's benchmark convention: flops_dense, halved
                                   // when causal (equal to `flops` within 1/N for square shapes)
  double min_bytes_read = 0, min_bytes_write = 0;
  double sp_bytes = 0;             // of those, S and P written and re-read (reference only)
  double workspace_bytes = 0;
  double intensity = 0;            // flops / (min read + min write)  [FLOP/byte]
  // A packed (variable-length) batch: the FLOPs and minimum bytes of the same batch padded to its
  // longest sequence, the work padding would add. 0 for a dense shape (and absent from its JSON).
  double padded_flops = 0;
  double padded_min_bytes = 0;
};

struct ClockInfo {
  double sm_mhz_min = 0, sm_mhz_max = 0;  // over the sampling batches, measured under load
  double sm_mhz_median = 0;               // median of sm_mhz_batches
  double sm_mhz_unthrottled = 0;          // the device's max SM clock
  int64_t throttled_samples = 0;          // samples under kThrottledClockFraction of unthrottled
  std::vector<double> sm_mhz_batches;     // one reading per samples_per_reading samples, in order
  int64_t samples_per_reading = 0;
};

struct Record {
  Shape shape;
  std::string kernel;                     // "reference", "fused", ...
  BackendKind backend = BackendKind::none;
  int device_id = 0;
  Status status = Status::ok;
  std::string reason;                     // why, for every status but ok
  std::vector<double> samples_us;         // raw latency samples, GPU time of one call
  LatencySummary latency;
  std::vector<Stage> stages;
  double tflops = 0;                      // cost.flops / latency.p50 (exact FLOPs)
  double tflops_fa_convention = 0;        // cost.flops_fa_convention / latency.p50
  double launch_overhead_us = 0;          // host-side launch cost of one call, measured apart
  TimingMode timing_mode = TimingMode::none;
  // Why sampling stopped: "converged" (the median's CI within --target-ci), "time_budget"
  // (--max-seconds spent first) or "max_samples"; empty when the point was not sampled (and in files
  // before schema 1.3).
  std::string sampling_stop;
  ClockInfo clock;
  Counters counters;
  Occupancy occupancy;
  // Every launch of one call, from CUPTI (CUDA backend; empty when not recorded).
  std::vector<Launch> launches;
  std::string layout = "bhsd";            // of Q, K, V, O as the kernel took them
  // The kernel's plan for the shape as it ran (kernels/registry.hpp Kernel::plan): split count, tile
  // sizes; empty for kernels that report none.
  std::map<std::string, int64_t> plan;
  Verification verification;
  Cost cost;
  // Warp-state samples of the call (--stalls), taken after timing and counters; absent when not asked.
  std::optional<Stalls> stalls;
  // Counters against time over one call (--timeline), taken after timing and counters; absent when
  // not asked.
  std::optional<Timeline> timeline;
  std::optional<Diagnosis> diagnosis;     // filled by analysis (src/core/diagnosis.hpp); null when absent
  double wall_s = 0;                      // wall time spent on this point
};

// A counter's total over the point's call: none when its counters did not run, or the metric is absent
// or not finite.
std::optional<double> counter_total(const Record&, const std::string& metric);

// What one compute probe of the ceilings measured (src/measure/cuda/ceilings.cu); 0 = not measured.
struct ProbeRate {
  double flops_per_s = 0;
  double sm_mhz = 0;    // the SM clock while the probe ran (0: not read)
  std::string not_run;  // why the probe did not run ("sm_80 has no fp8 tensor cores", the library's refusal); empty when it ran

  ProbeRate() = default;
  ProbeRate(double flops_per_s_, double sm_mhz_, std::string not_run_ = {})
      : flops_per_s(flops_per_s_), sm_mhz(sm_mhz_), not_run(std::move(not_run_)) {}
};

struct Ceilings {
  double peak_bw_bytes_per_s = 0;                   // used for the roofline: measured if present
  // Per dtype ("bf16", "fp16", "fp32", "fp8_e4m3"), at probe_sm_mhz; core::peak_flops_for picks a point's.
  std::map<std::string, double> peak_flops_per_s;
  std::string source;                               // "measured", "datasheet", "measured+datasheet"
  double launch_latency_us = 0;  // [us] GPU time of one empty kernel launch; 0 when not measured
  double datasheet_bw_bytes_per_s = 0;
  std::map<std::string, double> datasheet_flops_per_s;
  // Measured compute roofs per SM clock: peak_flops_per_s[dtype] / probe_sm_mhz[dtype], the roof a
  // point is placed against once scaled to the clock it ran at (core::ceilings_at_clock). Empty when
  // nothing was measured (datasheet ceilings, results before schema 1.5).
  std::map<std::string, double> flops_per_s_per_mhz;  // [FLOP/s per MHz]
  std::map<std::string, double> probe_sm_mhz;         // SM clock while the dtype's probe ran [MHz]
  double l2_bw_bytes_per_s = 0;                       // L2-resident read probe; 0 when not measured
  // Every compute probe the roofs were merged from, by its core::MeasuredCeilings name ("mma_bf16",
  // "gemm_fp8_e4m3", "fma_fp32", ...), each with its clock or why it did not run. Empty when nothing
  // was measured on a GPU (datasheet or CPU ceilings, results before schema 1.14).
  std::map<std::string, ProbeRate> compute_probes;
};

struct DeviceInfo {
  std::string name;                       // "NVIDIA H200", "CPU: <model>"
  std::string compute_capability;         // "9.0"; empty on CPU
  int64_t sm_count = 0;                   // SMs, or CPU threads used
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  std::string driver_version, runtime_version;
  double sm_clock_max_mhz = 0, mem_clock_mhz = 0;
};

// How busy the machine was as the sweep started: the 1-minute load average (getloadavg) and the
// cores online. A load above the cores means other work competed for them, and timings vary with it
// (core/host_load.hpp).
struct HostLoad {
  double load_avg_1m = 0;
  int64_t cores = 0;
};

struct Context {
  int schema_major = kSchemaMajor, schema_minor = kSchemaMinor;
  std::string tool_version, git_revision, command_line, date_utc, host;
  BackendKind backend = BackendKind::none;
  DeviceInfo device;
  Ceilings ceilings;
  nlohmann::json sweep;                   // {"spec": ..., "preset": ..., "shard": "K/N", "points": N}
  nlohmann::json options;                 // measurement options in force
  nlohmann::json plugins = nlohmann::json::array();  // each loaded plugin: path, name, version, sha256
  std::vector<std::string> notices;       // e.g. "no GPU: ran the CPU backend"
  std::optional<HostLoad> host_load;      // absent in files before schema 1.11, or when unreadable
};

struct Results {
  Context context;
  std::vector<Record> records;
};

#define ATTNPROF_JSON_ENUM_DECL(E)               \
  void to_json(nlohmann::json&, const E&);       \
  void from_json(const nlohmann::json&, E&);
ATTNPROF_JSON_ENUM_DECL(Status)
ATTNPROF_JSON_ENUM_DECL(CounterStatus)
ATTNPROF_JSON_ENUM_DECL(BackendKind)
ATTNPROF_JSON_ENUM_DECL(TimingMode)
ATTNPROF_JSON_ENUM_DECL(DramSource)
ATTNPROF_JSON_ENUM_DECL(SamplingStatus)
#undef ATTNPROF_JSON_ENUM_DECL
#define ATTNPROF_JSON_DECL(T)                 \
  void to_json(nlohmann::json&, const T&);    \
  void from_json(const nlohmann::json&, T&);
ATTNPROF_JSON_DECL(LatencySummary)
ATTNPROF_JSON_DECL(Stage)
ATTNPROF_JSON_DECL(KernelCounters)
ATTNPROF_JSON_DECL(CounterSession)
ATTNPROF_JSON_DECL(Counters)
ATTNPROF_JSON_DECL(Occupancy)
ATTNPROF_JSON_DECL(GradCheck)
ATTNPROF_JSON_DECL(QuantCost)
ATTNPROF_JSON_DECL(Verification)
ATTNPROF_JSON_DECL(Launch)
ATTNPROF_JSON_DECL(Cost)
ATTNPROF_JSON_DECL(ClockInfo)
ATTNPROF_JSON_DECL(HotSpot)
ATTNPROF_JSON_DECL(KernelStalls)
ATTNPROF_JSON_DECL(Stalls)
ATTNPROF_JSON_DECL(Record)
ATTNPROF_JSON_DECL(ProbeRate)
ATTNPROF_JSON_DECL(Ceilings)
ATTNPROF_JSON_DECL(DeviceInfo)
ATTNPROF_JSON_DECL(HostLoad)
ATTNPROF_JSON_DECL(Context)
ATTNPROF_JSON_DECL(Results)
#undef ATTNPROF_JSON_DECL

// Reads a results file; throws InputError (one line) when it is unreadable, not JSON, not a results
// file, or of another major schema version.
Results read_results(const std::string& path);
// The same from the text of a results file; `name` is for messages.
Results parse_results(std::string_view text, const std::string& name);
// Writes through core::write_file (atomic, every write checked); bytes that are not UTF-8 (a path in
// the command line) are written as U+FFFD rather than losing the file.
void write_results(const Results&, const std::string& path);
// The key that matches a point across runs: shape label + kernel.
std::string point_key(const Record&);

}  // namespace attnprof::core
