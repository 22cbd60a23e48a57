// CLI11 validators shared by the subcommands, so that a bad value is refused at parse time (exit 2)
// and never reaches a worker. CLI11's Range/PositiveNumber let NaN through (every comparison with
// it is false), so every floating-point option also takes kFinite.
#pragma once
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

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

}  // namespace attnprof::cli
