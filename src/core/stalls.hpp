// Warp-state (PC) sampling of one call: where its warps spend their cycles, by stall reason, by SASS
// instruction and, for code built with -lineinfo, by source line. The CUDA backend takes the samples
// (src/measure/cuda/pc_sampling.cpp); this file holds what they become in a record and the pure
// aggregation from raw per-PC samples, so that it runs and is tested without a GPU.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnprof::core {

// The warp state a sample counts as issuing an instruction (CUPTI's "selected").
inline constexpr std::string_view kIssuedReason = "selected";
// Why a point of a backend without warp states (the CPU's) has none.
inline constexpr std::string_view kNoWarpStatesReason =
    "warp-state sampling needs an NVIDIA GPU: this backend has no warp states";

// Samples of one SASS instruction (or one source line), by warp state.
struct HotSpot {
  uint64_t pc_offset = 0;                  // in its function; 0 for a source line
  std::string file;                        // source file, when the code has line info
  int64_t line = 0;                        // 0 without line info
  int64_t samples = 0;
  std::map<std::string, int64_t> reasons;  // warp state -> samples
};

// One kernel (function) of the call.
struct KernelStalls {
  std::string kernel;                      // demangled function name
  int64_t samples = 0;                     // every warp sample of the function
  std::map<std::string, int64_t> reasons;  // warp state -> samples; "selected" = issuing
  std::vector<HotSpot> instructions;       // the most-sampled instructions, most first
  std::vector<HotSpot> lines;              // the most-sampled source lines, most first; empty without line info
};

enum class SamplingStatus { ok, unavailable, unsupported };

struct Stalls {
  SamplingStatus status = SamplingStatus::ok;
  std::string reason;                      // why not ok, and what to do
  int64_t calls = 0;                       // calls sampled
  int64_t period_log2 = 0;                 // one sample every 2^period_log2 cycles per SM
  int64_t samples = 0;                     // over every kernel of the calls
  int64_t dropped_samples = 0;             // lost to a full hardware buffer
  double profiling_ms = 0;
  std::vector<KernelStalls> per_kernel;    // most-sampled first
};

// One PC's samples as the sampler hands them over.
struct PcSample {
  std::string function;                    // demangled
  uint64_t pc_offset = 0;
  std::string file;                        // empty without line info
  int64_t line = 0;
  std::map<std::string, int64_t> reasons;  // short warp-state names (stall_reason_name)
};

// CUPTI's stall reason name without its counter prefix (kPcSamplingStallPrefix + "long_scoreboard"
// -> "long_scoreboard"); nullopt for the "_not_issued" variants, which count a subset of the same
// samples, and for the sample and drop counts CUPTI lists among the reasons.
std::optional<std::string> stall_reason_name(std::string_view cupti_name);

// Samples per function, with the top `top_instructions` instructions and `top_lines` source lines of
// each; functions in descending sample order.
std::vector<KernelStalls> aggregate_stalls(const std::vector<PcSample>& samples, size_t top_instructions = 12,
                                           size_t top_lines = 12);

// Share of a kernel's (or hot spot's) samples in `reason`, 0 when it has none.
double stall_share(const std::map<std::string, int64_t>& reasons, int64_t samples, std::string_view reason);
// The warp state with the most samples other than issuing ("selected") in `reasons` (a kernel's or a hot
// spot's); empty when none.
std::string dominant_stall(const std::map<std::string, int64_t>& reasons);
// A function's name without return type, scope, template arguments and parameters
// ("void ns::attention_kernel<bf16, 128>(Params)" -> "attention_kernel").
std::string short_kernel_name(std::string_view demangled);
// Warp cycles per issued instruction, as sampled: all samples over issuing ones; 0 without issues.
double cycles_per_issue(const KernelStalls&);

}  // namespace attnprof::core
