#include "core/comparison.hpp"

#include <cmath>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "core/metric_names.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"

namespace attnprof::core {

using text::giga;
using text::human;

namespace {

// The kernel of the wanted kind (materialised or not) among one shape's records: the one named
// `preferred`, else the first.
const Record* pick(const std::vector<const Record*>& records, bool materialized, std::string_view preferred) {
  const Record* found = nullptr;
  for (const Record* r : records) {
    if (is_materialized(*r) != materialized) continue;
    if (r->kernel == preferred) return r;
    if (!found) found = r;
  }
  return found;
}

// A CPU's figures in the units that fit them (12.6 MB, 34.5 GB/s); a GPU's in G and T as before.
std::string summary_of(const KernelComparison& c, std::optional<double> peak_bw_bytes_per_s, BackendKind backend) {
  const bool cpu = backend == BackendKind::cpu;
  const auto bytes = [cpu](double v) { return cpu ? text::bytes(v) : giga(v) + "B"; };
  const double speedup = c.speedup.value_or(0);
  std::string s = speedup >= 1 ? fmt::format("{} is {:.2f}x faster than {} ({} -> {} us)", c.fused, speedup,
                                             c.reference, human(c.reference_p50_us), human(c.fused_p50_us))
                               : fmt::format("{} is {:.2f}x slower than {} ({} -> {} us)", c.fused,
                                             speedup > 0 ? 1 / speedup : 0.0, c.reference,
                                             human(c.reference_p50_us), human(c.fused_p50_us));
  s += fmt::format("; it moves {} less DRAM traffic ({})", bytes(c.bytes_saved), c.bytes_source);
  if (c.intensity_gain)
    s += fmt::format("; intensity {} -> {} FLOP/B", human(*c.reference_intensity), human(*c.fused_intensity));
  if (c.sp_time_us) {
    s += fmt::format("; moving S/P ({}) at {} takes {} us", bytes(c.sp_bytes), text::byte_rate(*peak_bw_bytes_per_s, backend),
                     human(*c.sp_time_us));
    if (c.sp_explained_share)
      s += fmt::format(" = {:.0f}% of the {} us saved", *c.sp_explained_share * 100, human(c.latency_saved_us));
  }
  return s;
}

KernelComparison compare_pair(const Record& ref, const Record& fused) {
  static const DiagnosisMetrics kNone;
  const DiagnosisMetrics& mr = ref.diagnosis ? ref.diagnosis->metrics : kNone;
  const DiagnosisMetrics& mf = fused.diagnosis ? fused.diagnosis->metrics : kNone;
  KernelComparison c;
  c.shape = ref.shape.label();
  c.reference = ref.kernel;
  c.fused = fused.kernel;
  c.reference_p50_us = ref.latency.p50_us;
  c.fused_p50_us = fused.latency.p50_us;
  if (c.fused_p50_us > 0) c.speedup = c.reference_p50_us / c.fused_p50_us;
  c.latency_saved_us = c.reference_p50_us - c.fused_p50_us;
  c.reference_bytes = mr.dram_bytes.value_or(0);
  c.fused_bytes = mf.dram_bytes.value_or(0);
  c.bytes_saved = c.reference_bytes - c.fused_bytes;
  const std::string rs = mr.bytes_source.value_or(""), fs = mf.bytes_source.value_or("");
  c.bytes_source = rs == fs ? rs : rs + " / " + fs;
  c.reference_intensity = finite(mr.intensity_flop_per_byte);
  c.fused_intensity = finite(mf.intensity_flop_per_byte);
  if (c.reference_intensity && c.fused_intensity && *c.reference_intensity > 0)
    c.intensity_gain = *c.fused_intensity / *c.reference_intensity;
  c.sp_bytes = ref.cost.sp_bytes;
  if (const std::optional<double> peak_bw = mr.peak_bw_bytes_per_s; peak_bw && *peak_bw > 0) {
    c.sp_time_us = finite(c.sp_bytes / *peak_bw * 1e6);
    if (c.sp_time_us && c.latency_saved_us > 0) c.sp_explained_share = finite(*c.sp_time_us / c.latency_saved_us);
  }
  c.summary = summary_of(c, mr.peak_bw_bytes_per_s, ref.backend);
  return c;
}

}  // namespace

std::vector<KernelComparison> compare_kernels(const Results& results) {
  // Group ok records by shape (and backend, device), keeping the order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Record*>> groups;
  for (const auto& r : results.records) {
    if (r.status != Status::ok) continue;
    const std::string key = fmt::format("{}|{}|{}", r.shape.label(), to_string(r.backend), r.device_id);
    auto [it, added] = groups.try_emplace(key);
    if (added) order.push_back(key);
    it->second.push_back(&r);
  }
  std::vector<KernelComparison> out;
  for (const auto& key : order) {
    const Record* ref = pick(groups[key], true, "reference");
    const Record* fused = pick(groups[key], false, "fused");
    if (ref && fused) out.push_back(compare_pair(*ref, *fused));
  }
  return out;
}

std::vector<QuantizedKvComparison> compare_quantized_kv(const Results& results) {
  const auto key = [](const Record& r, const Shape& s) {
    return fmt::format("{}|{}|{}|{}", s.label(), r.kernel, to_string(r.backend), r.device_id);
  };
  std::map<std::string, const Record*> unquantized;
  for (const auto& r : results.records)
    if (r.status == Status::ok && !r.shape.quantized_kv()) unquantized.emplace(key(r, r.shape), &r);
  std::vector<QuantizedKvComparison> out;
  for (const auto& r : results.records) {
    if (r.status != Status::ok || !r.shape.quantized_kv()) continue;
    QuantizedKvComparison c;
    c.shape = r.shape.label();
    c.kernel = r.kernel;
    c.kv = fmt::format("{}/{}", to_string(r.shape.kv_dtype), to_string(r.shape.kv_scale));
    c.fp8_prefill = r.shape.quantized_q();
    c.p50_us = r.latency.p50_us;
    Shape plain = r.shape;
    plain.kv_dtype = KvDType::none;
    plain.kv_scale = KvScale::tensor;
    plain.dtype = r.shape.out_dtype();  // fp8 prefill's twin: bf16
    if (const auto it = unquantized.find(key(r, plain)); it != unquantized.end()) {
      c.unquantized_p50_us = it->second->latency.p50_us;
      if (c.p50_us > 0) c.speedup = *c.unquantized_p50_us / c.p50_us;
    }
    if (const auto bytes = counter_total(r, kMetricDramRead); bytes && c.p50_us > 0)
      c.dram_read_tb_per_s = *bytes / (c.p50_us * 1e-6) / 1e12;
    c.cost = r.verification.quant;
    if (r.verification.checked) {
      c.kernel_err = r.verification.o_max_abs_err;
      c.tolerance = r.verification.tolerance;
      c.bound_ratio = r.verification.o_max_bound_ratio;
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace attnprof::core
