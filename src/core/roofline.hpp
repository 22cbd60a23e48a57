// Roofline core: ceilings (datasheet table for common NVIDIA GPUs, measured values when present),
// ridge point, attainable throughput, bound classification. The table's figures and their sources are
// in docs/roofline.md: they are datasheet leads, not measurements.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/results.hpp"

namespace attnprof::core {

struct GpuDatasheet {
  std::string key;                 // "h200", "h100-sxm", "a100-80gb", "b200", ...
  std::string name;                // "NVIDIA H200"
  double hbm_bytes_per_s = 0;
  double dense_fp16_flops_per_s = 0, dense_bf16_flops_per_s = 0, fp32_flops_per_s = 0;
  double dense_fp8_flops_per_s = 0;  // E4M3 tensor cores; 0 on parts without them (before sm_89)
};

const std::vector<GpuDatasheet>& datasheets();
// Looks up by key ("h200") or by a device name as CUDA reports it ("NVIDIA H200"); nullopt if unknown.
std::optional<GpuDatasheet> find_datasheet(std::string_view key_or_name);
Ceilings datasheet_ceilings(const GpuDatasheet&);

// The compute roof a point of `dtype` is placed against [FLOP/s]: the one choice of a roof by dtype that
// every stage makes (the functions below, the diagnosis, the reports, explain, the sweep's estimate).
// fp16, bf16 and fp32 take their own figure, else bf16's, else fp16's; fp8_e4m3 takes its own only:
// the tensor cores run fp8 at twice the 16-bit rate, so a 16-bit figure would halve its roof. 0 when
// there is none (missing_roof says why); the functions below then have no meaningful answer, and
// their callers check peak_flops_for first.
double peak_flops_for(const Ceilings&, DType);
// Why the ceilings hold no roof for the dtype, one line ("no fp8_e4m3 roof: ..."); empty when
// peak_flops_for(c, dtype) > 0.
std::string missing_roof(const Ceilings&, DType);
double ridge_point(const Ceilings&, DType);          // FLOP/byte where the roofs meet
double attainable_flops(const Ceilings&, DType, double intensity);  // min(peak, bw * intensity)

// The compute roofs of a point that ran at SM clock `sm_mhz`: every dtype with a measured per-MHz
// figure gets flops_per_s_per_mhz x sm_mhz, never above its datasheet figure; bandwidth is unchanged
// (HBM and L2 do not run on the SM clock). Unchanged when sm_mhz <= 0 or nothing per MHz was measured.
Ceilings ceilings_at_clock(const Ceilings&, double sm_mhz);
// peak_flops_for(ceilings_at_clock(c, sm_mhz), dtype).
double peak_flops_at_clock(const Ceilings&, DType, double sm_mhz);

// min(datasheet peak, datasheet bandwidth x intensity) for the dtype (its figure as peak_flops_for
// picks it); 0 when the ceilings carry no datasheet figure for it.
double datasheet_attainable_flops(const Ceilings&, DType, double intensity);

// What the ceiling probes measured on one device (src/measure/cuda/ceilings.cu); 0 = not measured.
// Each compute probe is a ProbeRate (core/results.hpp): its FLOP/s, its clock, or why it did not run.
struct MeasuredCeilings {
  double hbm_bytes_per_s = 0;         // the best of the HBM probes (read, copy, fill; sizes, grids)
  std::string hbm_probe;              // which one reached it: "read 2 GiB, 1056 x 512", ...
  double copy_bytes_per_s = 0;        // the float4 copy alone: (read + written) / time
  double copy_buffer_bytes = 0;       // size of each of its two buffers
  double l2_bytes_per_s = 0;          // read from an L2-resident buffer
  ProbeRate mma_fp16, mma_bf16;       // back-to-back mma.sync m16n8k16
  ProbeRate gemm_fp16, gemm_bf16;     // a large cuBLAS GEMM (wgmma on Hopper)
  ProbeRate mma_fp8_e4m3;             // back-to-back mma.sync m16n8k32 E4M3 (sm_89 and later)
  ProbeRate gemm_fp8_e4m3;            // a large cuBLASLt E4M3 GEMM
  ProbeRate fma_fp32;
  double launch_latency_us = 0;       // GPU time per launch of back-to-back empty kernels
};

// Measured values where present, the datasheet's kept beside them (source "measured+datasheet", or
// "measured" without a datasheet entry). The fp16 and bf16 roofs share one figure per MHz, the best of
// the four 16-bit tensor probes: the tensor cores issue both at one rate (every datasheet lists them
// equal), so a gap between the probes is clock and power, not arithmetic. The fp8_e4m3 roof is its
// own, the better per MHz of its two probes, checked against its own datasheet figure; with neither
// probe run (a GPU without fp8 tensor cores) there is none unless the datasheet has one. A probe more
// than 1.25x its datasheet figure measured nothing real (a binary built for an older architecture
// runs an empty probe) and is rejected, the source saying so. Every compute probe is kept in
// compute_probes.
Ceilings merge_with_datasheet(const MeasuredCeilings&, const std::string& device_name);

enum class Bound { memory, compute };
Bound bound_of(const Ceilings&, DType, double intensity);  // memory when intensity < ridge point
std::string_view to_string(Bound);

// The roofline's lower bound on the time of a call doing `flops` and moving `bytes`:
// max(flops / peak, bytes / bandwidth) = flops / attainable_flops(flops / bytes).  [s]
double roofline_floor_s(const Ceilings&, DType, double flops, double bytes);

}  // namespace attnprof::core
