// How numbers read in evidence sentences and tables: 3 significant digits in the unit that fits.
#pragma once
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/backend_kind.hpp"

namespace attnprof::core::text {

// 3 significant digits, but never an exponent for the values a reader meets here (17250 us).
inline std::string human(double v) {
  return std::abs(v) >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}
// A latency with 4-5 significant digits and no exponent, as the gate's tables show medians:
// "17250.3", "249.12", "5.114" [us].
inline std::string latency_us(double us) {
  if (us >= 1000) return fmt::format("{:.1f}", us);
  if (us >= 10) return fmt::format("{:.2f}", us);
  return fmt::format("{:.3f}", us);
}
inline std::string giga(double v) { return fmt::format("{:.3g} G", v / 1e9); }
inline std::string tera_flops(double v) { return fmt::format("{:.3g} TFLOP/s", v / 1e12); }
inline std::string tera_bytes(double v) { return fmt::format("{:.3g} TB/s", v / 1e12); }
// A rate in the decimal unit that fits it, 3 significant digits: "3.95 TB/s", "34.5 GB/s", "812 MB/s".
inline std::string scaled_rate(double v, std::string_view unit) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& [scale, prefix] : kPrefixes)
    if (std::abs(v) >= scale) return fmt::format("{:.3g} {}{}", v / scale, prefix, unit);
  return fmt::format("{:.3g} {}", v, unit);
}
// A backend's rates: a GPU's in T units, as every GPU figure reads; a CPU's in the unit that fits
// (34.5 GB/s, not 0.0345 TB/s).
inline std::string flop_rate(double v, BackendKind b) {
  return b == BackendKind::cpu ? scaled_rate(v, "FLOP/s") : tera_flops(v);
}
inline std::string byte_rate(double v, BackendKind b) {
  return b == BackendKind::cpu ? scaled_rate(v, "B/s") : tera_bytes(v);
}
inline std::string pct(double v) { return fmt::format("{:.0f}%", v); }
// A count in the decimal unit that fits it: "134 M", "2.2 G", "812".
inline std::string count(double v) {
  if (std::abs(v) >= 1e9) return fmt::format("{:.3g} G", v / 1e9);
  if (std::abs(v) >= 1e6) return fmt::format("{:.3g} M", v / 1e6);
  if (std::abs(v) >= 1e3) return fmt::format("{:.3g} k", v / 1e3);
  return fmt::format("{:.3g}", v);
}
// "2.15 GB", "33.6 MB", "512 kB", "80 B".
inline std::string bytes(double v) {
  if (std::abs(v) >= 1e9) return fmt::format("{:.3g} GB", v / 1e9);
  if (std::abs(v) >= 1e6) return fmt::format("{:.3g} MB", v / 1e6);
  if (std::abs(v) >= 1e3) return fmt::format("{:.3g} kB", v / 1e3);
  return fmt::format("{:.3g} B", v);
}

}  // namespace attnprof::core::text
