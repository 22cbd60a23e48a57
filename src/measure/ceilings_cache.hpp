// Measured ceilings survive between runs: one JSON file per device under the cache directory, so the
// bandwidth and FLOP/s probes (seconds each) run once per machine. A missing, unreadable or corrupt
// file reads as "not cached" and the caller measures again, and so does a file an older attnprof wrote
// (its format number: one from before the fp8 probes has no fp8 roof).
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "core/results.hpp"

namespace attnprof::measure {

// The format of a cache file, bumped when the meaning of a cached field changes so that stale files are
// measured again, not trusted. 4: bulk-copy reads among the HBM and L2 probes; 5: the fp8 tensor
// probes and their roof (a file of format 4 has no fp8 roof, and would leave fp8 points without one).
inline constexpr int kCeilingsCacheFormat = 5;

// $ATTNPROF_CACHE_DIR, else $XDG_CACHE_HOME/attnprof, else $HOME/.cache/attnprof; empty when none of
// them is set.
std::string ceilings_cache_dir();

// A file-name-safe key for a device: lower-case letters, digits and '-' ("cpu-amd-epyc-t2",
// "nvidia-h200"); runs of other characters become one '-'.
std::string device_cache_key(std::string_view device_name);

// The cached ceilings of `key`, or nullopt when absent or not a valid ceilings file.
std::optional<core::Ceilings> load_ceilings(const std::string& key);

// Writes atomically (temporary file, then rename), creating the directory. Returns false, and leaves
// the cache as it was, when it cannot: a cache is an optimisation, never a reason to fail a run.
bool save_ceilings(const std::string& key, const core::Ceilings&);

}  // namespace attnprof::measure
