// The decode part of core::diagnose (diagnosis.cpp): for a decode point (core::is_decode) the call in
// bandwidth terms (KV cache streamed, TB/s against the HBM ceiling, bytes per generated token, read
// factor, the combine stage's share), the short-call rule that names a call too short for its bytes,
// and the next steps in decode terms. docs/diagnosis.md ("Decode points") states each rule and why
// each constant has its value.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/diagnosis.hpp"
#include "core/diagnosis_model.hpp"
#include "core/results.hpp"
#include "core/thresholds.hpp"

namespace attnprof::core {

struct DecodeInputs {
  double p50_us = 0;
  double dram_bytes = 0;     // the call's DRAM bytes: counters, else the cost-model minimum
  bool bytes_measured = false;
  double min_bytes = 0;      // the cost-model minimum
  std::optional<double> read_factor;    // DRAM bytes read / the minimum read; nullopt without counters
  std::optional<double> traffic_ratio;  // DRAM bytes (with the L2 tail) / the minimum; nullopt without counters
  double peak_bw_bytes_per_s = 0;     // the HBM ceiling; 0 when unknown
  int64_t launches = 1;               // kernel launches of the call
  double launch_latency_us = 0;       // an empty kernel's launch; 0 when not measured
  bool host_bound = false;            // the host-bound flag is raised (its next step names CUDA graphs)
};

struct DecodeView {
  std::string evidence;              // the call in bandwidth terms
  bool short_stream = false;         // the ceiling streams the minimum bytes within the limit
  bool short_call = false;           // ... and fixed cost is at least kDecodeFixedTimeShareFrom of the P50
  std::string short_call_evidence;   // when short_stream: which of the two it is, with the numbers
  std::string short_call_next_step;  // when short_call
};

// Fills the decode metrics of `m` and returns the evidence and the short-call decision.
DecodeView decode_view(const Record&, const DecodeInputs&, DiagnosisMetrics& m);

// The next step of a decode point that is memory-bound on HBM: at the roof or not, the read factor,
// pages smaller than the kernel's K/V tile. Reads the decode metrics decode_view filled.
std::string decode_memory_next_step(const Record&, const DecodeInputs&, const DiagnosisMetrics&);

// For a compute-bound decode point whose counted FLOPs are over kDecodePaddedFlopsAbove x the cost
// model's (a prefill kernel's query tiles padded around a few rows): the step that names it; else empty.
std::string decode_compute_next_step(const Record&, std::optional<double> flops_vs_cost);

}  // namespace attnprof::core
