// Every threshold the measurement, the diagnosis and the gate judge by, each with the reason for its
// value. docs/diagnosis.md ("Every threshold, and why") names each one with its value and the
// measurement behind it; tests/core/test_thresholds.cpp fails when a constant here and its row there
// disagree, or a constant has no row.
#pragma once

namespace attnprof::core {

// ---- Clock -------------------------------------------------------------------------------------------
// A sample is throttled when its batch's SM clock, read under load, is under this share of the maximum:
// the power manager's ordinary steps stay within 16% of the maximum on the H200 (fused kernels ran at
// 84-93% of 1980 MHz), so a clock more than a quarter down is well outside them. The timer counts
// such samples (clock.throttled_samples), the diagnosis flags the point `throttled`, and the gate takes
// them out before it decides.
inline constexpr double kThrottledClockFraction = 0.75;
// Below this share of the maximum clock (the median under load) the evidence says what clock the point
// ran at: ceilings quoted at the maximum clock are that much out of reach. Not a flag.
inline constexpr double kClockNoteBelowFraction = 0.95;
// A noisy time-budgeted point whose lowest clock batch sits this far under its median clock has the dip
// named as the cause: on the H200 the power manager lowers the clock by about 8% some 0.8 s into a
// heavy point's load (docs/measurement.md); smaller moves are its usual steps.
inline constexpr double kClockDipFraction = 0.04;

// A difference between the baseline's and the candidate's median SM clock under load at least this
// large is named in the gate's reason for the point; it never changes the verdict (a clock difference
// alone is not a regression, but whoever reads two runs' times wants to know of it).
inline constexpr double kGateClockNoteChange = 0.01;

// ---- Timing -------------------------------------------------------------------------------------------
// Calls whose probe call takes under this are timed from a CUDA graph of many calls, divided: one
// event-timed launch that short carries the launch gap (about 2 us on the H200) in its GPU time.
inline constexpr double kGraphTimingBelowUs = 20;

// ---- Noise: the diagnosis' flag and the gate's ceiling -----------------------------------------------
// The two spreads differ because they decide different things. The diagnosis' `noisy` flag warns the
// reader of one run: cold-L2 GPU timings repeat within 1-2%, so 5% means interference or clock changes.
// The gate's ceiling raises no flag: above it a point is judged on the whole bootstrap interval of its
// median ratio, a rule that with 30 samples per side misses most 5% slowdowns at 3% noise
// (docs/ci-gate.md); so the gate keeps the sharper test and point estimate up to twice the diagnosis'
// spread, and turns to the interval only where the spread is that wide.
inline constexpr double kNoisyRelStddev = 0.05;     // diagnosis: latency stddev / mean over this is noisy
inline constexpr double kGateMaxRelStddev = 0.10;   // gate: --max-rel-stddev's default
// A point whose sampling spent its whole time budget with the P50's 95% CI half-width above this share
// of the P50 (core::median_ci) is noisy too: the 1% to which the A/A target asks P50s to repeat.
inline constexpr double kNoisyP50CiHalfWidth = 0.01;
// The gate judges a point with throttled samples on its ratio's interval widened for them (the
// slowest that many of a side taken away); past this share of a side, the throttled samples are the
// point's typical state, not its exceptions, and only a slowdown that clears the widened interval is
// decided (`same` and `faster` read `noisy`).
inline constexpr double kGateThrottledShareMax = 0.25;

// ---- Gate: defaults of `attnprof compare` -----------------------------------------------------------
// The false discovery rate over the compared points (Benjamini-Hochberg): at 1%, an A/A comparison of
// a few hundred points fails about once in a hundred runs.
inline constexpr double kGateAlpha = 0.01;
// The smallest slowdown worth failing a CI run for: median ratio over 1 + this. Cold-L2 P50s of one
// build repeat within 1-2% on the H200, so 3% is the first step above a run's own spread.
inline constexpr double kGateSlowdownThreshold = 0.03;
// Coverage of the bootstrap interval of each point's median ratio.
inline constexpr double kGateConfidence = 0.95;
// The counters gate (--counters), each a fraction of the baseline's value: the same work moves the
// same DRAM bytes and tensor operations, so 2% more is the kernel doing more; achieved occupancy moves
// with the clock and the other work on the GPU, so it fails only from a 5% drop.
inline constexpr double kGateDramBytesIncrease = 0.02;
inline constexpr double kGateTensorOpsIncrease = 0.02;
inline constexpr double kGateOccupancyDecrease = 0.05;

// ---- Diagnosis: speed-of-light margins (Nsight Compute's rules) --------------------------------------
inline constexpr double kSolLatencyBelowPct = 60;     // a unit under this is not busy (both under: latency)
inline constexpr double kSolDominanceMarginPct = 10;  // one throughput this far above another leads
inline constexpr double kSolSaturatedPct = 80;        // a SOL % over this: that unit is saturated
// Compute-bound whatever the SOL counters read: achieved FLOP/s at least this share of the roof scaled
// to the SM clock the point ran at (three quarters of the roof leaves at most a third to gain from
// anything but fewer FLOPs; FlashAttention-3 reaches about 75% of the H100's dense peak).
inline constexpr double kComputeRoofSharePct = 75;
// Files without per-level counters: DRAM (from its bytes / bandwidth) within one dominance margin of the
// combined memory throughput accounts for it.
inline constexpr double kDramAccountsWithinPct = 10;
// Every DRAM byte passes L2 twice (the fill and the read), so lts__throughput edges out dram__throughput on
// any plain HBM stream. L2 is the binding level only when its own traffic shows re-reads: L2 bytes
// (lts__t_bytes) at least this multiple of the DRAM bytes (a stream moves about 1x; 2.5x leaves 1.5x
// of the DRAM bytes served from L2 alone) ...
inline constexpr double kL2RereadBytesRatio = 2.5;
// ... and, where the hit rate was collected, at least this share of the L2 sectors hitting: a stream
// hits almost never (cuDNN decode on the H200: 0.1%), K/V re-read by many CTAs mostly hits. The
// "K/V are re-read from L2" next step needs it too.
inline constexpr double kL2RereadHitRatePct = 50;

// ---- Diagnosis: launch, host and latency -------------------------------------------------------------
// GPU time per launch under 2x an empty kernel's: the fixed cost of launching is half the time or more.
inline constexpr double kLaunchBoundLatencyMultiple = 2;
// The same without a measured launch latency: a launch costs a few microseconds of fixed GPU time.
inline constexpr double kLaunchBoundUsPerLaunch = 10;
// Host enqueue time over the GPU time: calls back to back would leave the GPU waiting.
inline constexpr double kHostBoundOverheadFactor = 1;
// Occupancy-bound: theoretical occupancy under this (attention kernels reach full throughput at 12-25%
// occupancy when compute-bound, so low occupancy alone is no fault), and ...
inline constexpr double kOccupancyBoundBelowPct = 50;
inline constexpr double kIssueActiveBusyPct = 60;      // ... issue slots used under this (the SOL "busy"), and ...
inline constexpr double kLatencyStallShareFrom = 0.5;  // ... dependency stalls at least this share of residency
// A latency- or occupancy-bound kernel whose mma.sync pipe runs at least this share of cycles: overlap
// of softmax and MMAs (FlashAttention-3 ping-pong) is the lever.
inline constexpr double kTensorPipeOverlapFromPct = 30;
// Tensor ops per tensor instruction above this: warpgroup MMAs (mma.sync m16n8k16 is 4096).
inline constexpr double kWgmmaOpsPerInstructionAbove = 8192;

// ---- Diagnosis: grid shape and traffic ---------------------------------------------------------------
inline constexpr double kTailWasteShare = 0.2;      // idle share of the launched wave slots / CTA time
inline constexpr double kTailTileFillBelow = 0.5;   // last query tile under half full: "mostly empty"
// Measured DRAM bytes over this multiple of the cost-model minimum, reads and writes each against their
// own minimum: FlashAttention-2 moves within a few % of it; 30% leaves room for LSE, partial sectors and
// L2 write-back and still catches re-reads.
inline constexpr double kExcessTrafficRatio = 1.3;
// A direction (reads or writes) is judged for excess traffic only from this many counted bytes [bytes]:
// below it DRAM counts are noise (two identical kernels moving 0.4 MB differ by 36% on the H200; the
// counters carry a fixed offset of refreshes and page-table walks of about 0.1 MB per call).
inline constexpr double kExcessTrafficMinBytes = 4e6;
inline constexpr double kSpShareExcess = 0.5;       // S/P bytes / all bytes (materialised)

// ---- Diagnosis: borderline verdicts -----------------------------------------------------------------
// A verdict whose deciding number sits this close to its threshold, and which the other side of that
// threshold would change, carries the `borderline` flag and names both readings. The bands are the
// run-to-run repeatability of the numbers: SOL and pipe percentages, occupancy and roof shares repeat
// within 1-2 points between runs on the H200 ...
inline constexpr double kBorderlineSolPoints = 3;
// ... the dependency-stall share within 0.02 (a bf16/fp16 twin read 0.499 and 0.501), as does a decode
// call's fixed-time share ...
inline constexpr double kBorderlineShare = 0.03;
// ... and a P50 against a launch limit within 5% of the limit (P50s repeat within 1-2%; the launch
// latency it is held against within a few %).
inline constexpr double kBorderlineLaunchFraction = 0.05;

// ---- Diagnosis: decode points ------------------------------------------------------------------------
// Short call: the HBM ceiling streams the call's minimum bytes in under this many launch latencies per
// kernel launch of the call (a decode call's fixed cost is 2.5-6.5 launch latencies per launch on the
// H200)...
inline constexpr double kDecodeShortCallLaunchLatencies = 10;
// ... and at least this share of the P50 is time beyond that stream, that time itself within the same
// limit (more than it is not fixed cost).
inline constexpr double kDecodeFixedTimeShareFrom = 1.0 / 3;
// Without a measured launch latency (context.ceilings.launch_latency_us): the launch-bound rule's
// fallback per launch over its multiple, 5 us.
inline constexpr double kDecodeAssumedLaunchLatencyUs = kLaunchBoundUsPerLaunch / kLaunchBoundLatencyMultiple;
// DRAM bytes over this multiple of the minimum: the KV cache is read more than once (the decode kernel
// reads it 1.01-1.04x its minimum on the H200 at 0.5 GB and more).
inline constexpr double kDecodeReadFactorAbove = 1.05;
// Counted FLOPs over this multiple of the cost model's: the MMAs run on padded query rows.
inline constexpr double kDecodePaddedFlopsAbove = 2;
// A memory-bound decode point is at the roof from this share of the HBM ceiling: the decode kernel and
// cuDNN stream KV caches of 1 GB and more at 97-102% of it on the H200 (pct_of_hbm_ceiling in
// reports/h200-decode-pytorch), so under 90% a tenth of the call or more is the kernel's own (the
// quantized cache at batch 64 and 8k keys in reports/h200-kv-quant: 83-86%, 14-17% of its P50 beyond the
// stream).
inline constexpr double kDecodeAtRoofPct = 90;

}  // namespace attnprof::core
