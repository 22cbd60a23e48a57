// The one catalogue of CUPTI metric names (as CUPTI spells them on GH100; every one is checked against
// the chip by measure::validate_metrics). Plain strings, no CUPTI include: the CUDA backend requests
// kProfilerMetrics, the diagnosis and the gate read the names from here, and tests/core/
// test_metric_names.cpp checks that every name the diagnosis reads is one the profiler requests (or,
// for the few in kDiagnosisMetricsNotRequested, one that other results files may hold).
// docs/measurement.md explains the metric set; docs/diagnosis.md what each name feeds.
#pragma once
#include <array>

namespace attnprof::core {

// Time and memory traffic: DRAM against the cost-model minimum, L2 traffic and hit rate.
inline constexpr const char* kMetricDuration = "gpu__time_duration.sum";
inline constexpr const char* kMetricDramRead = "dram__bytes_read.sum";
inline constexpr const char* kMetricDramWrite = "dram__bytes_write.sum";
inline constexpr const char* kMetricDramTotal = "dram__bytes.sum";
inline constexpr const char* kMetricL2Bytes = "lts__t_bytes.sum";
inline constexpr const char* kMetricL2HitRate = "lts__t_sector_hit_rate.pct";
// Tensor cores: instructions, pipe utilisation (HMMA and HGMMA), operations by source type.
inline constexpr const char* kMetricTensorInstHmma = "sm__inst_executed_pipe_tensor_op_hmma.sum";
inline constexpr const char* kMetricTensorPipeActive =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kMetricTensorOpsFp16 = "sm__ops_path_tensor_src_fp16.sum";
inline constexpr const char* kMetricTensorOpsBf16 = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
// FP32 work (softmax). Only one SASS-op metric per session: with ffma, fadd and fmul in one
// configuration CUPTI returned ffma's count for all three (the ffma value matched Nsight Compute;
// fadd and fmul did not), so the profiler asks for ffma alone and refuses a second one.
inline constexpr const char* kSassOpMetricPrefix = "sm__sass_thread_inst_executed_op_";
inline constexpr const char* kMetricFfma = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr const char* kMetricFadd = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr const char* kMetricFmul = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
// Occupancy and speed of light: compute, memory, and each memory level (HBM, L2, L1/shared), so that
// a memory-bound verdict names its level; the FMA pipe beside the tensor pipe.
inline constexpr const char* kMetricAchievedOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kMetricComputeSol = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricMemorySol = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricDramSol = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricL2Sol = "lts__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricL1Sol = "l1tex__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricFmaPipeActive = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active";
// Latency hiding: the share of cycles a scheduler issued, and where the resident warps were per issue
// cycle (the stall reasons sum, with "selected", to the warps resident per issue cycle).
inline constexpr const char* kMetricIssueActive = "smsp__issue_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kMetricWarpsPerIssue = "smsp__average_warps_active_per_issue_active.ratio";
inline constexpr const char* kMetricStallLongScoreboard =
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio";
inline constexpr const char* kMetricStallShortScoreboard =
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio";
inline constexpr const char* kMetricStallWait = "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio";
inline constexpr const char* kMetricStallBarrier = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio";
inline constexpr const char* kMetricStallMathPipe =
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio";
inline constexpr const char* kMetricStallGmma = "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio";
// Clocks and the DRAM ceiling as Nsight Compute computes it (peak bytes/cycle x cycles/s).
inline constexpr const char* kMetricSmClockPerSecond = "sm__cycles_elapsed.avg.per_second";
inline constexpr const char* kMetricDramPeakBytesPerCycle = "dram__bytes.sum.peak_sustained";
inline constexpr const char* kMetricDramClockPerSecond = "dram__cycles_elapsed.avg.per_second";
// The total warps a launch started: tells a batched pass's marker launches from the points' own
// (measure/counter_batch.hpp). Requested by the batched session only, and removed from what it reports.
inline constexpr const char* kMetricWarpsLaunched = "sm__warps_launched.sum";

// The instruction mix: warp instructions executed, all of them and by the pipe that executed each
// (core/instruction_mix.hpp groups the pipes into classes). Requested with the counters of a sweep with
// --stalls only (kInstructionMixMetrics), where they add one pass on GH100: 16 instead of 15, with or
// without the batched session's marker metric (CUPTI's host API, offline). Every one is a hardware counter: the SASS-op counters that would split
// load/store into shared and global (smsp__sass_inst_executed_op_shared, _global) or count branches
// (_op_branch) are instrumented like the ffma count above, and one of them beside ffma may read ffma's
// count or make ffma read its own, so none is requested.
inline constexpr const char* kMetricInstExecuted = "smsp__inst_executed.sum";
inline constexpr const char* kMetricInstPipeTensor = "smsp__inst_executed_pipe_tensor.sum";
inline constexpr const char* kMetricInstPipeFma = "smsp__inst_executed_pipe_fma.sum";
inline constexpr const char* kMetricInstPipeAlu = "smsp__inst_executed_pipe_alu.sum";
inline constexpr const char* kMetricInstPipeXu = "smsp__inst_executed_pipe_xu.sum";
inline constexpr const char* kMetricInstPipeLsu = "smsp__inst_executed_pipe_lsu.sum";
inline constexpr const char* kMetricInstPipeCbu = "smsp__inst_executed_pipe_cbu.sum";
inline constexpr const char* kMetricInstPipeAdu = "smsp__inst_executed_pipe_adu.sum";
inline constexpr const char* kMetricInstPipeUniform = "smsp__inst_executed_pipe_uniform.sum";
inline constexpr const char* kMetricInstPipeTma = "smsp__inst_executed_pipe_tma.sum";
inline constexpr const char* kMetricInstPipeFp64 = "smsp__inst_executed_pipe_fp64.sum";

// Name prefixes of the tensor-path operation and tensor-pipe instruction counters (the gate sums every
// ".sum" metric under one of them that both runs collected).
inline constexpr const char* kTensorOpsMetricPrefix = "sm__ops_path_tensor";
inline constexpr const char* kTensorInstMetricPrefix = "sm__inst_executed_pipe_tensor";

// The roofline and diagnosis metric set the CUDA backend requests for every point
// (measure::default_metrics), in the order it requests them.
inline constexpr std::array kProfilerMetrics = {
    kMetricDuration,
    kMetricDramRead,
    kMetricDramWrite,
    kMetricL2Bytes,
    kMetricL2HitRate,
    kMetricTensorInstHmma,
    kMetricTensorPipeActive,
    kMetricTensorOpsFp16,
    kMetricTensorOpsBf16,
    kMetricFfma,
    kMetricAchievedOccupancy,
    kMetricComputeSol,
    kMetricMemorySol,
    kMetricDramSol,
    kMetricL2Sol,
    kMetricL1Sol,
    kMetricFmaPipeActive,
    kMetricIssueActive,
    kMetricWarpsPerIssue,
    kMetricStallLongScoreboard,
    kMetricStallShortScoreboard,
    kMetricStallWait,
    kMetricStallBarrier,
    kMetricStallMathPipe,
    kMetricStallGmma,
    kMetricSmClockPerSecond,
    kMetricDramPeakBytesPerCycle,
    kMetricDramClockPerSecond,
};

// The instruction mix `sweep --stalls` adds to the counters' metric set (run/sweep_runner.cpp), in the
// order it requests them.
inline constexpr std::array kInstructionMixMetrics = {
    kMetricInstExecuted,
    kMetricInstPipeTensor,
    kMetricInstPipeFma,
    kMetricInstPipeAlu,
    kMetricInstPipeXu,
    kMetricInstPipeLsu,
    kMetricInstPipeCbu,
    kMetricInstPipeAdu,
    kMetricInstPipeUniform,
    kMetricInstPipeTma,
    kMetricInstPipeFp64,
};

// Every name the diagnosis (core/diagnosis*.cpp) reads from a record's counters by name. The instruction
// mix (kInstructionMixMetrics, requested with --stalls) it reads through core/instruction_mix.hpp.
inline constexpr std::array kDiagnosisMetrics = {
    kMetricDuration,
    kMetricDramRead,
    kMetricDramWrite,
    kMetricDramTotal,
    kMetricL2Bytes,
    kMetricL2HitRate,
    kMetricTensorInstHmma,
    kMetricTensorPipeActive,
    kMetricTensorOpsFp16,
    kMetricTensorOpsBf16,
    kMetricFfma,
    kMetricFadd,
    kMetricFmul,
    kMetricAchievedOccupancy,
    kMetricComputeSol,
    kMetricMemorySol,
    kMetricDramSol,
    kMetricL2Sol,
    kMetricL1Sol,
    kMetricFmaPipeActive,
    kMetricIssueActive,
    kMetricWarpsPerIssue,
    kMetricStallLongScoreboard,
    kMetricStallShortScoreboard,
    kMetricStallWait,
    kMetricStallBarrier,
    kMetricStallMathPipe,
    kMetricStallGmma,
};

// Warp-state (PC) sampling's stall reason names begin with this (CUPTI's counter names for the
// samples); core::stall_reason_name drops it.
inline constexpr const char* kPcSamplingStallPrefix = "smsp__pcsamp_warps_issue_stalled_";

// Names the diagnosis reads that the profiler does not request: fadd and fmul, which results files
// written before the one-SASS-op rule hold; the combined DRAM bytes, its fallback for a file without the
// read/write split (one written by another tool, or one whose --metrics added it).
inline constexpr std::array kDiagnosisMetricsNotRequested = {kMetricDramTotal, kMetricFadd, kMetricFmul};

}  // namespace attnprof::core
