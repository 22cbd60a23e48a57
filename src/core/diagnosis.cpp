#include "core/diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/decode_terms.hpp"
#include "core/diagnosis_decode.hpp"
#include "core/roofline.hpp"
#include "core/text.hpp"
#include "core/work_split.hpp"

namespace attnprof::core {

using nlohmann::json;

namespace {

// A value that may be unknown: nullopt when absent or not finite.
std::optional<double> finite(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}
json maybe(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

std::optional<double> counter(const Record& r, const char* name) {
  if (r.counters.status != CounterStatus::ok) return std::nullopt;
  auto it = r.counters.total.find(name);
  if (it == r.counters.total.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

using text::giga;
using text::human;
using text::pct;
using text::tera_bytes;
using text::tera_flops;

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

// The call's DRAM traffic against the cost-model minimum, counting the lines it left dirty in L2 (its
// L2 tail, written back after its ranges end): the excess-traffic flag's ratio and a decode point's
// read factor. nullopt without measured bytes.
std::optional<double> traffic_ratio(const Record& r, bool counters_ok, const Amount& bytes, double min_bytes) {
  if (!bytes.measured || !(min_bytes > 0)) return std::nullopt;
  const std::optional<double> l2_tail = counters_ok ? r.counters.dram_write_tail_bytes : std::nullopt;
  return (bytes.value + l2_tail.value_or(0)) / min_bytes;
}

// The speed-of-light verdict of one launch of a multi-launch call: latency-bound when neither unit is
// busy, compute-bound when compute leads by the margin, else memory-bound.
Verdict sol_verdict(double compute_pct, double memory_pct) {
  if (compute_pct < kSolLatencyBelowPct && memory_pct < kSolLatencyBelowPct) return Verdict::latency_bound;
  if (compute_pct - memory_pct >= kSolDominanceMarginPct) return Verdict::compute_bound;
  return Verdict::memory_bound;
}

std::optional<double> metric_of(const KernelCounters& k, const char* name) {
  auto it = k.metrics.find(name);
  if (it == k.metrics.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

// A launch's memory throughput: the busiest level when per-level counters were collected, else the
// combined figure.
std::optional<double> launch_memory_sol(const KernelCounters& k) {
  std::optional<double> best;
  for (const char* name : {kMetricDramSol, kMetricL2Sol, kMetricL1Sol})
    if (auto v = metric_of(k, name); v && (!best || *v > *best)) best = v;
  return best ? best : metric_of(k, kMetricMemorySol);
}

// Per-launch speed of light for a call of several launches (the reference's GEMM, softmax, GEMM):
// each launch's share of GPU time, DRAM bytes and bandwidth, its own verdict. The call-level
// percentages are time-weighted averages of these, so a launch that dominates the time dominates
// the verdict; this says which launch that is and what bounds it. Empty for single-launch calls.
std::vector<LaunchDiagnosis> launch_breakdown(const Record& r, std::vector<std::string>& evidence,
                                              DiagnosisMetrics& m) {
  const auto& launches = r.counters.per_kernel;
  if (r.counters.status != CounterStatus::ok || launches.size() < 2) return {};
  double total_ns = 0;
  for (const auto& k : launches) total_ns += metric_of(k, kMetricDuration).value_or(0);
  if (!(total_ns > 0)) return {};
  const bool stage_names = launches.size() == r.stages.size();
  std::vector<LaunchDiagnosis> out;
  std::string line = "per launch:";
  size_t dominant = 0;
  double dominant_ns = -1;
  for (size_t i = 0; i < launches.size(); ++i) {
    const auto& k = launches[i];
    const double ns = metric_of(k, kMetricDuration).value_or(0);
    const auto rd = metric_of(k, kMetricDramRead), wr = metric_of(k, kMetricDramWrite);
    const auto c = metric_of(k, kMetricComputeSol), mem = launch_memory_sol(k);
    LaunchDiagnosis entry;
    entry.name = stage_names ? r.stages[i].name : k.kernel;
    entry.kernel = k.kernel;
    entry.time_share = ns / total_ns;
    entry.duration_us = ns / 1e3;
    if (rd && wr) entry.dram_bytes = *rd + *wr;
    if (rd && wr && ns > 0) entry.dram_bytes_per_s = (*rd + *wr) / (ns * 1e-9);
    entry.compute_sol_pct = c;
    entry.memory_sol_pct = mem;
    if (c && mem) entry.verdict = sol_verdict(*c, *mem);
    line += fmt::format(" {} {:.0f}% of GPU time", entry.name, ns / total_ns * 100);
    if (c && mem)
      line += fmt::format(" {} (compute {:.0f}%, memory {:.0f}%", to_string(*entry.verdict), *c, *mem);
    if (entry.dram_bytes_per_s) line += (c && mem ? ", " : " (") + tera_bytes(*entry.dram_bytes_per_s);
    if ((c && mem) || entry.dram_bytes_per_s) line += ")";
    line += ";";
    if (ns > dominant_ns) {
      dominant_ns = ns;
      dominant = i;
    }
    out.push_back(std::move(entry));
  }
  line.back() = '.';
  evidence.push_back(line);
  m.dominant_launch = out[dominant].name;
  m.dominant_launch_time_share = out[dominant].time_share;
  return out;
}

// Where the resident warps of a scheduler are per issue cycle: the dependency stalls (results of
// memory, shared-memory/MUFU or fixed-latency instructions not back yet), which more resident warps
// would hide, against the rest (barriers, a full pipe, waiting on wgmma, issuing).
struct StallProfile {
  std::optional<double> issue_active_pct;
  std::optional<double> latency_share;  // (long + short scoreboard + wait) / warps resident per issue
  std::string top;                      // the largest collected reason
  double top_share = 0;
};

StallProfile stall_profile(const Record& r) {
  StallProfile p;
  p.issue_active_pct = counter(r, kMetricIssueActive);
  const auto per_issue = counter(r, kMetricWarpsPerIssue);
  const auto lg = counter(r, kMetricStallLongScoreboard), sh = counter(r, kMetricStallShortScoreboard),
             wait = counter(r, kMetricStallWait);
  if (!per_issue || !(*per_issue > 0) || !lg || !sh || !wait) return p;
  p.latency_share = (*lg + *sh + *wait) / *per_issue;
  const std::pair<const char*, const char*> reasons[] = {
      {kMetricStallLongScoreboard, "long scoreboard (global/local memory)"},
      {kMetricStallShortScoreboard, "short scoreboard (shared memory, MUFU)"},
      {kMetricStallWait, "wait (fixed-latency dependency)"},
      {kMetricStallBarrier, "barrier"},
      {kMetricStallMathPipe, "math pipe throttle"},
      {kMetricStallGmma, "wgmma (WARPGROUP.ARRIVES)"}};
  for (const auto& [metric, name] : reasons) {
    const double share = counter(r, metric).value_or(0) / *per_issue;
    if (share > p.top_share) {
      p.top_share = share;
      p.top = name;
    }
  }
  return p;
}

// The memory side: the busiest level with its throughput, from per-level counters when collected;
// else the combined throughput, named DRAM when DRAM's own share (bytes / bandwidth) accounts for it.
struct MemorySide {
  std::optional<double> pct;
  std::optional<MemoryLevel> level;
  std::string how;  // evidence: where the figure comes from
};

MemorySide memory_side(std::optional<double> dram, std::optional<double> l2, std::optional<double> l1,
                       bool dram_counted, std::optional<double> combined, std::optional<double> dram_derived) {
  MemorySide side;
  if (dram_counted || l2 || l1) {
    const std::pair<std::optional<double>, MemoryLevel> levels[] = {
        {dram_counted ? dram : std::nullopt, MemoryLevel::dram}, {l2, MemoryLevel::l2}, {l1, MemoryLevel::l1}};
    for (const auto& [pct, level] : levels)
      if (pct && (!side.pct || *pct > *side.pct)) {
        side.pct = pct;
        side.level = level;
      }
    side.how = "busiest memory level (per-level counters)";
    return side;
  }
  side.pct = combined;
  if (!combined) return side;
  if (dram_derived && *dram_derived >= *combined - kDramAccountsWithinPct) {
    side.level = MemoryLevel::dram;
    side.how = fmt::format(
        "per-level counters not collected: DRAM at {:.0f}% (bytes / bandwidth) is within {:.0f} points of the "
        "memory throughput {:.0f}% and accounts for it",
        *dram_derived, kDramAccountsWithinPct, *combined);
  } else {
    side.level = MemoryLevel::on_chip;
    side.how = dram_derived
                   ? fmt::format("per-level counters not collected: memory throughput {:.0f}% is the busiest of "
                                 "DRAM, L2 and L1/shared, and DRAM (bytes / bandwidth) is only at {:.0f}%, so "
                                 "the traffic is on chip (L2 or L1/shared, not told apart)",
                                 *combined, *dram_derived)
                   : "per-level counters not collected: the memory level is not known";
  }
  return side;
}

std::string memory_next_step(MemoryLevel level, double level_pct, std::optional<double> dram_pct) {
  const std::string hbm = dram_pct ? fmt::format(" (HBM at {:.0f}%)", *dram_pct) : std::string();
  switch (level) {
    case MemoryLevel::dram:
      return fmt::format(
          "at {:.0f}% of HBM bandwidth: move fewer bytes (re-read K/V less, lower-precision K/V, "
          "grouped-query heads) or overlap loads better",
          level_pct);
    case MemoryLevel::l2:
      return fmt::format(
          "L2 at {:.0f}% of its throughput{}: K/V are re-read from L2 by many CTAs; more query rows per CTA "
          "(fewer passes over K/V), CTAs of one head scheduled together, or TMA multicast across a cluster",
          level_pct, hbm);
    case MemoryLevel::l1:
      return fmt::format(
          "L1/shared memory at {:.0f}% of its throughput{}: fewer shared-memory reads per FLOP (larger "
          "per-warp tiles so each K/V fragment feeds more MMAs, Q kept in registers, wgmma reading operands "
          "straight from shared memory), and no bank conflicts",
          level_pct, hbm);
    case MemoryLevel::on_chip:
      return fmt::format(
          "memory throughput {:.0f}%{} is on chip: fewer L2/shared-memory accesses per FLOP; collect the "
          "per-level counters (the default set has them) to tell L2 from L1/shared",
          level_pct, hbm);
  }
  return {};
}

}  // namespace

bool is_materialized(const Record& r) { return r.cost.sp_bytes > 0; }

Diagnosis diagnose(const Record& r, const Context& ctx) {
  Diagnosis d;
  std::vector<std::string>& evidence = d.evidence;
  std::vector<std::string> next_steps;
  DiagnosisMetrics& m = d.metrics;
  auto flag = [&](Flag f) {
    if (!d.has(f)) d.flags.push_back(f);
  };

  const double p50_us = r.latency.p50_us;
  const bool materialized = is_materialized(r);
  const bool counters_ok = r.counters.status == CounterStatus::ok;
  const double min_bytes = r.cost.min_bytes_read + r.cost.min_bytes_write;
  const Amount flops = measured_flops(r);
  const Amount bytes = measured_bytes(r);
  const Roof roof = roof_for(ctx, r.shape.dtype, r.clock.sm_mhz_median);
  const std::string dtype{to_string(r.shape.dtype)};

  m.p50_us = p50_us;
  m.p99_us = r.latency.p99_us;
  m.launch_overhead_us = r.launch_overhead_us;
  if (ctx.ceilings.launch_latency_us > 0) m.launch_latency_us = ctx.ceilings.launch_latency_us;
  m.flops = flops.value;
  m.flops_source = flops.source;
  m.dram_bytes = bytes.value;
  m.bytes_source = bytes.source;
  m.min_bytes = min_bytes;
  // A counted FLOP total far from the cost model's means the counters count something else (or
  // the kernel does redundant work, e.g. masked causal tiles): say it, the intensity rests on it.
  if (flops.measured && r.cost.flops > 0) {
    m.flops_vs_cost = flops.value / r.cost.flops;
    evidence.push_back(fmt::format("counted {}FLOP ({}) = {:.2f}x the cost model's {}FLOP",
                                   giga(flops.value), flops.source, flops.value / r.cost.flops,
                                   giga(r.cost.flops)));
  }
  m.sp_bytes = r.cost.sp_bytes;
  m.materialized = materialized;

  // Counters first: what the numbers below rest on.
  if (!counters_ok) {
    flag(Flag::counters_unavailable);
    std::string why = r.backend == BackendKind::cpu ? "CPU backend: no hardware counters"
                                         : fmt::format("counters {}", to_string(r.counters.status));
    // The CPU backend's reason is that same sentence: once is enough.
    if (!r.counters.reason.empty() && r.counters.reason != why) why += ": " + r.counters.reason;
    evidence.push_back(why + "; FLOPs and DRAM bytes come from the cost model");
  }

  const double intensity = bytes.value > 0 ? flops.value / bytes.value : 0;
  if (intensity > 0 && std::isfinite(intensity)) m.intensity_flop_per_byte = intensity;

  std::optional<double> achieved_flops, achieved_bw, compute_sol, memory_sol;
  if (p50_us > 0) {
    achieved_flops = flops.value / (p50_us * 1e-6);
    achieved_bw = bytes.value / (p50_us * 1e-6);
  }
  m.achieved_flops_per_s = finite(achieved_flops);
  m.achieved_bytes_per_s = finite(achieved_bw);
  if (roof.known) {
    m.roof_source = roof.source;
    m.peak_flops_per_s = roof.peak_flops_per_s;
    m.peak_bw_bytes_per_s = roof.bw_bytes_per_s;
    m.ridge_flop_per_byte = roof.ridge_flop_per_byte;
    if (r.clock.sm_mhz_median > 0 && !roof.ceilings.flops_per_s_per_mhz.empty()) m.roof_sm_mhz = r.clock.sm_mhz_median;
  }

  // The clock the samples ran at (read under load): below the maximum, every compute ceiling measured
  // or quoted at the maximum is that much out of reach for this point.
  const bool clock_known = r.clock.sm_mhz_median > 0 && r.clock.sm_mhz_unthrottled > 0;
  const double clock_share = clock_known ? std::min(1.0, r.clock.sm_mhz_median / r.clock.sm_mhz_unthrottled) : 1.0;

  std::optional<Bound> roof_bound;
  std::optional<double> roof_pct, clock_roof_pct;  // achieved / attainable FLOP/s at this intensity [%]
  if (roof.known && intensity > 0) {
    const double attainable = attainable_flops(roof.ceilings, r.shape.dtype, intensity);
    roof_bound = bound_of(roof.ceilings, r.shape.dtype, intensity);
    m.attainable_flops_per_s = attainable;
    m.roof_bound = std::string(to_string(*roof_bound));
    std::string line = fmt::format(
        "intensity {} FLOP/B ({} / {}) is {} the {} ridge {} FLOP/B; the roof there is {}",
        human(intensity), flops.source, bytes.source,
        *roof_bound == Bound::memory ? "below" : "above", dtype, human(roof.ridge_flop_per_byte),
        tera_flops(attainable));
    if (achieved_flops && attainable > 0) {
      roof_pct = *achieved_flops / attainable * 100;
      m.pct_of_roof = roof_pct;
      const double datasheet = datasheet_attainable_flops(roof.ceilings, r.shape.dtype, intensity);
      if (datasheet > 0) m.pct_of_datasheet_roof = *achieved_flops / datasheet * 100;
      line += fmt::format(", it reaches {} = {:.0f}% of it", tera_flops(*achieved_flops), *roof_pct);
      // On the compute roof the ceiling scales with the SM clock; on the memory roof it does not.
      const double scale = *roof_bound == Bound::compute && !m.roof_sm_mhz ? clock_share : 1.0;
      clock_roof_pct = *roof_pct / scale;
      m.pct_of_clock_scaled_roof = clock_roof_pct;
      if (scale < 1)
        line += fmt::format(" ({:.0f}% of the roof scaled to the {:.0f} MHz it ran at)", *clock_roof_pct,
                            r.clock.sm_mhz_median);
    }
    evidence.push_back(line + fmt::format(" (ceilings: {}{})", roof.source,
                                          m.roof_sm_mhz ? fmt::format("; compute roof at the point's {:.0f} MHz SM clock",
                                                                      r.clock.sm_mhz_median)
                                                        : std::string()));
  } else if (!roof.known) {
    evidence.push_back("no compute/bandwidth ceilings in the results (and no datasheet for '" + ctx.device.name +
                       "'): the roofline position is unknown");
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
  m.compute_sol_pct = compute_sol;
  m.memory_sol_pct = memory_sol;
  if (!sol_source.empty()) m.sol_source = sol_source;
  if (compute_sol && memory_sol)
    evidence.push_back(fmt::format("speed of light: compute {:.0f}%, memory {:.0f}% ({})",
                                   *compute_sol, *memory_sol, sol_source));

  // Memory levels: HBM, L2, L1/shared, each against its own peak.
  const auto dram_counted = counter(r, kMetricDramSol);
  const auto l2_sol = counter(r, kMetricL2Sol), l1_sol = counter(r, kMetricL1Sol);
  std::optional<double> dram_derived;
  if (bytes.measured && achieved_bw && roof.known) dram_derived = *achieved_bw / roof.bw_bytes_per_s * 100;
  const std::optional<double> dram_sol = dram_counted ? dram_counted : dram_derived;
  m.dram_sol_pct = dram_sol;
  if (dram_sol) m.dram_sol_source = dram_counted ? "counters" : "derived from DRAM bytes / bandwidth";
  m.l2_sol_pct = l2_sol;
  m.l1_sol_pct = l1_sol;
  const bool derived_sol = sol_source.rfind("derived", 0) == 0;
  MemorySide mem_side = derived_sol ? MemorySide{memory_sol, MemoryLevel::dram, "derived from DRAM bytes vs bandwidth"}
                                    : memory_side(dram_counted, l2_sol, l1_sol, dram_counted.has_value(),
                                                  memory_sol, dram_derived);
  if (!counters_ok && !memory_sol) mem_side = {};
  m.memory_level = mem_side.level;
  if (dram_counted || l2_sol || l1_sol) {
    std::string line = "memory levels (% of each level's peak):";
    if (dram_counted) line += fmt::format(" HBM {:.0f}%", *dram_counted);
    if (dram_counted && achieved_bw && roof.known)
      line += fmt::format(" ({} of the {} ceiling)", tera_bytes(*achieved_bw), tera_bytes(roof.bw_bytes_per_s));
    if (l2_sol) line += fmt::format(", L2 {:.0f}%", *l2_sol);
    if (const auto l2_bytes = counter(r, kMetricL2Bytes); l2_sol && l2_bytes && p50_us > 0)
      line += fmt::format(" ({})", tera_bytes(*l2_bytes / (p50_us * 1e-6)));
    if (l1_sol) line += fmt::format(", L1/shared {:.0f}%", *l1_sol);
    evidence.push_back(line);
  } else if (counters_ok && mem_side.level) {
    evidence.push_back(mem_side.how);
  }

  // The compute side the verdict compares with memory: the busier of the tensor and FMA pipes.
  const auto tensor_pipe = counter(r, kMetricTensorPipeActive);
  const auto fma_pipe = counter(r, kMetricFmaPipeActive);
  m.tensor_pipe_active_pct = tensor_pipe;
  m.fma_pipe_active_pct = fma_pipe;
  std::optional<double> pipe_pct;
  std::string pipe_name;
  if (tensor_pipe || fma_pipe) {
    const bool tensor_leads = tensor_pipe && (!fma_pipe || *tensor_pipe >= *fma_pipe);
    pipe_pct = tensor_leads ? tensor_pipe : fma_pipe;
    pipe_name = tensor_leads ? "tensor" : "fma";
  } else if (compute_sol) {
    pipe_pct = compute_sol;
    pipe_name = derived_sol ? "derived" : "sm";
  }
  m.compute_pipe_pct = pipe_pct;
  if (!pipe_name.empty()) m.compute_pipe = pipe_name;
  if (tensor_pipe || fma_pipe) {
    std::string line = "compute pipes:";
    if (tensor_pipe) line += fmt::format(" tensor {:.0f}% of active cycles", *tensor_pipe);
    if (fma_pipe) line += fmt::format("{} FMA {:.0f}%", tensor_pipe ? "," : "", *fma_pipe);
    if (!fma_pipe) line += " (FMA pipe not collected)";
    evidence.push_back(line);
  } else if (counters_ok && compute_sol) {
    evidence.push_back("pipe counters not collected: sm__throughput stands in for the tensor and FMA pipes");
  }

  d.launches = launch_breakdown(r, evidence, m);

  const Occupancy& occ = r.occupancy;
  std::optional<double> achieved_occ = occ.achieved_pct;
  if (auto a = counter(r, kMetricAchievedOccupancy)) achieved_occ = *a;
  if (occ.theoretical_pct > 0) m.theoretical_occupancy_pct = occ.theoretical_pct;
  m.achieved_occupancy_pct = finite(achieved_occ);
  if (!occ.limiter.empty()) m.occupancy_limiter = occ.limiter;
  m.l2_hit_rate_pct = counter(r, kMetricL2HitRate);
  const StallProfile stalls = stall_profile(r);
  m.issue_active_pct = stalls.issue_active_pct;
  m.latency_stall_share = stalls.latency_share;
  if (!stalls.top.empty()) m.top_stall = stalls.top;
  // Tensor operations per tensor instruction tell the MMA shape: 4096 for mma.sync m16n8k16, ten times
  // that and more for Hopper's warpgroup MMA (wgmma), whose kernels run one warp-specialised CTA per SM.
  const auto tensor_inst = counter(r, kMetricTensorInstHmma);
  const double ops_per_inst = flops.measured && tensor_inst && *tensor_inst > 0 ? flops.value / *tensor_inst : 0;
  const bool on_wgmma = ops_per_inst > kWgmmaOpsPerInstructionAbove;
  if (ops_per_inst > 0) m.tensor_ops_per_instruction = ops_per_inst;

  // Launch-bound is a GPU-time finding: the call's launches are so short that their fixed cost
  // (launch latency, ramp-up, drain) is a large part of the GPU time. The host's enqueue time is
  // another matter (host-bound, below): it leaves the GPU idle between calls, not within one.
  const int64_t launch_count =
      std::max<int64_t>({1, static_cast<int64_t>(r.launches.size()), static_cast<int64_t>(r.stages.size())});
  m.launches_per_call = launch_count;
  const double launch_latency_us = ctx.ceilings.launch_latency_us;
  const double launch_limit_us = launch_latency_us > 0 ? kLaunchBoundLatencyMultiple * launch_latency_us
                                                       : kLaunchBoundUsPerLaunch;
  const bool launch_bound = p50_us > 0 && p50_us < launch_limit_us * static_cast<double>(launch_count);
  if (p50_us > 0 && r.launch_overhead_us > kHostBoundOverheadFactor * p50_us) {
    flag(Flag::host_bound);
    evidence.push_back(fmt::format(
        "enqueueing one call takes {:.3g} us on the host, longer than its {:.3g} us on the GPU: calls back to "
        "back would leave the GPU waiting for the host (the GPU time above excludes that wait)",
        r.launch_overhead_us, p50_us));
    next_steps.push_back("capture the calls in a CUDA graph, or put more work in each call, so the host keeps ahead");
  }

  // A decode point is read in bandwidth terms, and a call too short for its bytes is named (diagnosis_decode.hpp).
  const bool decode = is_decode(r.shape);
  DecodeInputs decode_in;
  DecodeView decode_v;
  if (decode) {
    decode_in = {.p50_us = p50_us,
                 .dram_bytes = bytes.value,
                 .bytes_measured = bytes.measured,
                 .min_bytes = min_bytes,
                 .read_factor = traffic_ratio(r, counters_ok, bytes, min_bytes),
                 .peak_bw_bytes_per_s = roof.bw_bytes_per_s,
                 .launches = launch_count,
                 .launch_latency_us = launch_latency_us,
                 .host_bound = d.has(Flag::host_bound)};
    decode_v = decode_view(r, decode_in, m);
    evidence.push_back(decode_v.evidence);
    if (decode_v.short_stream && !decode_v.short_call && p50_us > 0 && !launch_bound)
      evidence.push_back(decode_v.short_call_evidence);
  }

  Verdict verdict = Verdict::unknown;
  if (p50_us <= 0) {
    evidence.push_back("no latency samples: nothing to place against the ceilings");
    next_steps.push_back("time the point (it has no P50) before diagnosing it");
  } else if (launch_bound) {
    verdict = Verdict::launch_bound;
    evidence.push_back(
        launch_latency_us > 0
            ? fmt::format("P50 {:.3g} us over {} kernel launch{}: under {:.0f}x the {:.3g} us an empty kernel's "
                          "launch takes on this GPU (context.ceilings.launch_latency_us) per launch, the fixed "
                          "cost of each launch is a large part of the call",
                          p50_us, launch_count, launch_count == 1 ? "" : "es", kLaunchBoundLatencyMultiple,
                          launch_latency_us)
            : fmt::format("P50 {:.3g} us over {} kernel launch{}: under {:.0f} us of GPU time per launch, the fixed "
                          "cost of each launch is a large part of the call (no empty-kernel launch latency in the "
                          "results, context.ceilings.launch_latency_us: the rule falls back to {:.0f} us per launch)",
                          p50_us, launch_count, launch_count == 1 ? "" : "es", kLaunchBoundUsPerLaunch,
                          kLaunchBoundUsPerLaunch));
    next_steps.push_back(
        "the call takes about as long as launching it: put more work in one call (more heads, "
        "batch or sequence) or replay calls from a CUDA graph; kernel tuning will not show here");
  } else if (decode_v.short_call) {
    verdict = Verdict::launch_bound;
    evidence.push_back(decode_v.short_call_evidence);
    next_steps.push_back(decode_v.short_call_next_step);
  } else if (!compute_sol || !mem_side.pct || !pipe_pct) {
    next_steps.push_back(
        "record ceilings (a GPU run measures them; a known device name selects its datasheet) to "
        "place the point on the roofline");
  } else {
    const double c = *compute_sol, mem = *mem_side.pct, pipe = *pipe_pct;
    const MemoryLevel level = mem_side.level.value_or(MemoryLevel::on_chip);
    const std::string level_text{level_name(level)};
    const std::string pipe_text = pipe_name == "tensor" ? "the tensor pipe"
                                  : pipe_name == "fma"  ? "the FMA pipe"
                                                        : "compute";
    if (c > kSolSaturatedPct || mem > kSolSaturatedPct) {
      const bool compute_hi = c >= mem;
      m.saturated = compute_hi ? "compute" : "memory";
      evidence.push_back(fmt::format("{} throughput {:.0f}% is over {:.0f}%: saturated",
                                     compute_hi ? "compute" : level_text, compute_hi ? c : mem, kSolSaturatedPct));
    }
    const bool on_compute_roof =
        roof_bound && *roof_bound == Bound::compute && clock_roof_pct && *clock_roof_pct >= kComputeRoofSharePct;
    if (on_compute_roof) {
      verdict = Verdict::compute_bound;
      evidence.push_back(fmt::format(
          "the point reaches {:.0f}% of the compute roof scaled to its SM clock (at least {:.0f}%): compute-bound "
          "whatever the throughput counters read ({} {:.0f}%, {} {:.0f}%)",
          *clock_roof_pct, kComputeRoofSharePct, pipe_text, pipe, level_text, mem));
    } else if (c < kSolLatencyBelowPct && mem < kSolLatencyBelowPct) {
      evidence.push_back(fmt::format(
          "compute {:.0f}% and memory {:.0f}% ({}) are both under {:.0f}%: neither unit is busy", c, mem,
          level_text, kSolLatencyBelowPct));
      const bool low_occupancy = !occ.limiter.empty() && occ.theoretical_pct > 0 &&
                                 occ.theoretical_pct < kOccupancyBoundBelowPct;
      const bool stalls_known = stalls.issue_active_pct && stalls.latency_share;
      const bool latency_exposed = stalls_known && *stalls.issue_active_pct < kIssueActiveBusyPct &&
                                   *stalls.latency_share >= kLatencyStallShareFrom;
      const std::string occ_text = fmt::format(
          "theoretical occupancy {:.0f}% (limited by {}, {} blocks/SM of {} threads, {} registers/thread, {} B "
          "shared memory/block){}",
          occ.theoretical_pct, occ.limiter, occ.blocks_per_sm, occ.threads_per_block, occ.registers_per_thread,
          occ.smem_bytes_per_block, achieved_occ ? fmt::format(", achieved {:.0f}%", *achieved_occ) : std::string());
      if (stalls_known)
        evidence.push_back(fmt::format(
            "issue slots used {:.0f}% of active cycles; dependency stalls (long/short scoreboard, wait) are "
            "{:.0f}% of the warps' resident cycles{}",
            *stalls.issue_active_pct, *stalls.latency_share * 100,
            stalls.top.empty() ? std::string() : fmt::format(", the largest reason {} ({:.0f}%)", stalls.top,
                                                             stalls.top_share * 100)));
      if (low_occupancy && latency_exposed) {
        verdict = Verdict::occupancy_bound;
        evidence.push_back(occ_text + fmt::format(
            ": the schedulers issue on under {:.0f}% of cycles and the warps mostly wait on results (at least "
            "{:.0f}% of their cycles), which more resident warps would hide",
            kIssueActiveBusyPct, kLatencyStallShareFrom * 100));
        next_steps.push_back(fmt::format(
            "occupancy is capped at {:.0f}% by {}: use fewer {} per block so more blocks fit on "
            "an SM, or keep more loads in flight per warp",
            occ.theoretical_pct, occ.limiter,
            occ.limiter == "registers" ? "registers" : occ.limiter == "shared_memory" ? "bytes of shared memory"
                                                                                       : "threads"));
      } else {
        verdict = Verdict::latency_bound;
        if (low_occupancy && !stalls_known) {
          evidence.push_back(occ_text +
                             ", but the issue-slot and stall counters (smsp__issue_active, "
                             "smsp__average_warps_issue_stalled_*) were not collected: occupancy is not shown to "
                             "be what limits");
        } else if (low_occupancy) {
          evidence.push_back(occ_text + fmt::format(
              ", by design: {} , so more resident warps would not help",
              *stalls.issue_active_pct >= kIssueActiveBusyPct
                  ? fmt::format("the issue slots are busy ({:.0f}%, at least {:.0f}%)", *stalls.issue_active_pct,
                                kIssueActiveBusyPct)
                  : fmt::format("the warps wait on results only {:.0f}% of their cycles (under {:.0f}%)",
                                *stalls.latency_share * 100, kLatencyStallShareFrom * 100)));
        }
        if (on_wgmma && low_occupancy) {
          next_steps.push_back(fmt::format(
              "occupancy is {:.0f}% by design (one warp-specialised CTA per SM on wgmma): latency is "
              "hidden inside the CTA, so deepen the K/V ring, overlap more of the softmax with the MMAs, "
              "or give the consumer warpgroups more rows",
              occ.theoretical_pct));
        } else if (r.backend == BackendKind::cpu) {
          next_steps.push_back(
              "neither unit is busy: keep every core busy with independent (batch, head, query-tile) work, "
              "vectorise the inner products, and block K/V so that they stay in cache");
        } else {
          next_steps.push_back(
              "neither unit is busy: put more work in flight per SM (more blocks or warps, deeper "
              "pipelining of K/V loads) or remove serialising steps");
        }
      }
      if (tensor_pipe && !materialized && !on_wgmma && *tensor_pipe >= kTensorPipeOverlapFromPct)
        next_steps.push_back(fmt::format(
            "the tensor pipe runs {:.0f}% of cycles and waits while each warp does its softmax: "
            "overlap the softmax of one tile with the MMAs of the next (warp-specialised ping-pong "
            "as in FlashAttention-3, wgmma on Hopper)",
            *tensor_pipe));
    } else if (pipe >= kSolLatencyBelowPct && pipe - mem >= kSolDominanceMarginPct) {
      verdict = Verdict::compute_bound;
      evidence.push_back(fmt::format("{} at {:.0f}% leads the busiest memory level ({} {:.0f}%) by {:.0f} points "
                                     "(margin {:.0f})",
                                     pipe_text, pipe, level_text, mem, pipe - mem, kSolDominanceMarginPct));
    } else if (mem >= kSolLatencyBelowPct) {
      verdict = Verdict::memory_bound;
      evidence.push_back(
          mem - pipe >= kSolDominanceMarginPct
              ? fmt::format("{} at {:.0f}% leads {} ({:.0f}%) by {:.0f} points (margin {:.0f}): memory-bound on {}",
                            level_text, mem, pipe_text, pipe, mem - pipe, kSolDominanceMarginPct, level_text)
              : fmt::format("{} is busy at {:.0f}% and {} ({:.0f}%) does not lead it by {:.0f} points: memory-bound "
                            "on {}",
                            level_text, mem, pipe_text, pipe, kSolDominanceMarginPct, level_text));
    } else {
      verdict = Verdict::latency_bound;
      evidence.push_back(fmt::format(
          "the SM is busy (sm__throughput {:.0f}%) but {} ({:.0f}%) does not lead memory ({:.0f}%, under {:.0f}%) "
          "by {:.0f} points: the SM's time goes to issuing other instructions and waiting, not to one unit",
          c, pipe_text, pipe, mem, kSolLatencyBelowPct, kSolDominanceMarginPct));
      next_steps.push_back(
          "fewer non-MMA instructions per tile (softmax: exp2 with the scale folded in, fewer conversions "
          "and shuffles) and more of them overlapped with the MMAs");
    }
    if (verdict == Verdict::memory_bound) {
      if (materialized) {
        next_steps.push_back(fmt::format(
            "fuse QK^T, softmax and PV (the fused kernel) so that S and P ({} of the minimum "
            "bytes) never leave the chip",
            pct(min_bytes > 0 ? r.cost.sp_bytes / min_bytes * 100 : 0)));
      } else if (decode && level == MemoryLevel::dram) {
        next_steps.push_back(decode_memory_next_step(r, decode_in, m));
      } else {
        next_steps.push_back(memory_next_step(level, mem, dram_sol));
      }
    } else if (verdict == Verdict::compute_bound) {
      const double shown = clock_roof_pct && on_compute_roof ? *clock_roof_pct : pipe;
      const char* of_what = on_compute_roof ? "of the clock-scaled roof" : "of the compute pipe's peak";
      next_steps.push_back(
          on_wgmma ? fmt::format("at {:.0f}% {} on wgmma: fewer FLOPs (skip fully masked causal tiles), fewer "
                                 "non-MMA instructions per tile (softmax), or more of the softmax hidden under the MMAs",
                                 shown, of_what)
                   : fmt::format("at {:.0f}% {}: a faster main loop (wgmma + TMA, warp specialisation as in "
                                 "FlashAttention-3) or fewer FLOPs (skip fully masked causal tiles)",
                                 shown, of_what));
      if (decode)
        if (std::string step = decode_compute_next_step(r, m); !step.empty()) next_steps.push_back(std::move(step));
    }
  }
  d.verdict = verdict;

  // Work split: waves of a one-tile-per-CTA grid, tiles per CTA of a persistent one, the last query tile.
  if (occ.waves > 0 && occ.waves < 1) {
    flag(Flag::under_filled);
    evidence.push_back(fmt::format(
        "under-filled: {} blocks fill {:.2f} of a wave ({} SMs x {} blocks/SM)", occ.grid_blocks,
        occ.waves, occ.sm_count, occ.blocks_per_sm));
    // A decode call bound by its fixed cost, or already streaming at the HBM roof, is not helped by more
    // CTAs: its next step says what is.
    const bool decode_not_by_ctas =
        decode && (verdict == Verdict::launch_bound ||
                   (verdict == Verdict::memory_bound && m.pct_of_hbm_ceiling.value_or(0) >= kSolSaturatedPct));
    if (!decode_not_by_ctas)
      next_steps.push_back(
          "the grid does not fill the GPU: split the KV sequence across blocks (split-KV) or run "
          "more heads/batch per call");
  }
  if (occ.waves > 0) m.waves = occ.waves;
  const std::optional<RecordTiling> tiling = r.backend == BackendKind::cuda ? tiling_of_record(r) : std::nullopt;
  std::optional<PersistentSplit> split;
  if (tiling) {
    m.kernel_variant = tiling->tiling.family + " " + tiling->tiling.variant;
    m.query_tile_rows = tiling->tiling.query_tile_rows;
    split = persistent_split(tiling->tiling, r.shape, tiling->grid_ctas);
    m.persistent_grid = split.has_value();
  }
  bool tail = false;
  if (split) {
    m.tail_source = "tiles per CTA";
    m.work_tiles = split->tiles;
    m.tiles_per_cta_max = split->tiles_per_cta_max;
    m.tiles_per_cta_mean = split->tiles_per_cta_mean;
    m.tail_idle_share = split->idle_share;
    if (split->idle_share > kTailWasteShare) {
      tail = true;
      evidence.push_back(fmt::format(
          "tail effect: the persistent grid's {} CTAs take {} work tiles round-robin, {:.2f} per CTA on average "
          "and {:.0f} for the busiest; with the work per tile{} the busiest CTA carries {:.2f}x the mean, so "
          "{:.0f}% of the CTA time is idle at the end",
          split->grid, split->tiles, split->tiles_per_cta_mean, split->tiles_per_cta_max,
          r.shape.causal ? " (key tiles visited under the causal mask)" : "", split->work_max / split->work_mean,
          split->idle_share * 100));
    }
  } else if (occ.waves >= 1) {
    const double slots = std::ceil(occ.waves);
    const double idle_share = (slots - occ.waves) / slots;
    m.tail_source = "waves";
    m.tail_idle_share = idle_share;
    if (idle_share > kTailWasteShare) {
      tail = true;
      evidence.push_back(fmt::format(
          "tail effect: {:.2f} waves, the last wave is {:.0f}% full, {:.0f}% of the launched wave "
          "slots idle",
          occ.waves, (occ.waves - std::floor(occ.waves)) * 100, idle_share * 100));
    }
  }
  if (tiling && r.shape.varlen()) {
    // A packed batch: every sequence's last query tile is part-filled (and its CTAs past the sequence's
    // end exit at once); the padding share is over all the tiles computed.
    const int64_t tile_rows = tiling->tiling.query_tile_rows;
    int64_t tiles = 0;
    for (int64_t len : r.shape.seq_lens) tiles += (len + tile_rows - 1) / tile_rows;
    const double padded_share =
        tiles > 0 ? 1 - static_cast<double>(r.shape.tokens_q()) / static_cast<double>(tiles * tile_rows) : 0;
    if (padded_share > 1 - kTailTileFillBelow) {
      tail = true;
      evidence.push_back(fmt::format(
          "tail effect: the {} sequences of the packed batch fill their last {}-row query tiles ({}, {} variant) "
          "so partly that {:.1f}% of the query rows computed are padding",
          r.shape.batch, tile_rows, tiling->tiling.family, tiling->tiling.variant, padded_share * 100));
    }
  } else if (tiling) {
    const int64_t tile_rows = tiling->tiling.query_tile_rows;
    const int64_t rows = r.shape.seq_q % tile_rows;
    const int64_t tiles = (r.shape.seq_q + tile_rows - 1) / tile_rows;
    if (rows != 0) {
      m.last_query_tile_rows = rows;
      if (rows < kTailTileFillBelow * static_cast<double>(tile_rows)) {
        tail = true;
        const double padded_share = static_cast<double>(tile_rows - rows) / static_cast<double>(tiles * tile_rows);
        evidence.push_back(fmt::format(
            "tail effect: seq_q {} leaves the last {}-row query tile ({}, {} variant) with {} rows; {:.1f}% of the "
            "query rows computed are padding",
            r.shape.seq_q, tile_rows, tiling->tiling.family, tiling->tiling.variant, rows, padded_share * 100));
      }
    }
  }
  if (tail) {
    flag(Flag::tail_effect);
    next_steps.push_back(
        split ? "tail: balance the tiles over the persistent CTAs (a grid that divides the tile count, heaviest "
                "tiles first, or one CTA per tile when the imbalance is large)"
              : "tail: pick a sequence length / block count that fills the last wave and tile, or "
                "schedule blocks persistently");
  }

  // Against the minimum, the call's traffic includes its L2 tail: the lines it left dirty in L2, which
  // its ranges do not count (the roofline above uses the ranges' bytes, as Nsight Compute does).
  const std::optional<double> l2_tail =
      bytes.measured && counters_ok ? r.counters.dram_write_tail_bytes : std::nullopt;
  m.dram_write_tail_bytes = finite(l2_tail);
  const std::optional<double> excess_ratio = traffic_ratio(r, counters_ok, bytes, min_bytes);
  m.excess_traffic_ratio = finite(excess_ratio);
  const double sp_share = min_bytes > 0 ? r.cost.sp_bytes / min_bytes : 0;
  if (materialized) m.sp_share = sp_share;
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
  if (excess) flag(Flag::excess_traffic);

  if (r.clock.throttled_samples > 0) {
    flag(Flag::throttled);
    evidence.push_back(fmt::format(
        "{} samples ran under {:g}% of the {:.0f} MHz SM clock (lowest {:.0f} MHz)",
        r.clock.throttled_samples, kThrottledClockFraction * 100, r.clock.sm_mhz_unthrottled, r.clock.sm_mhz_min));
  }
  // The clock the samples ran at (read under load): below the maximum, every compute ceiling measured
  // or quoted at the maximum is that much out of reach for this point.
  if (r.clock.sm_mhz_median > 0) m.sm_mhz_median = r.clock.sm_mhz_median;
  if (r.clock.sm_mhz_median > 0 && r.clock.sm_mhz_unthrottled > 0 &&
      r.clock.sm_mhz_median < kClockNoteBelowFraction * r.clock.sm_mhz_unthrottled) {
    evidence.push_back(fmt::format(
        "the SM clock under load was {:.0f} MHz at the median, {:.0f}% of its {:.0f} MHz maximum: compute "
        "runs that much slower than at the maximum clock",
        r.clock.sm_mhz_median, 100 * r.clock.sm_mhz_median / r.clock.sm_mhz_unthrottled,
        r.clock.sm_mhz_unthrottled));
  }
  m.rel_stddev = r.latency.rel_stddev;
  if (r.latency.rel_stddev > kNoisyRelStddev) {
    flag(Flag::noisy);
    evidence.push_back(fmt::format("latency spread {:.1f}% (stddev/mean) is over {:.0f}%",
                                   r.latency.rel_stddev * 100, kNoisyRelStddev * 100));
  }
  const double ci_half = r.latency.p50_us > 0
                             ? 0.5 * (r.latency.p50_ci_high_us - r.latency.p50_ci_low_us) / r.latency.p50_us
                             : 0.0;
  if (r.sampling_stop == "time_budget" && ci_half > kNoisyP50CiHalfWidth) {
    flag(Flag::noisy);
    const bool dipped = r.clock.sm_mhz_median > 0 && r.clock.sm_mhz_min > 0 &&
                        r.clock.sm_mhz_min < (1 - kClockDipFraction) * r.clock.sm_mhz_median;
    const std::string why =
        dipped ? fmt::format("the SM clock dipped to {:.0f} MHz, {:.0f}% under its median {:.0f} MHz, within the "
                             "window (a power-capped GPU's power manager does this)",
                             r.clock.sm_mhz_min, 100 * (1 - r.clock.sm_mhz_min / r.clock.sm_mhz_median),
                             r.clock.sm_mhz_median)
               : std::string(r.backend == BackendKind::cpu ? "the timings kept drifting (other work on the host, the CPU's "
                                                  "clock and threads moving)"
                                                : "the timings kept drifting (on a GPU, the SM clock stepping)");
    evidence.push_back(fmt::format(
        "sampling spent its whole time budget ({} samples) and the P50 is known to +-{:.1f}% (95% CI over "
        "batches of consecutive samples): {}; a longer --warmup-seconds or --max-seconds pins it better",
        r.latency.n, ci_half * 100, why));
  }
  if (!r.verification.checked) {
    flag(Flag::unverified);
    evidence.push_back("output not verified against the float64 reference");
  } else if (!r.verification.passed || r.status == Status::incorrect) {
    evidence.push_back(fmt::format(
        "verification FAILED: max |O error| {:.3g} over tolerance {:.3g} ({} unwritten elements)",
        r.verification.o_max_abs_err, r.verification.tolerance, r.verification.unwritten));
  }

  // Flags go out in the documented order whatever order they were raised in.
  std::sort(d.flags.begin(), d.flags.end());
  for (const auto& step : next_steps) d.next_step += (d.next_step.empty() ? "" : "; ") + step;
  return d;
}

void annotate(Results& results) {
  for (auto& r : results.records) {
    if (r.status == Status::ok || r.status == Status::incorrect)
      r.diagnosis = diagnose(r, results.context);
    else
      r.diagnosis.reset();
  }
}

}  // namespace attnprof::core
