// Reference (materialised) vs fused kernels at each shape where both ran ok, read from the records'
// stored diagnoses (Record::diagnosis, filled by core::annotate): this computes no diagnosis of its own,
// so a record without one contributes no DRAM bytes, intensity or bandwidth to its pair.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"

namespace attnprof::core {

// One shape's pair: the reference (S/P in memory) against the fused kernel.
struct KernelComparison {
  std::string shape;                   // Shape::label()
  std::string reference, fused;        // the kernels' names
  double reference_p50_us = 0, fused_p50_us = 0;
  std::optional<double> speedup;       // reference P50 / fused P50; nullopt when the fused P50 is 0
  double latency_saved_us = 0;         // reference P50 - fused P50
  double reference_bytes = 0, fused_bytes = 0, bytes_saved = 0;  // DRAM bytes per call [bytes]
  std::string bytes_source;            // "DRAM counters", or "cost-model minimum / DRAM counters" when they differ
  std::optional<double> reference_intensity, fused_intensity;    // [FLOP/byte]
  std::optional<double> intensity_gain;                          // fused / reference intensity
  double sp_bytes = 0;                 // the reference's S and P traffic (cost model) [bytes]
  // sp_bytes at the reference's bandwidth ceiling [us], and that as a share of latency_saved_us.
  std::optional<double> sp_time_us, sp_explained_share;
  // One sentence with the numbers above: "fused is 3.37x faster than reference (17250 -> 5114 us); ...".
  std::string summary;
};

// One entry per shape (and backend, device) with an ok reference and an ok fused record, ordered as
// the records are. Where several kernels of a kind ran a shape, the one named "reference" ("fused")
// is picked, else the first.
std::vector<KernelComparison> compare_kernels(const Results&);

// A quantized KV cache's point (Shape::kv_dtype) beside the same kernel at the same shape with K and V
// in the dtype: the speed quantization buys and the accuracy it costs. An fp8 prefill point (dtype
// fp8_e4m3: Q, K and V quantized) stands beside its bf16 twin, the same shape with dtype bf16.
struct QuantizedKvComparison {
  std::string shape;                   // the quantized point's Shape::label()
  std::string kernel;
  std::string kv;                      // "fp8_e4m3/head"
  bool fp8_prefill = false;            // Shape::quantized_q: the twin is the bf16 point
  double p50_us = 0;
  std::optional<double> unquantized_p50_us;  // nullopt when the twin (the dtype's or bf16 point) did not run ok
  std::optional<double> speedup;             // unquantized P50 / quantized P50
  // Bytes read from DRAM per second of P50 (counters), when counted.
  std::optional<double> dram_read_tb_per_s;
  QuantCost cost;                      // Verification::quant: what quantizing costs in accuracy
  std::optional<double> kernel_err, tolerance;  // the kernel's own error against the dequantized inputs
  std::optional<double> bound_ratio;            // fp8 prefill: Verification::o_max_bound_ratio
};
// One entry per ok quantized record, in record order.
std::vector<QuantizedKvComparison> compare_quantized_kv(const Results&);

}  // namespace attnprof::core
