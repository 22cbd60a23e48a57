#include "core/comparison.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/diagnosis.hpp"
#include "core/text.hpp"

namespace attnprof::core {

using nlohmann::json;
using text::giga;
using text::human;
using text::tera_bytes;

namespace {
json maybe(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}
}  // namespace

json compare_kernels(const Results& results) {
  // Group ok records by shape (and backend, device), keeping the order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Record*>> groups;
  for (const auto& r : results.records) {
    if (r.status != Status::ok) continue;
    const std::string key = fmt::format("{}|{}|{}", r.shape.label(), to_string(r.backend), r.device_id);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  auto pick = [](const std::vector<const Record*>& rs, bool materialized,
                 std::string_view preferred) -> const Record* {
    const Record* found = nullptr;
    for (const Record* r : rs) {
      if (is_materialized(*r) != materialized) continue;
      if (r->kernel == preferred) return r;
      if (!found) found = r;
    }
    return found;
  };

  json out = json::array();
  for (const auto& key : order) {
    const Record* ref = pick(groups[key], true, "reference");
    const Record* fused = pick(groups[key], false, "fused");
    if (!ref || !fused) continue;
    const Diagnosis dr = diagnose(*ref, results.context);
    const Diagnosis df = diagnose(*fused, results.context);
    const double ref_us = ref->latency.p50_us, fused_us = fused->latency.p50_us;
    const double ref_bytes = dr.metrics.dram_bytes.value_or(0);
    const double fused_bytes = df.metrics.dram_bytes.value_or(0);
    const std::string rs = dr.metrics.bytes_source.value_or(""), fs = df.metrics.bytes_source.value_or("");
    const json ri = maybe(dr.metrics.intensity_flop_per_byte);
    const json fi = maybe(df.metrics.intensity_flop_per_byte);
    const std::optional<double> peak_bw = dr.metrics.peak_bw_bytes_per_s;

    json c;
    c["shape"] = ref->shape.label();
    c["reference"] = ref->kernel;
    c["fused"] = fused->kernel;
    c["reference_p50_us"] = ref_us;
    c["fused_p50_us"] = fused_us;
    c["speedup"] = fused_us > 0 ? json(ref_us / fused_us) : json(nullptr);
    c["latency_saved_us"] = ref_us - fused_us;
    c["reference_bytes"] = ref_bytes;
    c["fused_bytes"] = fused_bytes;
    c["bytes_source"] = rs == fs ? rs : rs + " / " + fs;
    c["bytes_saved"] = ref_bytes - fused_bytes;
    c["reference_intensity"] = ri;
    c["fused_intensity"] = fi;
    c["intensity_gain"] = (ri.is_number() && fi.is_number() && ri.get<double>() > 0)
                              ? json(fi.get<double>() / ri.get<double>())
                              : json(nullptr);
    c["sp_bytes"] = ref->cost.sp_bytes;
    std::optional<double> sp_time_us, explained;
    if (peak_bw && *peak_bw > 0) {
      sp_time_us = ref->cost.sp_bytes / *peak_bw * 1e6;
      if (ref_us - fused_us > 0) explained = *sp_time_us / (ref_us - fused_us);
    }
    c["sp_time_us"] = maybe(sp_time_us);
    c["sp_explained_share"] = maybe(explained);

    const double speedup = fused_us > 0 ? ref_us / fused_us : 0.0;
    std::string summary =
        speedup >= 1 ? fmt::format("{} is {:.2f}x faster than {} ({} -> {} us)", fused->kernel,
                                   speedup, ref->kernel, human(ref_us), human(fused_us))
                     : fmt::format("{} is {:.2f}x slower than {} ({} -> {} us)", fused->kernel,
                                   speedup > 0 ? 1 / speedup : 0.0, ref->kernel, human(ref_us),
                                   human(fused_us));
    summary += fmt::format("; it moves {}B less DRAM traffic ({})", giga(ref_bytes - fused_bytes),
                           c["bytes_source"].get<std::string>());
    if (c["intensity_gain"].is_number())
      summary += fmt::format("; intensity {} -> {} FLOP/B", human(ri.get<double>()),
                             human(fi.get<double>()));
    if (sp_time_us) {
      summary += fmt::format("; moving S/P ({}B) at {} takes {} us", giga(ref->cost.sp_bytes),
                             tera_bytes(*peak_bw), human(*sp_time_us));
      if (explained)
        summary += fmt::format(" = {:.0f}% of the {} us saved", *explained * 100,
                               human(ref_us - fused_us));
    }
    c["summary"] = summary;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace attnprof::core
