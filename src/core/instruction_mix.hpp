// Executed warp instructions by class: what a call's warps issued (tensor-core MMAs, FP32 math, integer
// and logic, transcendentals, loads and stores, branches and barriers, ...), from the per-pipe counters
// that a sweep with --stalls collects with the others (core/metric_names.hpp, kInstructionMixMetrics).
// The mix is derived from a record's stored counter totals whenever it is read, so results files hold
// no field of their own for it and a file written before it reads the same. Pure;
// docs/why.md#instructions-by-class says what each class means and where the counts mislead.
#pragma once
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/metric_names.hpp"
#include "core/results.hpp"

namespace attnprof::core {

// One class of instructions: the SM pipes that execute it and what they execute (the pipes as Nsight
// Compute's Kernel Profiling Guide describes them for Hopper). A warp instruction is counted once, by
// the pipe it was issued to, whatever number of its threads were active or predicated on.
struct InstructionClass {
  std::string_view name;                // as reports show it: "tensor", "FMA", "load/store", ...
  std::string_view pipes;               // the pipes' names: "LSU", "CBU, ADU"
  std::array<const char*, 2> metrics;   // the pipes' counters; nullptr after the last
  std::string_view executes;            // what those pipes execute
};

// The classes, in the order reports list them. Every pipe counter of kInstructionMixMetrics is in
// exactly one class (tests/core/test_instruction_mix.cpp checks it).
inline constexpr std::array<InstructionClass, 9> kInstructionClasses{{
    {"tensor", "tensor", {kMetricInstPipeTensor, nullptr},
     "matrix multiply-accumulate on the tensor cores: HMMA (mma.sync), HGMMA (wgmma, one instruction per warp of "
     "the warpgroup), IMMA, DMMA"},
    {"FMA", "FMA", {kMetricInstPipeFma, nullptr},
     "FP32 fused multiply-add, multiply and add (FFMA, FMUL, FADD), FP16x2 math (HFMA2), integer multiply and "
     "multiply-add (IMAD, IMUL)"},
    {"ALU", "ALU", {kMetricInstPipeAlu, nullptr},
     "integer add, logic, shifts, comparisons, min/max and selects (IADD3, LOP3, SHF, ISETP, FSETP, FMNMX, SEL), "
     "fast FP32-to-FP16 conversion"},
    {"transcendental", "XU", {kMetricInstPipeXu, nullptr},
     "special functions (MUFU: exp2, reciprocal, reciprocal square root, sine, cosine) and integer/float "
     "conversions: the softmax's exp2 is here"},
    {"load/store", "LSU", {kMetricInstPipeLsu, nullptr},
     "loads, stores, atomics and reductions of global, local and shared memory (LDG, STG, LDS, STS, LDSM, LDGSTS), "
     "and also warp shuffles, special-register reads (S2R) and CTA-level arrive/wait barriers"},
    {"branch/barrier", "CBU, ADU", {kMetricInstPipeCbu, kMetricInstPipeAdu},
     "branches, jumps, calls and returns, warp convergence and warp-level barriers (CBU); address divergence of "
     "branches, constant loads and block-level barriers (ADU)"},
    {"uniform", "uniform", {kMetricInstPipeUniform, nullptr},
     "the uniform datapath's scalar instructions, one value for the whole warp (U-prefixed SASS: loop counters, "
     "addresses and descriptors the compiler proved uniform)"},
    {"TMA", "TMA", {kMetricInstPipeTma, nullptr},
     "tensor memory accelerator copies between global and shared memory (UTMALDG, UTMASTG, UBLKCP): one "
     "instruction moves a whole tile"},
    {"FP64", "FP64", {kMetricInstPipeFp64, nullptr}, "double-precision math (DFMA, DADD, DMUL)"},
}};

// A class's count in one call.
struct InstructionClassCount {
  const InstructionClass* info = nullptr;  // into kInstructionClasses
  double warp_instructions = 0;            // over the class's pipes and the call's launches
  double share = 0;                        // of all warp instructions executed (0-1)
  std::optional<double> per_kflop;         // per 1000 FLOPs of the cost model; nullopt without FLOPs
};

// A call's warp instructions by class.
struct InstructionMix {
  double warp_instructions = 0;                // all executed (smsp__inst_executed.sum)
  std::optional<double> per_kflop;             // per 1000 FLOPs of the cost model
  std::vector<InstructionClassCount> classes;  // kInstructionClasses' order; those with a counter collected
  // All minus the classes' sum, when positive: instructions none of the listed pipes counted (texture,
  // IPA). 0 when the classes sum to the total or more.
  double unclassified = 0;
  std::optional<double> unclassified_per_kflop;
  std::optional<double> warp_cycles_per_issue;  // the counters' (kMetricWarpsPerIssue), when collected
};

// The mix of one call from its counter totals (summed over its launches) and its FLOPs (the cost model's
// exact count; 0 or less: no per-FLOP figures). nullopt unless the total and at least one class's counter
// are there and the total is positive; a non-finite value counts as absent.
std::optional<InstructionMix> instruction_mix(const std::map<std::string, double>& counter_totals, double flops);
// A record's: its counters (status ok) and cost.flops.
std::optional<InstructionMix> instruction_mix(const Record&);

// The count of the class named `name` (InstructionClass::name); nullptr when its counters were not collected.
const InstructionClassCount* class_count(const InstructionMix&, std::string_view name);
// The `count` classes with the largest shares, largest first, leaving out those with none.
std::vector<InstructionClassCount> largest_classes(const InstructionMix&, size_t count);
// "FMA 31%, ALU 24%, load/store 18%": largest_classes with their shares, for evidence lines.
std::string largest_classes_text(const InstructionMix&, size_t count);

}  // namespace attnprof::core
