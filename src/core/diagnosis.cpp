#include "core/diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/roofline.hpp"

namespace attnprof::core {

using nlohmann::json;

namespace {

// A value that may be unknown: JSON null when absent or not finite.
json maybe(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

std::optional<double> counter(const Record& r, const char* name) {
  if (r.counters.status != "ok") return std::nullopt;
  auto it = r.counters.total.find(name);
  if (it == r.counters.total.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

std::string giga(double v) { return fmt::format("{:.3g} G", v / 1e9); }
std::string tera_flops(double v) { return fmt::format("{:.3g} TFLOP/s", v / 1e12); }
std::string tera_bytes(double v) { return fmt::format("{:.3g} TB/s", v / 1e12); }

// Ceilings to place a point against: the results' own, else the datasheet found by device name; the
// compute roofs scaled to the SM clock the point ran at where they were measured per MHz
// (core::ceilings_at_clock).
struct Roof {
  bool known = false;
  Ceilings ceilings;
  double bw_bytes_per_s = 0, peak_flops_per_s = 0, ridge_flop_per_byte = 0;
  std::string source;
};

Roof roof_for(const Context& ctx, DType dtype, double sm_mhz) {
  Roof roof;
  roof.ceilings = ctx.ceilings;
  roof.source = ctx.ceilings.source.empty() ? "results file" : ctx.ceilings.source;
  auto usable = [](const Ceilings& c) {
    return c.peak_bw_bytes_per_s > 0 && !c.peak_flops_per_s.empty();
  };
  if (!usable(roof.ceilings)) {
    if (auto sheet = find_datasheet(ctx.device.name)) {
      roof.ceilings = datasheet_ceilings(*sheet);
      roof.source = "datasheet (" + sheet->key + ")";
    }
  }
  if (!usable(roof.ceilings)) return roof;
  roof.ceilings = ceilings_at_clock(roof.ceilings, sm_mhz);
  roof.bw_bytes_per_s = roof.ceilings.peak_bw_bytes_per_s;
  roof.peak_flops_per_s = peak_flops_for(roof.ceilings, dtype);
  if (!(roof.peak_flops_per_s > 0)) return roof;
  roof.ridge_flop_per_byte = ridge_point(roof.ceilings, dtype);
  roof.known = true;
  return roof;
}

// FLOPs the kernel executed, from counters when they cover the dtype's main math.
struct Amount {
  double value = 0;
  std::string source;
  bool measured = false;
};

Amount measured_flops(const Record& r) {
  const auto ffma = counter(r, kMetricFfma);
  const double fp32_flops = ffma ? 2 * *ffma + counter(r, kMetricFadd).value_or(0) +
                                       counter(r, kMetricFmul).value_or(0)
                                 : 0;
  if (r.shape.dtype == DType::fp32) {
    if (ffma && fp32_flops > 0) return {fp32_flops, "FP32 instruction counters", true};
  } else {
    const auto bf16 = counter(r, kMetricTensorOpsBf16);
    const auto fp16 = counter(r, kMetricTensorOpsFp16);
    const double tensor = bf16.value_or(0) + fp16.value_or(0);
    if (tensor > 0) {
      return {tensor + fp32_flops,
              fp32_flops > 0 ? "tensor-op + FP32 counters" : "tensor-op counters", true};
    }
  }
  return {r.cost.flops, "cost model", false};
}

Amount measured_bytes(const Record& r) {
  const auto rd = counter(r, kMetricDramRead), wr = counter(r, kMetricDramWrite);
  if (rd && wr) return {*rd + *wr, "DRAM counters", true};
  if (auto total = counter(r, kMetricDramTotal)) return {*total, "DRAM counters", true};
  return {r.cost.min_bytes_read + r.cost.min_bytes_write, "cost-model minimum", false};
}

std::string pct(double v) { return fmt::format("{:.0f}%", v); }

// 3 significant digits, but never an exponent for the values a reader meets here (17250 us).
std::string human(double v) {
  return std::abs(v) >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}

// The speed-of-light verdict for one pair of throughput percentages (call or launch): latency-bound
// when neither unit is busy, else the unit clearly ahead, else memory when the two are level.
std::string_view sol_verdict(double compute_pct, double memory_pct) {
  if (compute_pct < kSolLatencyBelowPct && memory_pct < kSolLatencyBelowPct) return kVerdictLatency;
  if (compute_pct - memory_pct >= kSolDominanceMarginPct) return kVerdictCompute;
  return kVerdictMemory;
}

std::optional<double> metric_of(const KernelCounters& k, const char* name) {
  auto it = k.metrics.find(name);
  if (it == k.metrics.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

// Per-launch speed of light for a call of several launches (the reference's GEMM, softmax, GEMM):
// each launch's share of GPU time, DRAM bytes and bandwidth, its own verdict. The call-level
// percentages are time-weighted averages of these, so a launch that dominates the time dominates
// the verdict; this says which launch that is and what bounds it. Empty for single-launch calls.
json launch_breakdown(const Record& r, std::vector<std::string>& evidence, json& m) {
  m["dominant_launch"] = nullptr;
  m["dominant_launch_time_share"] = nullptr;
  const auto& launches = r.counters.per_kernel;
  if (r.counters.status != "ok" || launches.size() < 2) return json::array();
  double total_ns = 0;
  for (const auto& k : launches) total_ns += metric_of(k, kMetricDuration).value_or(0);
  if (!(total_ns > 0)) return json::array();
  const bool stage_names = launches.size() == r.stages.size();
  json out = json::array();
  std::string line = "per launch:";
  size_t dominant = 0;
  double dominant_ns = -1;
  for (size_t i = 0; i < launches.size(); ++i) {
    const auto& k = launches[i];
    const double ns = metric_of(k, kMetricDuration).value_or(0);
    const auto rd = metric_of(k, kMetricDramRead), wr = metric_of(k, kMetricDramWrite);
    const auto c = metric_of(k, kMetricComputeSol), mem = metric_of(k, kMetricMemorySol);
    const std::string name = stage_names ? r.stages[i].name : k.kernel;
    json entry = {{"name", name},
                  {"kernel", k.kernel},
                  {"time_share", ns / total_ns},
                  {"duration_us", ns / 1e3},
                  {"dram_bytes", rd && wr ? json(*rd + *wr) : json(nullptr)},
                  {"dram_bytes_per_s", rd && wr && ns > 0 ? json((*rd + *wr) / (ns * 1e-9)) : json(nullptr)},
                  {"compute_sol_pct", maybe(c)},
                  {"memory_sol_pct", maybe(mem)},
                  {"verdict", c && mem ? json(std::string(sol_verdict(*c, *mem))) : json(nullptr)}};
    line += fmt::format(" {} {:.0f}% of GPU time", name, ns / total_ns * 100);
    if (c && mem)
      line += fmt::format(" {} (compute {:.0f}%, memory {:.0f}%", sol_verdict(*c, *mem), *c, *mem);
    if (rd && wr && ns > 0) line += (c && mem ? ", " : " (") + tera_bytes((*rd + *wr) / (ns * 1e-9));
    if ((c && mem) || (rd && wr && ns > 0)) line += ")";
    line += ";";
    if (ns > dominant_ns) {
      dominant_ns = ns;
      dominant = i;
    }
    out.push_back(std::move(entry));
  }
  line.back() = '.';
  evidence.push_back(line);
  m["dominant_launch"] = out[dominant]["name"];
  m["dominant_launch_time_share"] = out[dominant]["time_share"];
  return out;
}

}  // namespace

bool is_materialized(const Record& r) { return r.cost.sp_bytes > 0; }

json diagnose(const Record& r, const Context& ctx) {
  std::vector<std::string> flags, evidence;
  std::vector<std::string> next_steps;
  json m = json::object();
  auto flag = [&](std::string_view f) { flags.emplace_back(f); };

  const double p50_us = r.latency.p50_us;
  const bool materialized = is_materialized(r);
  const bool counters_ok = r.counters.status == "ok";
  const double min_bytes = r.cost.min_bytes_read + r.cost.min_bytes_write;
  const Amount flops = measured_flops(r);
  const Amount bytes = measured_bytes(r);
  const Roof roof = roof_for(ctx, r.shape.dtype, r.clock.sm_mhz_median);
  const std::string dtype{to_string(r.shape.dtype)};

  m["p50_us"] = p50_us;
  m["p99_us"] = r.latency.p99_us;
  m["launch_overhead_us"] = r.launch_overhead_us;
  m["flops"] = flops.value;
  m["flops_source"] = flops.source;
  m["dram_bytes"] = bytes.value;
  m["bytes_source"] = bytes.source;
  m["min_bytes"] = min_bytes;
  // A counted FLOP total far from the cost model's means the counters count something else (or
  // the kernel does redundant work, e.g. masked causal tiles): say it, the intensity rests on it.
  m["flops_vs_cost"] = flops.measured && r.cost.flops > 0 ? json(flops.value / r.cost.flops)
                                                          : json(nullptr);
  if (flops.measured && r.cost.flops > 0)
    evidence.push_back(fmt::format("counted {}FLOP ({}) = {:.2f}x the cost model's {}FLOP",
                                   giga(flops.value), flops.source, flops.value / r.cost.flops,
                                   giga(r.cost.flops)));
  m["sp_bytes"] = r.cost.sp_bytes;
  m["materialized"] = materialized;

  // Counters first: what the numbers below rest on.
  if (!counters_ok) {
    flag(kFlagCountersUnavailable);
    std::string why = r.backend == "cpu" ? "CPU backend: no hardware counters"
                                         : fmt::format("counters {}", r.counters.status);
    // The CPU backend's reason is that same sentence: once is enough.
    if (!r.counters.reason.empty() && r.counters.reason != why) why += ": " + r.counters.reason;
    evidence.push_back(why + "; FLOPs and DRAM bytes come from the cost model");
  }

  const double intensity = bytes.value > 0 ? flops.value / bytes.value : 0;
  m["intensity_flop_per_byte"] = maybe(intensity > 0 ? std::optional(intensity) : std::nullopt);

  std::optional<double> achieved_flops, achieved_bw, compute_sol, memory_sol;
  if (p50_us > 0) {
    achieved_flops = flops.value / (p50_us * 1e-6);
    achieved_bw = bytes.value / (p50_us * 1e-6);
  }
  m["achieved_flops_per_s"] = maybe(achieved_flops);
  m["achieved_bytes_per_s"] = maybe(achieved_bw);
  m["roof_source"] = roof.known ? json(roof.source) : json(nullptr);
  m["roof_sm_mhz"] = roof.known && r.clock.sm_mhz_median > 0 && !roof.ceilings.flops_per_s_per_mhz.empty()
                         ? json(r.clock.sm_mhz_median)
                         : json(nullptr);
  m["pct_of_datasheet_roof"] = nullptr;
  m["peak_flops_per_s"] = roof.known ? json(roof.peak_flops_per_s) : json(nullptr);
  m["peak_bw_bytes_per_s"] = roof.known ? json(roof.bw_bytes_per_s) : json(nullptr);
  m["ridge_flop_per_byte"] = roof.known ? json(roof.ridge_flop_per_byte) : json(nullptr);

  std::optional<Bound> roof_bound;
  std::optional<double> roof_pct;  // achieved / attainable FLOP/s at this intensity [%]
  if (roof.known && intensity > 0) {
    const double attainable = attainable_flops(roof.ceilings, r.shape.dtype, intensity);
    roof_bound = bound_of(roof.ceilings, r.shape.dtype, intensity);
    m["attainable_flops_per_s"] = attainable;
    m["roof_bound"] = std::string(to_string(*roof_bound));
    std::string line = fmt::format(
        "intensity {} FLOP/B ({} / {}) is {} the {} ridge {} FLOP/B; the roof there is {}",
        human(intensity), flops.source, bytes.source,
        *roof_bound == Bound::memory ? "below" : "above", dtype, human(roof.ridge_flop_per_byte),
        tera_flops(attainable));
    if (achieved_flops && attainable > 0) {
      roof_pct = *achieved_flops / attainable * 100;
      m["pct_of_roof"] = *roof_pct;
      const double datasheet = datasheet_attainable_flops(roof.ceilings, r.shape.dtype, intensity);
      if (datasheet > 0) m["pct_of_datasheet_roof"] = *achieved_flops / datasheet * 100;
      line += fmt::format(", it reaches {} = {:.0f}% of it", tera_flops(*achieved_flops), *roof_pct);
    }
    evidence.push_back(line + fmt::format(" (ceilings: {}{})", roof.source,
                                          m["roof_sm_mhz"].is_number()
                                              ? fmt::format("; compute roof at the point's {:.0f} MHz SM clock",
                                                            r.clock.sm_mhz_median)
                                              : std::string()));
  } else {
    m["attainable_flops_per_s"] = nullptr;
    m["roof_bound"] = nullptr;
    m["pct_of_roof"] = nullptr;
    if (!roof.known)
      evidence.push_back("no compute/bandwidth ceilings in the results (and no datasheet for '" +
                         ctx.device.name + "'): the roofline position is unknown");
  }

  // Speed of light: Nsight Compute's throughput percentages, or the same ratio from the roofline.
  std::string sol_source;
  if (auto c = counter(r, kMetricComputeSol)) compute_sol = *c;
  if (auto mm = counter(r, kMetricMemorySol)) memory_sol = *mm;
  if (compute_sol && memory_sol) {
    sol_source = "counters";
  } else if (roof.known && achieved_flops) {
    compute_sol = *achieved_flops / roof.peak_flops_per_s * 100;
    memory_sol = *achieved_bw / roof.bw_bytes_per_s * 100;
    sol_source = bytes.measured ? "derived from FLOP/s and DRAM bytes vs the ceilings"
                                : "derived from the cost model vs the ceilings (memory % is a lower "
                                  "bound)";
  } else {
    compute_sol.reset();
    memory_sol.reset();
  }
  m["compute_sol_pct"] = maybe(compute_sol);
  m["memory_sol_pct"] = maybe(memory_sol);
  m["sol_source"] = sol_source.empty() ? json(nullptr) : json(sol_source);
  if (compute_sol && memory_sol)
    evidence.push_back(fmt::format("speed of light: compute {:.0f}%, memory {:.0f}% ({})",
                                   *compute_sol, *memory_sol, sol_source));

  json launches = launch_breakdown(r, evidence, m);

  const Occupancy& occ = r.occupancy;
  std::optional<double> achieved_occ = occ.achieved_pct;
  if (auto a = counter(r, kMetricAchievedOccupancy)) achieved_occ = *a;
  m["theoretical_occupancy_pct"] = occ.theoretical_pct > 0 ? json(occ.theoretical_pct) : json(nullptr);
  m["achieved_occupancy_pct"] = maybe(achieved_occ);
  m["occupancy_limiter"] = occ.limiter.empty() ? json(nullptr) : json(occ.limiter);
  m["l2_hit_rate_pct"] = maybe(counter(r, kMetricL2HitRate));
  // How busy the tensor pipe is: for a fused kernel the share of cycles its MMAs run, the rest being
  // softmax, loads and waits that the MMAs are serialised with.
  const auto tensor_pipe = counter(r, kMetricTensorPipeActive);
  m["tensor_pipe_active_pct"] = maybe(tensor_pipe);
  if (tensor_pipe && !materialized && *tensor_pipe > 0)
    evidence.push_back(fmt::format("tensor pipe active {:.0f}% of cycles", *tensor_pipe));
  // Tensor operations per tensor instruction tell the MMA shape: 4096 for mma.sync m16n8k16, ten times
  // that and more for Hopper's warpgroup MMA (wgmma), whose kernels run one warp-specialised CTA per SM.
  const auto tensor_inst = counter(r, kMetricTensorInstHmma);
  const double ops_per_inst = flops.measured && tensor_inst && *tensor_inst > 0 ? flops.value / *tensor_inst : 0;
  const bool on_wgmma = ops_per_inst > kWgmmaOpsPerInstructionAbove;
  m["tensor_ops_per_instruction"] = ops_per_inst > 0 ? json(ops_per_inst) : json(nullptr);

  // Verdict.
  std::string verdict;
  // Launch-bound is a GPU-time finding: the call's launches are so short that their fixed cost
  // (launch latency, ramp-up, drain) is a large part of the GPU time. The host's enqueue time is
  // another matter (host-bound, below): it leaves the GPU idle between calls, not within one.
  const int64_t launch_count =
      std::max<int64_t>({1, static_cast<int64_t>(r.launches.size()), static_cast<int64_t>(r.stages.size())});
  m["launches_per_call"] = launch_count;
  const bool launch_bound = p50_us > 0 && p50_us < kLaunchBoundUsPerLaunch * static_cast<double>(launch_count);
  if (p50_us > 0 && r.launch_overhead_us > kHostBoundOverheadFactor * p50_us) {
    flag(kFlagHostBound);
    evidence.push_back(fmt::format(
        "enqueueing one call takes {:.3g} us on the host, longer than its {:.3g} us on the GPU: calls back to "
        "back would leave the GPU waiting for the host (the GPU time above excludes that wait)",
        r.launch_overhead_us, p50_us));
    next_steps.push_back("capture the calls in a CUDA graph, or put more work in each call, so the host keeps ahead");
  }
  m["saturated"] = nullptr;
  if (p50_us <= 0) {
    verdict = kVerdictUnknown;
    evidence.push_back("no latency samples: nothing to place against the ceilings");
    next_steps.push_back("time the point (it has no P50) before diagnosing it");
  } else if (launch_bound) {
    verdict = kVerdictLaunch;
    evidence.push_back(fmt::format(
        "P50 {:.3g} us over {} kernel launch{}: under {:.0f} us of GPU time per launch, the fixed cost of "
        "each launch is a large part of the call",
        p50_us, launch_count, launch_count == 1 ? "" : "es", kLaunchBoundUsPerLaunch));
    next_steps.push_back(
        "the call takes about as long as launching it: put more work in one call (more heads, "
        "batch or sequence) or replay calls from a CUDA graph; kernel tuning will not show here");
  } else if (!compute_sol || !memory_sol) {
    verdict = kVerdictUnknown;
    next_steps.push_back(
        "record ceilings (a GPU run measures them; a known device name selects its datasheet) to "
        "place the point on the roofline");
  } else {
    const double c = *compute_sol, mem = *memory_sol;
    if (c > kSolSaturatedPct || mem > kSolSaturatedPct) {
      const bool compute_hi = c >= mem;
      m["saturated"] = compute_hi ? "compute" : "memory";
      evidence.push_back(fmt::format("{} throughput {:.0f}% is over {:.0f}%: saturated",
                                     compute_hi ? "compute" : "memory", compute_hi ? c : mem,
                                     kSolSaturatedPct));
    }
    if (c < kSolLatencyBelowPct && mem < kSolLatencyBelowPct && roof_pct && *roof_pct >= kNearRoofPct &&
        roof_bound) {
      // The roofline has the last word when the point sits close to it: the speed-of-light units read
      // low for a kernel whose time is spread over several pipes (tensor, FP32, MUFU), yet it reaches
      // most of what the roof allows.
      verdict = *roof_bound == Bound::compute ? kVerdictCompute : kVerdictMemory;
      evidence.push_back(fmt::format(
          "compute {:.0f}% and memory {:.0f}% are under {:.0f}%, but the point reaches {:.0f}% of its "
          "roof (at least {:.0f}%: near the roof): {}",
          c, mem, kSolLatencyBelowPct, *roof_pct, kNearRoofPct, verdict));
    } else if (c < kSolLatencyBelowPct && mem < kSolLatencyBelowPct) {
      const bool occupancy_limited = !occ.limiter.empty() && occ.theoretical_pct > 0 &&
                                     occ.theoretical_pct < kOccupancyBoundBelowPct;
      verdict = occupancy_limited ? kVerdictOccupancy : kVerdictLatency;
      evidence.push_back(fmt::format(
          "compute {:.0f}% and memory {:.0f}% are both under {:.0f}%: neither unit is busy", c, mem,
          kSolLatencyBelowPct));
      if (occupancy_limited) {
        evidence.push_back(fmt::format(
            "theoretical occupancy {:.0f}% (limited by {}, {} blocks/SM of {} threads, {} "
            "registers/thread, {} B shared memory/block){}",
            occ.theoretical_pct, occ.limiter, occ.blocks_per_sm, occ.threads_per_block,
            occ.registers_per_thread, occ.smem_bytes_per_block,
            achieved_occ ? fmt::format(", achieved {:.0f}%", *achieved_occ) : std::string()));
        if (on_wgmma) {
          next_steps.push_back(fmt::format(
              "occupancy is {:.0f}% by design (one warp-specialised CTA per SM on wgmma): latency is "
              "hidden inside the CTA, so deepen the K/V ring, overlap more of the softmax with the MMAs, "
              "or give the consumer warpgroups more rows",
              occ.theoretical_pct));
        } else {
          next_steps.push_back(fmt::format(
              "occupancy is capped at {:.0f}% by {}: use fewer {} per block so more blocks fit on "
              "an SM, or keep more loads in flight per warp",
              occ.theoretical_pct, occ.limiter,
              occ.limiter == "registers" ? "registers" : occ.limiter == "shared_memory"
                                                             ? "bytes of shared memory"
                                                             : "threads"));
        }
      } else if (r.backend == "cpu") {
        next_steps.push_back(
            "neither unit is busy: keep every core busy with independent (batch, head, query-tile) work, "
            "vectorise the inner products, and block K/V so that they stay in cache");
      } else {
        next_steps.push_back(
            "neither unit is busy: put more work in flight per SM (more blocks or warps, deeper "
            "pipelining of K/V loads) or remove serialising steps");
      }
      if (tensor_pipe && !materialized && !on_wgmma && *tensor_pipe >= kTensorPipeOverlapFromPct)
        next_steps.push_back(fmt::format(
            "the tensor pipe runs {:.0f}% of cycles and waits while each warp does its softmax: "
            "overlap the softmax of one tile with the MMAs of the next (warp-specialised ping-pong "
            "as in FlashAttention-3, wgmma on Hopper)",
            *tensor_pipe));
    } else if (c - mem >= kSolDominanceMarginPct || mem - c >= kSolDominanceMarginPct) {
      verdict = c > mem ? kVerdictCompute : kVerdictMemory;
      evidence.push_back(fmt::format("{} throughput is {:.0f} points above {} (margin {:.0f})",
                                     c > mem ? "compute" : "memory", std::abs(c - mem),
                                     c > mem ? "memory" : "compute", kSolDominanceMarginPct));
    } else {
      verdict = (roof_bound && *roof_bound == Bound::compute) ? kVerdictCompute : kVerdictMemory;
      evidence.push_back(fmt::format(
          "compute {:.0f}% and memory {:.0f}% are within {:.0f} points: the roofline position "
          "decides",
          c, mem, kSolDominanceMarginPct));
    }
    if (verdict == kVerdictMemory) {
      if (materialized) {
        next_steps.push_back(fmt::format(
            "fuse QK^T, softmax and PV (the fused kernel) so that S and P ({} of the minimum "
            "bytes) never leave the chip",
            pct(min_bytes > 0 ? r.cost.sp_bytes / min_bytes * 100 : 0)));
      } else {
        next_steps.push_back(fmt::format(
            "at {:.0f}% of HBM bandwidth: move fewer bytes (re-read K/V less, lower-precision K/V, "
            "grouped-query heads) or overlap loads better",
            mem));
      }
    } else if (verdict == kVerdictCompute) {
      next_steps.push_back(
          on_wgmma ? fmt::format("at {:.0f}% of compute throughput on wgmma: fewer FLOPs (skip fully masked "
                                 "causal tiles), fewer non-MMA instructions per tile (softmax), or more of the "
                                 "softmax hidden under the MMAs",
                                 c)
                   : fmt::format("at {:.0f}% of compute throughput: a faster main loop (wgmma + TMA, warp "
                                 "specialisation as in FlashAttention-3) or fewer FLOPs (skip fully masked "
                                 "causal tiles)",
                                 c));
    }
  }

  // Flags, in a fixed order.
  if (occ.waves > 0 && occ.waves < 1) {
    flag(kFlagUnderFilled);
    evidence.push_back(fmt::format(
        "under-filled: {} blocks fill {:.2f} of a wave ({} SMs x {} blocks/SM)", occ.grid_blocks,
        occ.waves, occ.sm_count, occ.blocks_per_sm));
    next_steps.push_back(
        "the grid does not fill the GPU: split the KV sequence across blocks (split-KV) or run "
        "more heads/batch per call");
  }
  m["waves"] = occ.waves > 0 ? json(occ.waves) : json(nullptr);
  bool tail = false;
  if (occ.waves >= 1) {
    const double slots = std::ceil(occ.waves);
    const double idle_share = (slots - occ.waves) / slots;
    m["tail_idle_share"] = idle_share;
    if (idle_share > kTailWasteShare) {
      tail = true;
      evidence.push_back(fmt::format(
          "tail effect: {:.2f} waves, the last wave is {:.0f}% full, {:.0f}% of the launched wave "
          "slots idle",
          occ.waves, (occ.waves - std::floor(occ.waves)) * 100, idle_share * 100));
    }
  } else {
    m["tail_idle_share"] = nullptr;
  }
  m["last_query_tile_rows"] = nullptr;
  if (!materialized && r.backend == "cuda") {
    const int64_t rows = r.shape.seq_q % kFusedQueryTileRows;
    const int64_t tiles = (r.shape.seq_q + kFusedQueryTileRows - 1) / kFusedQueryTileRows;
    if (rows != 0) {
      m["last_query_tile_rows"] = rows;
      if (rows < kTailTileFillBelow * kFusedQueryTileRows) {
        tail = true;
        const double padded_share =
            static_cast<double>(kFusedQueryTileRows - rows) / (tiles * kFusedQueryTileRows);
        evidence.push_back(fmt::format(
            "tail effect: seq_q {} leaves the last {}-row query tile with {} rows; {:.1f}% of the "
            "query rows computed are padding",
            r.shape.seq_q, kFusedQueryTileRows, rows, padded_share * 100));
      }
    }
  }
  if (tail) {
    flag(kFlagTailEffect);
    next_steps.push_back(
        "tail: pick a sequence length / block count that fills the last wave and tile, or "
        "schedule blocks persistently");
  }

  // Against the minimum, the call's traffic includes its L2 tail: the lines it left dirty in L2, which
  // its ranges do not count (the roofline above uses the ranges' bytes, as Nsight Compute does).
  const std::optional<double> l2_tail =
      bytes.measured && counters_ok ? r.counters.dram_write_tail_bytes : std::nullopt;
  m["dram_write_tail_bytes"] = maybe(l2_tail);
  std::optional<double> excess_ratio;
  if (bytes.measured && min_bytes > 0) excess_ratio = (bytes.value + l2_tail.value_or(0)) / min_bytes;
  m["excess_traffic_ratio"] = maybe(excess_ratio);
  const double sp_share = min_bytes > 0 ? r.cost.sp_bytes / min_bytes : 0;
  m["sp_share"] = materialized ? json(sp_share) : json(nullptr);
  bool excess = false;
  if (excess_ratio) {
    if (l2_tail) {
      evidence.push_back(fmt::format(
          "DRAM moved {}B in the call and {}B after it (lines it left dirty in L2), {:.2f}x the cost-model "
          "minimum {}B",
          giga(bytes.value), giga(*l2_tail), *excess_ratio, giga(min_bytes)));
    } else {
      evidence.push_back(fmt::format("DRAM moved {}B, {:.2f}x the cost-model minimum {}B",
                                     giga(bytes.value), *excess_ratio, giga(min_bytes)));
    }
    excess = *excess_ratio > kExcessTrafficRatio;
  }
  if (materialized) {
    evidence.push_back(fmt::format(
        "S and P are {:.0f}% of the minimum bytes ({}B of {}B): a fused kernel never moves them",
        sp_share * 100, giga(r.cost.sp_bytes), giga(min_bytes)));
    excess = excess || sp_share > kSpShareExcess;
  }
  if (excess) flag(kFlagExcessTraffic);

  if (r.clock.throttled_samples > 0) {
    flag(kFlagThrottled);
    evidence.push_back(fmt::format(
        "{} samples ran under 75% of the {:.0f} MHz SM clock (lowest {:.0f} MHz)",
        r.clock.throttled_samples, r.clock.sm_mhz_unthrottled, r.clock.sm_mhz_min));
  }
  // The clock the samples ran at (read under load): below the maximum, every compute ceiling measured
  // or quoted at the maximum is that much out of reach for this point.
  m["sm_mhz_median"] = r.clock.sm_mhz_median > 0 ? json(r.clock.sm_mhz_median) : json(nullptr);
  if (r.clock.sm_mhz_median > 0 && r.clock.sm_mhz_unthrottled > 0 &&
      r.clock.sm_mhz_median < kClockNoteBelowFraction * r.clock.sm_mhz_unthrottled) {
    evidence.push_back(fmt::format(
        "the SM clock under load was {:.0f} MHz at the median, {:.0f}% of its {:.0f} MHz maximum: compute "
        "runs that much slower than at the maximum clock",
        r.clock.sm_mhz_median, 100 * r.clock.sm_mhz_median / r.clock.sm_mhz_unthrottled,
        r.clock.sm_mhz_unthrottled));
  }
  m["rel_stddev"] = r.latency.rel_stddev;
  if (r.latency.rel_stddev > kNoisyRelStddev) {
    flag(kFlagNoisy);
    evidence.push_back(fmt::format("latency spread {:.1f}% (stddev/mean) is over {:.0f}%",
                                   r.latency.rel_stddev * 100, kNoisyRelStddev * 100));
  }
  const double ci_half = r.latency.p50_us > 0
                             ? 0.5 * (r.latency.p50_ci_high_us - r.latency.p50_ci_low_us) / r.latency.p50_us
                             : 0.0;
  if (r.sampling_stop == "time_budget" && ci_half > kNoisyP50CiHalfWidth) {
    flag(kFlagNoisy);
    const bool dipped = r.clock.sm_mhz_median > 0 && r.clock.sm_mhz_min > 0 &&
                        r.clock.sm_mhz_min < (1 - kClockDipFraction) * r.clock.sm_mhz_median;
    const std::string why =
        dipped ? fmt::format("the SM clock dipped to {:.0f} MHz, {:.0f}% under its median {:.0f} MHz, within the "
                             "window (a power-capped GPU's power manager does this)",
                             r.clock.sm_mhz_min, 100 * (1 - r.clock.sm_mhz_min / r.clock.sm_mhz_median),
                             r.clock.sm_mhz_median)
               : std::string(r.backend == "cpu" ? "the timings kept drifting (other work on the host, the CPU's "
                                                  "clock and threads moving)"
                                                : "the timings kept drifting (on a GPU, the SM clock stepping)");
    evidence.push_back(fmt::format(
        "sampling spent its whole time budget ({} samples) and the P50 is known to +-{:.1f}% (95% CI over "
        "batches of consecutive samples): {}; a longer --warmup-seconds or --max-seconds pins it better",
        r.latency.n, ci_half * 100, why));
  }
  if (!r.verification.checked) {
    flag(kFlagUnverified);
    evidence.push_back("output not verified against the float64 reference");
  } else if (!r.verification.passed || r.status == Status::incorrect) {
    evidence.push_back(fmt::format(
        "verification FAILED: max |O error| {:.3g} over tolerance {:.3g} ({} unwritten elements)",
        r.verification.o_max_abs_err, r.verification.tolerance, r.verification.unwritten));
  }

  // Flags go out in the documented order whatever order they were raised in.
  static constexpr std::string_view kOrder[] = {kFlagUnderFilled, kFlagTailEffect,
                                                kFlagExcessTraffic, kFlagThrottled,
                                                kFlagNoisy, kFlagHostBound, kFlagUnverified,
                                                kFlagCountersUnavailable};
  json flags_json = json::array();
  for (auto f : kOrder)
    if (std::find(flags.begin(), flags.end(), f) != flags.end()) flags_json.push_back(f);

  std::string next_step;
  for (const auto& s : next_steps) next_step += (next_step.empty() ? "" : "; ") + s;
  return {{"verdict", verdict},
          {"flags", flags_json},
          {"evidence", evidence},
          {"next_step", next_step},
          {"metrics", m},
          {"launches", launches}};
}

void annotate(Results& results) {
  for (auto& r : results.records) {
    if (r.status == Status::ok || r.status == Status::incorrect)
      r.diagnosis = diagnose(r, results.context);
    else
      r.diagnosis = nullptr;
  }
}

json compare_kernels(const Results& results) {
  // Group ok records by shape (and backend, device), keeping the order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Record*>> groups;
  for (const auto& r : results.records) {
    if (r.status != Status::ok) continue;
    const std::string key = fmt::format("{}|{}|{}", r.shape.label(), r.backend, r.device_id);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  auto pick = [](const std::vector<const Record*>& rs, bool materialized,
                 std::string_view preferred) -> const Record* {
    const Record* found = nullptr;
    for (const Record* r : rs) {
      if (is_materialized(*r) != materialized) continue;
      if (r->kernel == preferred) return r;
      if (!found) found = r;
    }
    return found;
  };

  json out = json::array();
  for (const auto& key : order) {
    const Record* ref = pick(groups[key], true, "reference");
    const Record* fused = pick(groups[key], false, "fused");
    if (!ref || !fused) continue;
    const json dr = diagnose(*ref, results.context);
    const json df = diagnose(*fused, results.context);
    const double ref_us = ref->latency.p50_us, fused_us = fused->latency.p50_us;
    const double ref_bytes = dr["metrics"]["dram_bytes"].get<double>();
    const double fused_bytes = df["metrics"]["dram_bytes"].get<double>();
    const std::string rs = dr["metrics"]["bytes_source"], fs = df["metrics"]["bytes_source"];
    const json& ri = dr["metrics"]["intensity_flop_per_byte"];
    const json& fi = df["metrics"]["intensity_flop_per_byte"];
    const Roof roof = roof_for(results.context, ref->shape.dtype, ref->clock.sm_mhz_median);

    json c;
    c["shape"] = ref->shape.label();
    c["reference"] = ref->kernel;
    c["fused"] = fused->kernel;
    c["reference_p50_us"] = ref_us;
    c["fused_p50_us"] = fused_us;
    c["speedup"] = fused_us > 0 ? json(ref_us / fused_us) : json(nullptr);
    c["latency_saved_us"] = ref_us - fused_us;
    c["reference_bytes"] = ref_bytes;
    c["fused_bytes"] = fused_bytes;
    c["bytes_source"] = rs == fs ? rs : rs + " / " + fs;
    c["bytes_saved"] = ref_bytes - fused_bytes;
    c["reference_intensity"] = ri;
    c["fused_intensity"] = fi;
    c["intensity_gain"] = (ri.is_number() && fi.is_number() && ri.get<double>() > 0)
                              ? json(fi.get<double>() / ri.get<double>())
                              : json(nullptr);
    c["sp_bytes"] = ref->cost.sp_bytes;
    std::optional<double> sp_time_us, explained;
    if (roof.known) {
      sp_time_us = ref->cost.sp_bytes / roof.bw_bytes_per_s * 1e6;
      if (ref_us - fused_us > 0) explained = *sp_time_us / (ref_us - fused_us);
    }
    c["sp_time_us"] = maybe(sp_time_us);
    c["sp_explained_share"] = maybe(explained);

    const double speedup = fused_us > 0 ? ref_us / fused_us : 0.0;
    std::string summary =
        speedup >= 1 ? fmt::format("{} is {:.2f}x faster than {} ({} -> {} us)", fused->kernel,
                                   speedup, ref->kernel, human(ref_us), human(fused_us))
                     : fmt::format("{} is {:.2f}x slower than {} ({} -> {} us)", fused->kernel,
                                   speedup > 0 ? 1 / speedup : 0.0, ref->kernel, human(ref_us),
                                   human(fused_us));
    summary += fmt::format("; it moves {}B less DRAM traffic ({})", giga(ref_bytes - fused_bytes),
                           c["bytes_source"].get<std::string>());
    if (c["intensity_gain"].is_number())
      summary += fmt::format("; intensity {} -> {} FLOP/B", human(ri.get<double>()),
                             human(fi.get<double>()));
    if (sp_time_us) {
      summary += fmt::format("; moving S/P ({}B) at {} takes {} us", giga(ref->cost.sp_bytes),
                             tera_bytes(roof.bw_bytes_per_s), human(*sp_time_us));
      if (explained)
        summary += fmt::format(" = {:.0f}% of the {} us saved", *explained * 100,
                               human(ref_us - fused_us));
    }
    c["summary"] = summary;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace attnprof::core
