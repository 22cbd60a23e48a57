// What every renderer shows of one point, computed once: the row of the summary table and the
// diagnosis behind it. Internal to src/report/.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/results.hpp"

namespace attnprof::report::detail {

struct Row {
  const core::Record* record = nullptr;
  std::string label, kernel, status, reason;
  bool measured = false;  // ok or incorrect: it has timings and a diagnosis
  std::optional<double> p50_us, p99_us, tflops, pct_of_roof, intensity_flop_per_byte;
  std::optional<double> achieved_flops_per_s, dram_bytes;
  // P99 as shown (core::shown_percentile): the sample maximum with p99_note "n=30: max" where the
  // sample count cannot bound the P99, else the estimate with an empty note.
  std::string p99_note;
  // A decode point (core::is_decode) is shown by bandwidth where a prefill point shows TFLOP/s: its
  // DRAM bytes over the P50 (nearly all of it the KV cache) [TB/s], that against the HBM ceiling, and
  // its DRAM bytes per generated token (counters, else the cost-model minimum) [bytes].
  bool decode = false;
  std::optional<double> kv_tb_per_s, pct_of_hbm_ceiling, bytes_per_token;
  std::string verdict;
  // The memory level a memory-bound verdict binds on (core's rule-memory-level), in the tables' words:
  // "DRAM", "L2", "L1/shared" or "on chip" (L2 or L1/shared, not told apart); empty otherwise.
  std::string memory_level;
  std::vector<std::string> flags;
  std::optional<core::Diagnosis> diagnosis;  // the record's own (core::annotate); none when not analysed
};

std::vector<Row> make_rows(const core::Results&);
// The verdict as the tables show it: a memory-bound one with its level, "memory-bound (L1/shared)",
// since a reader takes a bare "memory-bound" for HBM; any other as it is; "" when there is none.
std::string verdict_text(const Row&);
// True when a measured row is a decode point: the tables then carry the decode columns.
bool any_decode(const std::vector<Row>&);

// "-" when absent, else the value with `decimals` digits after the point.
std::string fixed(std::optional<double>, int decimals);
// "-" when absent, else the value with at least `digits` significant digits and `min_decimals`
// decimals, no exponent, at most 6 decimals: values a thousand times apart both read (a CPU's
// 0.0123 TFLOP/s and an H200's 459.4 with digits 3, min_decimals 1).
std::string significant(std::optional<double>, int digits, int min_decimals = 0);
// fixed(row.p99_us, decimals) with the row's p99_note: "1250.00 (n=30: max)".
std::string p99_text(const Row&, int decimals);
// core::escape::terminal: control characters (a terminal escape in a kernel name) made visible.
std::string printable(std::string_view);
// The results' ceilings in the backend's words: "HBM 4.00 TB/s, bf16 780 TFLOP/s, fp16 780 TFLOP/s
// (measured)" on a GPU; on the CPU backend "DRAM 34.5 GB/s, bf16 65.2 GFLOP/s, ... (measured)" (each
// figure in the unit that fits it). A dtype of the measured points that the ceilings give no roof is
// named after them, "; no fp8_e4m3 roof: ..." (core::missing_roof).
std::string ceilings_summary(const core::Results&);

// One column's unit: the largest decimal prefix at which the column's largest value is at least 1
// ("T", "G", "M", "k", ""), and its scale. A CPU's 0.0123 TFLOP/s reads as 12.3 GFLOP/s.
struct ColumnUnit {
  double scale = 1e12;
  std::string prefix = "T";
};
// The unit of a column of values in base units (FLOP/s, B/s, B): gpu_prefix's on any backend but the
// CPU's, whatever the values (GPU tables keep their units); on the CPU the one that fits the largest
// finite value (gpu_prefix's when there is none).
ColumnUnit column_unit(const std::vector<std::optional<double>>& values, core::BackendKind, std::string_view gpu_prefix = "T");
// The units of the summary table's rate columns: FLOP/s of the prefill rows, the decode rows' KV
// bandwidth, and bytes per token (a GPU's T, T and M).
struct TableUnits {
  ColumnUnit flops, kv_rate, per_token;
};
TableUnits table_units(const std::vector<Row>&, core::BackendKind);

}  // namespace attnprof::report::detail
