// How busy the machine is: the 1-minute load average against the cores online. A sweep records it in
// its context (results.json `context.host_load`) and warns at its start when the load exceeds the
// cores; compare and history warn when either run's recorded load did. On a busy machine the same CPU
// work can take several times as long from one run to the next, and a gate on such runs fails or
// passes on the machine's other work.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "core/results.hpp"

namespace attnprof::core {

// The machine's load now: getloadavg()'s 1-minute figure and sysconf(_SC_NPROCESSORS_ONLN). nullopt
// when either cannot be read.
std::optional<HostLoad> read_host_load();

// More runnable work than cores: the load average exceeds the core count (a known count only).
bool busy(const HostLoad&);

// "the machine is busy: load 3.1 on 2 cores; timings will vary": the sweep's warning at its start.
std::string busy_message(const HostLoad&);

// For a results file read by compare or history: "LABEL was measured on a busy machine: load 3.1 on 2
// cores; its timings vary with the machine's other work"; nullopt when its recorded load did not
// exceed its cores, or it recorded none (files before schema 1.11).
std::optional<std::string> recorded_busy_warning(const Context&, std::string_view label);

}  // namespace attnprof::core
