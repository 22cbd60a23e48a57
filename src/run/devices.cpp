#include "run/devices.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "measure/backend.hpp"
#include "run/sweep_runner.hpp"

namespace attnprof::run {

using nlohmann::json;

DeviceList list_devices(const std::string& which, bool remeasure) {
  if (which != "auto" && which != "cuda" && which != "cpu")
    throw InputError(fmt::format("unknown backend '{}' (expected auto, cuda or cpu)", which));
  DeviceList list;
  auto first = measure::make_backend(which, 0, &list.notices);
  const std::string name = first->name();
  for (int id : resolve_devices({.all = true}, name)) {
    auto backend = id == 0 ? std::move(first) : measure::make_backend(name, id, &list.notices);
    DeviceEntry e;
    e.id = id;
    e.backend = backend->name();
    e.info = backend->device_info();
    e.ceilings = backend->ceilings(remeasure);
    list.devices.push_back(std::move(e));
  }
  return list;
}

namespace {

std::string gib(int64_t bytes) {
  return bytes > 0 ? fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30)) : "-";
}
std::string mib(int64_t bytes) {
  return bytes > 0 ? fmt::format("{:.0f} MiB", static_cast<double>(bytes) / (1 << 20)) : "-";
}
std::string tflops(const core::Ceilings& c, const char* dtype) {
  auto it = c.peak_flops_per_s.find(dtype);
  return it == c.peak_flops_per_s.end() || it->second <= 0 ? "-" : fmt::format("{:.1f}", it->second / 1e12);
}

}  // namespace

void write_devices_table(const DeviceList& list, std::ostream& out) {
  for (const auto& n : list.notices) out << "notice: " << n << '\n';
  out << fmt::format("{:<3} {:<5} {:<32} {:>4} {:>6} {:>10} {:>8} {:>9} {:>10} {:>8} {:>8} {:>8}  {}\n",
                     "id", "kind", "name", "cc", "SMs", "memory", "L2", "SM MHz", "BW GB/s",
                     "bf16 TF", "fp16 TF", "fp32 TF", "ceilings");
  for (const auto& d : list.devices) {
    const auto& i = d.info;
    const auto& c = d.ceilings;
    out << fmt::format("{:<3} {:<5} {:<32} {:>4} {:>6} {:>10} {:>8} {:>9} {:>10} {:>8} {:>8} {:>8}  {}\n",
                       d.id, d.backend, i.name.substr(0, 32),
                       i.compute_capability.empty() ? "-" : i.compute_capability, i.sm_count,
                       gib(i.memory_bytes), mib(i.l2_bytes),
                       i.sm_clock_max_mhz > 0 ? fmt::format("{:.0f}", i.sm_clock_max_mhz) : "-",
                       c.peak_bw_bytes_per_s > 0 ? fmt::format("{:.0f}", c.peak_bw_bytes_per_s / 1e9) : "-",
                       tflops(c, "bf16"), tflops(c, "fp16"), tflops(c, "fp32"),
                       c.source.empty() ? "-" : c.source);
  }
}

void write_devices_json(const DeviceList& list, std::ostream& out) {
  json devices = json::array();
  for (const auto& d : list.devices)
    devices.push_back({{"id", d.id}, {"backend", d.backend}, {"device", d.info}, {"ceilings", d.ceilings}});
  out << json{{"devices", devices}, {"notices", list.notices}}.dump(2) << '\n';
}

}  // namespace attnprof::run
