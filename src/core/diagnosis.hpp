// Diagnosis: says why one measured point is as fast or slow as it is, with the numbers behind it.
// It reads only a Record and its Context (so it runs on any machine, from a results file alone) and
// follows Nsight Compute's speed-of-light rules where counters exist, the roofline and the cost model
// where they do not. It computes the numbers once (core::gather_facts, diagnosis_facts.hpp) and runs
// the list of rules over them (core::diagnosis_rules, diagnosis_rules.hpp). Every threshold is a named
// constant in core/thresholds.hpp, each justified in docs/diagnosis.md.
// The result is a core::Diagnosis (diagnosis_model.hpp): verdict and flags as enums, evidence
// sentences, a next step, the metrics, and one entry per launch of a multi-launch call.
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/diagnosis_model.hpp"
#include "core/metric_names.hpp"  // the CUPTI names it reads from Counters::total
#include "core/results.hpp"
#include "core/thresholds.hpp"  // every threshold it judges by

namespace attnprof::core {

// Verdict and flag names as the JSON and the reports spell them (to_string of the enums).
inline constexpr std::string_view kVerdictMemory = "memory-bound";
inline constexpr std::string_view kVerdictCompute = "compute-bound";
inline constexpr std::string_view kVerdictLatency = "latency-bound";
inline constexpr std::string_view kVerdictOccupancy = "occupancy-bound";
inline constexpr std::string_view kVerdictLaunch = "launch-bound";
inline constexpr std::string_view kVerdictUnknown = "unknown";
inline constexpr std::string_view kFlagUnderFilled = "under-filled";
inline constexpr std::string_view kFlagTailEffect = "tail-effect";
inline constexpr std::string_view kFlagExcessTraffic = "excess-traffic";
inline constexpr std::string_view kFlagThrottled = "throttled";
inline constexpr std::string_view kFlagNoisy = "noisy";
inline constexpr std::string_view kFlagUnverified = "unverified";
inline constexpr std::string_view kFlagCountersUnavailable = "counters-unavailable";
inline constexpr std::string_view kFlagHostBound = "host-bound";
inline constexpr std::string_view kFlagBorderline = "borderline";

// True for a kernel that writes S and P to memory (the cost model gave it S/P traffic).
bool is_materialized(const Record&);

// The diagnosis of one measured point (status ok or incorrect). Pure: depends only on inputs.
Diagnosis diagnose(const Record&, const Context&);

// Fills Record::diagnosis for every ok/incorrect record; sets it to null for the others.
void annotate(Results&);

}  // namespace attnprof::core
