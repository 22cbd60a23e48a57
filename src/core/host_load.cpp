#include "core/host_load.hpp"

#include <cstdlib>

#include <unistd.h>

#include <fmt/format.h>

#include "core/escape.hpp"

namespace attnprof::core {

std::optional<HostLoad> read_host_load() {
  double load[1] = {0};
  if (getloadavg(load, 1) != 1) return std::nullopt;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) return std::nullopt;
  return HostLoad{load[0], static_cast<int64_t>(cores)};
}

bool busy(const HostLoad& l) { return l.cores > 0 && l.load_avg_1m > static_cast<double>(l.cores); }

namespace {
std::string load_text(const HostLoad& l) {
  return fmt::format("load {:.1f} on {} {}", l.load_avg_1m, l.cores, l.cores == 1 ? "core" : "cores");
}
}  // namespace

std::string busy_message(const HostLoad& l) {
  return fmt::format("the machine is busy: {}; timings will vary", load_text(l));
}

std::optional<std::string> recorded_busy_warning(const Context& c, std::string_view label) {
  if (!c.host_load || !busy(*c.host_load)) return std::nullopt;
  return fmt::format("{} was measured on a busy machine: {}; its timings vary with the machine's other work",
                     escape::one_line(label), load_text(*c.host_load));
}

}  // namespace attnprof::core
