// CLI11 validators shared by the subcommands, so that a bad value is refused at parse time (exit 2)
// and never reaches a worker. CLI11's Range/PositiveNumber let NaN through (every comparison with
// it is false), so every floating-point option also takes kFinite.
#pragma once
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/backend_kind.hpp"

namespace attnprof::cli {

inline const CLI::Validator kFinite(
    [](std::string& input) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(input, v)) return "'" + input + "' is not a number";
      if (!std::isfinite(v)) return "'" + input + "' is not a finite number";
      return {};
    },
    "FINITE", "finite");

// An option given with an empty value ("--axes ''") is a mistake, not a request for the default.
inline const CLI::Validator kNonEmpty(
    [](std::string& input) -> std::string { return input.empty() ? "an empty value is not allowed" : ""; },
    "NONEMPTY", "non-empty");

// A probability-like fraction strictly between 0 and 1 (a significance level, a confidence).
inline const CLI::Validator kOpenUnitInterval(
    [](std::string& input) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(input, v) || !(v > 0 && v < 1)) return "'" + input + "' is not in (0, 1)";
      return {};
    },
    "(0,1)", "open unit interval");

// A gate threshold: a slowdown fraction in [0, 10) (gate::Options; 10 would be an 11x slowdown).
inline const CLI::Validator kGateThreshold(
    [](std::string& input) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(input, v) || !(v >= 0 && v < 10)) return "'" + input + "' is not in [0, 10)";
      return {};
    },
    "[0,10)", "gate threshold");

// Every option that takes a value (main.cpp adds it to all of them): a value that starts with "--" is an
// option the user meant to give next (`report r.json --html --md` would write the HTML to a file named
// "--md"). A file so named can still be given as ./--name.
inline const CLI::Validator kNotAnOption(
    [](std::string& value) -> std::string {
      if (value.starts_with("--")) return "'" + value + "' is an option, not a value: give the value after its option";
      return {};
    },
    "", "not an option");

// Adds kNotAnOption to every option of `app` and its subcommands that takes a value.
inline void refuse_options_as_values(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->get_type_size() != 0) option->check(kNotAnOption);  // flags (--help, --version) take none
  for (CLI::App* sub : app.get_subcommands({})) refuse_options_as_values(*sub);
}

// --backend of `sweep` and `devices`: core::kBackendChoices, the names measure::make_backend opens.
inline const CLI::Validator kBackend =
    CLI::IsMember(std::vector<std::string>(core::kBackendChoices.begin(), core::kBackendChoices.end()));
inline constexpr const char* kBackendHelp = "auto (CUDA if a GPU is present, else CPU), cuda, cpu";

// One entry of --devices: a device id, or "all". Whether the backend has that device is checked when
// the sweep starts (run::resolve_devices).
inline constexpr int kMaxDeviceId = 1023;
inline const CLI::Validator kDeviceId(
    [](std::string& input) -> std::string {
      if (input == "all") return {};
      // Decimal digits only: CLI11's integer conversion also reads "0x1" and "010" (octal).
      int id = -1;
      const auto [end, ec] = std::from_chars(input.data(), input.data() + input.size(), id);
      if (input.empty() || ec != std::errc() || end != input.data() + input.size() || id < 0 || id > kMaxDeviceId)
        return "bad device '" + input + "' (expected 0,1,... or all)";
      return {};
    },
    "ID|all", "device id");

// The entries of a --devices value, split at every comma; an empty entry ("0,", "0,,1", ",1") stays,
// as an empty string, for kDeviceList to refuse.
inline std::vector<std::string> device_entries(std::string_view list) {
  std::vector<std::string> entries;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    entries.emplace_back(list.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return entries;
    start = comma + 1;
  }
}

// A whole --devices value: comma-separated kDeviceId entries, none empty. Checked whole rather than
// through CLI11's delimiter, which drops empty entries and so would take "0,,1" for "0,1" and "0," for
// "0" (a typo'd list then runs on devices nobody asked for).
inline const CLI::Validator kDeviceList(
    [](std::string& input) -> std::string {
      for (const auto& entry : device_entries(input)) {
        if (entry.empty()) return "'" + input + "' has an empty entry (expected 0,1,... or all)";
        if (std::string why = kDeviceId(entry); !why.empty()) return why;
      }
      return {};
    },
    "ID,...|all", "device list");

}  // namespace attnprof::cli
