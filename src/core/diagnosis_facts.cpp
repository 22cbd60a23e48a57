#include "core/diagnosis_facts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "core/decode_terms.hpp"
#include "core/metric_names.hpp"
#include "core/stalls.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/thresholds.hpp"

namespace attnprof::core {

namespace {

std::optional<double> metric_of(const KernelCounters& k, const char* name) {
  auto it = k.metrics.find(name);
  if (it == k.metrics.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

// FLOPs the kernel executed by its counters, when they cover the dtype's main math.
void count_flops(const Record& r, WorkFacts& w) {
  w.counted_tensor_ops = counter_total(r, kMetricTensorOpsBf16).value_or(0) + counter_total(r, kMetricTensorOpsFp16).value_or(0);
  const auto ffma = counter_total(r, kMetricFfma);
  const double fp32_flops =
      ffma ? 2 * *ffma + counter_total(r, kMetricFadd).value_or(0) + counter_total(r, kMetricFmul).value_or(0) : 0;
  if (r.shape.dtype == DType::fp32) {
    if (ffma && fp32_flops > 0) {
      w.counted_flops = fp32_flops;
      w.counted_flops_source = "FP32 instruction counters";
    }
    return;
  }
  if (w.counted_tensor_ops > 0) {
    w.counted_flops = w.counted_tensor_ops + fp32_flops;
    w.counted_flops_source = fp32_flops > 0 ? "tensor-op + FP32 counters" : "tensor-op counters";
  }
}

// DRAM bytes: counted reads; counted writes with the L2 tail when they are the call's own, else the
// outputs' minimum; the roofline's bytes never under the cost-model minimum.
void count_bytes(const Record& r, WorkFacts& w) {
  w.counters_ok = r.counters.status == CounterStatus::ok;
  w.writes_trusted = !w.counters_ok || dram_writes_trusted(r.counters);
  if (w.counters_ok) w.l2_tail = finite(r.counters.dram_write_tail_bytes);
  w.dram_read = counter_total(r, kMetricDramRead);
  w.dram_write = counter_total(r, kMetricDramWrite);
  const double tail = w.writes_trusted ? w.l2_tail.value_or(0) : 0;
  if (w.dram_read && w.dram_write) {
    w.read_bytes = *w.dram_read;
    w.write_bytes = w.writes_trusted ? *w.dram_write + tail : w.min_bytes_write;
    w.measured_bytes = *w.read_bytes + *w.write_bytes;
  } else if (auto total = counter_total(r, kMetricDramTotal)) {
    w.dram_total = total;
    w.measured_bytes = *total + tail;
  }
  if (!w.measured_bytes) {
    w.bytes = w.min_bytes();
    w.bytes_source = BytesSource::cost_model;
  } else if (*w.measured_bytes < w.min_bytes()) {
    w.bytes = w.min_bytes();
    w.bytes_source = BytesSource::minimum_over_counts;
  } else {
    w.bytes = *w.measured_bytes;
    w.bytes_source = w.writes_trusted || !w.read_bytes ? BytesSource::counters : BytesSource::counted_reads;
  }
}

// Ceilings to place a point against: the results' own, else the datasheet found by device name; the
// compute roofs scaled to the SM clock the point ran at where they were measured per MHz.
void place_on_roof(const Record& r, const Context& ctx, const WorkFacts& w, RoofFacts& roof) {
  roof.ceilings = ctx.ceilings;
  roof.source = ctx.ceilings.source.empty() ? "results file" : ctx.ceilings.source;
  auto usable = [](const Ceilings& c) { return c.peak_bw_bytes_per_s > 0 && !c.peak_flops_per_s.empty(); };
  if (!usable(roof.ceilings))
    if (auto sheet = find_datasheet(ctx.device.name)) {
      roof.ceilings = datasheet_ceilings(*sheet);
      roof.source = "datasheet (" + sheet->key + ")";
    }
  const double p50_us = r.latency.p50_us;
  if (w.bytes > 0 && w.exact_flops / w.bytes > 0 && std::isfinite(w.exact_flops / w.bytes))
    roof.intensity = w.exact_flops / w.bytes;
  if (p50_us > 0) {
    roof.achieved_flops_per_s = finite(w.exact_flops / (p50_us * 1e-6));
    roof.achieved_bytes_per_s = finite(w.bytes / (p50_us * 1e-6));
  }
  const double max_mhz = r.clock.sm_mhz_unthrottled, median_mhz = r.clock.sm_mhz_median;
  if (median_mhz > 0 && max_mhz > 0) roof.clock_share = std::min(1.0, median_mhz / max_mhz);
  if (!usable(roof.ceilings)) return;
  roof.ceilings = ceilings_at_clock(roof.ceilings, median_mhz);
  roof.bw_bytes_per_s = roof.ceilings.peak_bw_bytes_per_s;
  roof.peak_flops_per_s = peak_flops_for(roof.ceilings, r.shape.dtype);
  if (!(roof.peak_flops_per_s > 0)) {
    roof.missing = missing_roof(roof.ceilings, r.shape.dtype);
    return;
  }
  roof.ridge_flop_per_byte = ridge_point(roof.ceilings, r.shape.dtype);
  roof.known = true;
  if (median_mhz > 0 && !roof.ceilings.flops_per_s_per_mhz.empty()) roof.roof_sm_mhz = median_mhz;
  if (!roof.intensity) return;
  const double attainable = attainable_flops(roof.ceilings, r.shape.dtype, *roof.intensity);
  roof.attainable_flops_per_s = attainable;
  roof.bound = bound_of(roof.ceilings, r.shape.dtype, *roof.intensity);
  if (!roof.achieved_flops_per_s || !(attainable > 0)) return;
  roof.pct_of_roof = *roof.achieved_flops_per_s / attainable * 100;
  const double datasheet = datasheet_attainable_flops(roof.ceilings, r.shape.dtype, *roof.intensity);
  if (datasheet > 0) roof.pct_of_datasheet_roof = *roof.achieved_flops_per_s / datasheet * 100;
  // On the compute roof the ceiling scales with the SM clock; on the memory roof it does not.
  const double scale = *roof.bound == Bound::compute && !roof.roof_sm_mhz ? roof.clock_share : 1.0;
  roof.pct_of_clock_scaled_roof = *roof.pct_of_roof / scale;
}

// The binding memory level (docs/diagnosis.md#rule-memory-level).
void bind_memory_level(const WorkFacts& w, const SolFacts& sol, MemoryFacts& mem) {
  if (sol.derived()) {
    mem.level = MemoryLevel::dram;
    mem.level_pct = sol.memory_pct;
    mem.how = "derived from DRAM bytes vs bandwidth";
    return;
  }
  if (!mem.per_level()) {
    mem.level_pct = sol.memory_pct;
    if (!sol.memory_pct) return;
    const double combined = *sol.memory_pct;
    if (mem.dram_derived_pct && *mem.dram_derived_pct >= combined - kDramAccountsWithinPct) {
      mem.level = MemoryLevel::dram;
      mem.how = fmt::format(
          "per-level counters not collected: DRAM at {:.0f}% (bytes / bandwidth) is within {:.0f} points of the "
          "memory throughput {:.0f}% and accounts for it",
          *mem.dram_derived_pct, kDramAccountsWithinPct, combined);
    } else {
      mem.level = MemoryLevel::on_chip;
      mem.how = mem.dram_derived_pct
                    ? fmt::format("per-level counters not collected: memory throughput {:.0f}% is the busiest of "
                                  "DRAM, L2 and L1/shared, and DRAM (bytes / bandwidth) is only at {:.0f}%, so "
                                  "the traffic is on chip (L2 or L1/shared, not told apart)",
                                  combined, *mem.dram_derived_pct)
                    : "per-level counters not collected: the memory level is not known";
    }
    return;
  }
  // Re-reads: L2 moves well over the DRAM bytes, and (where collected) most sectors hit. The DRAM
  // bytes are the counted ones, writes included where they came from replayed passes (those only add
  // bytes, so they can hide re-reads but never invent them).
  const std::optional<double> dram_in_ranges =
      w.read_bytes ? std::optional(*w.read_bytes + *w.dram_write) : w.dram_total;
  if (mem.l2_bytes && dram_in_ranges) {
    if (*dram_in_ranges > 0) mem.l2_over_dram = *mem.l2_bytes / *dram_in_ranges;
    const bool bytes_reread = *dram_in_ranges > 0 ? *mem.l2_over_dram >= kL2RereadBytesRatio : *mem.l2_bytes > 0;
    mem.l2_rereads = bytes_reread && (!mem.l2_hit_rate_pct || *mem.l2_hit_rate_pct >= kL2RereadHitRatePct);
  } else if (mem.l2_hit_rate_pct) {
    mem.l2_rereads = *mem.l2_hit_rate_pct >= kL2RereadHitRatePct;
  }
  const std::optional<double> dram = mem.dram_counted ? mem.dram_pct : std::nullopt;
  bool l2_binds = mem.l2_pct.has_value();
  if (mem.l2_pct && dram) {
    l2_binds = *dram < kSolSaturatedPct && *mem.l2_pct - *dram >= kSolDominanceMarginPct && mem.l2_rereads.value_or(true);
    mem.l2_explained_by_dram = *mem.l2_pct > *dram && !l2_binds;
  }
  const std::pair<std::optional<double>, MemoryLevel> levels[] = {
      {dram, MemoryLevel::dram}, {l2_binds ? mem.l2_pct : std::nullopt, MemoryLevel::l2}, {mem.l1_pct, MemoryLevel::l1}};
  for (const auto& [pct, level] : levels)
    if (pct && (!mem.level_pct || *pct > *mem.level_pct)) {
      mem.level_pct = pct;
      mem.level = level;
    }
}

// Per-launch speed of light for a call of several launches (the reference's GEMM, softmax, GEMM).
std::optional<double> launch_memory_sol(const KernelCounters& k) {
  std::optional<double> best;
  for (const char* name : {kMetricDramSol, kMetricL2Sol, kMetricL1Sol})
    if (auto v = metric_of(k, name); v && (!best || *v > *best)) best = v;
  return best ? best : metric_of(k, kMetricMemorySol);
}

Verdict sol_verdict(double compute_pct, double memory_pct) {
  if (compute_pct < kSolLatencyBelowPct && memory_pct < kSolLatencyBelowPct) return Verdict::latency_bound;
  if (compute_pct - memory_pct >= kSolDominanceMarginPct) return Verdict::compute_bound;
  return Verdict::memory_bound;
}

void break_down_launches(const Record& r, DiagnosisFacts& f) {
  const auto& launches = r.counters.per_kernel;
  if (r.counters.status != CounterStatus::ok || launches.size() < 2) return;
  double total_ns = 0;
  for (const auto& k : launches) total_ns += metric_of(k, kMetricDuration).value_or(0);
  if (!(total_ns > 0)) return;
  const bool stage_names = launches.size() == r.stages.size();
  std::string line = "per launch:";
  for (size_t i = 0; i < launches.size(); ++i) {
    const auto& k = launches[i];
    const double ns = metric_of(k, kMetricDuration).value_or(0);
    const auto rd = metric_of(k, kMetricDramRead), wr = metric_of(k, kMetricDramWrite);
    const auto c = metric_of(k, kMetricComputeSol), mem = launch_memory_sol(k);
    LaunchDiagnosis entry;
    // A library's launches by their function's name, not the demangled signature (PyTorch's copies run
    // to hundreds of characters of template arguments).
    entry.name = stage_names ? r.stages[i].name : short_kernel_name(k.kernel);
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
    if (entry.dram_bytes_per_s) line += (c && mem ? ", " : " (") + text::tera_bytes(*entry.dram_bytes_per_s);
    if ((c && mem) || entry.dram_bytes_per_s) line += ")";
    line += ";";
    f.launches.push_back(std::move(entry));
  }
  line.back() = '.';
  f.launches_line = std::move(line);
}

StallFacts stall_facts(const Record& r) {
  StallFacts p;
  p.issue_active_pct = counter_total(r, kMetricIssueActive);
  const auto per_issue = counter_total(r, kMetricWarpsPerIssue);
  const auto lg = counter_total(r, kMetricStallLongScoreboard), sh = counter_total(r, kMetricStallShortScoreboard),
             wait = counter_total(r, kMetricStallWait);
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
    const double share = counter_total(r, metric).value_or(0) / *per_issue;
    if (share > p.top_share) {
      p.top_share = share;
      p.top = name;
    }
  }
  return p;
}

}  // namespace

std::string_view to_string(ComputePipe p) {
  switch (p) {
    case ComputePipe::tensor: return "tensor";
    case ComputePipe::fma: return "fma";
    case ComputePipe::sm: return "sm";
    case ComputePipe::derived: return "derived";
  }
  return "?";
}
std::string_view to_string(SolSource s) {
  switch (s) {
    case SolSource::counters: return "counters";
    case SolSource::derived_counted_bytes: return "derived from FLOP/s and DRAM bytes vs the ceilings";
    case SolSource::derived_cost_model: return "derived from the cost model vs the ceilings (memory % is a lower bound)";
  }
  return "?";
}
std::string_view to_string(BytesSource s) {
  switch (s) {
    case BytesSource::counters: return "DRAM counters";
    case BytesSource::counted_reads: return "DRAM counters (reads) + the outputs' minimum writes";
    case BytesSource::minimum_over_counts: return "cost-model minimum (over the counted DRAM bytes)";
    case BytesSource::cost_model: return "cost-model minimum";
  }
  return "?";
}

std::optional<double> WorkFacts::flops_vs_cost() const {
  if (!counted_flops || !(exact_flops > 0)) return std::nullopt;
  return *counted_flops / exact_flops;
}

DiagnosisFacts gather_facts(const Record& r, const Context& ctx) {
  DiagnosisFacts f;
  f.record = &r;
  f.context = &ctx;
  const double p50_us = r.latency.p50_us;

  WorkFacts& w = f.work;
  w.exact_flops = r.cost.flops;
  w.min_bytes_read = r.cost.min_bytes_read;
  w.min_bytes_write = r.cost.min_bytes_write;
  count_flops(r, w);
  count_bytes(r, w);
  place_on_roof(r, ctx, w, f.roof);

  // Speed of light: Nsight Compute's throughput percentages, or the same ratio from the roofline.
  SolFacts& sol = f.sol;
  sol.compute_pct = counter_total(r, kMetricComputeSol);
  sol.memory_pct = counter_total(r, kMetricMemorySol);
  if (sol.compute_pct && sol.memory_pct) {
    sol.source = SolSource::counters;
  } else if (f.roof.known && f.roof.achieved_flops_per_s && f.roof.achieved_bytes_per_s) {
    sol.compute_pct = *f.roof.achieved_flops_per_s / f.roof.peak_flops_per_s * 100;
    sol.memory_pct = *f.roof.achieved_bytes_per_s / f.roof.bw_bytes_per_s * 100;
    sol.source = w.bytes_measured() ? SolSource::derived_counted_bytes : SolSource::derived_cost_model;
  } else {
    sol.compute_pct.reset();
    sol.memory_pct.reset();
  }

  MemoryFacts& mem = f.memory;
  const auto dram_counted = counter_total(r, kMetricDramSol);
  mem.dram_counted = dram_counted.has_value();
  if (w.bytes_measured() && f.roof.achieved_bytes_per_s && f.roof.known)
    mem.dram_derived_pct = *f.roof.achieved_bytes_per_s / f.roof.bw_bytes_per_s * 100;
  mem.dram_pct = dram_counted ? dram_counted : mem.dram_derived_pct;
  mem.l2_pct = counter_total(r, kMetricL2Sol);
  mem.l1_pct = counter_total(r, kMetricL1Sol);
  mem.l2_bytes = counter_total(r, kMetricL2Bytes);
  mem.l2_hit_rate_pct = counter_total(r, kMetricL2HitRate);
  if (ctx.ceilings.l2_bw_bytes_per_s > 0) mem.l2_bw_bytes_per_s = ctx.ceilings.l2_bw_bytes_per_s;
  bind_memory_level(w, sol, mem);
  if (!w.counters_ok && !sol.memory_pct) {
    mem.level.reset();
    mem.level_pct.reset();
  }

  PipeFacts& pipes = f.pipes;
  pipes.tensor_pct = counter_total(r, kMetricTensorPipeActive);
  pipes.fma_pct = counter_total(r, kMetricFmaPipeActive);
  if (pipes.tensor_pct || pipes.fma_pct) {
    const bool tensor_leads = pipes.tensor_pct && (!pipes.fma_pct || *pipes.tensor_pct >= *pipes.fma_pct);
    pipes.pct = tensor_leads ? pipes.tensor_pct : pipes.fma_pct;
    pipes.pipe = tensor_leads ? ComputePipe::tensor : ComputePipe::fma;
  } else if (sol.compute_pct) {
    pipes.pct = sol.compute_pct;
    pipes.pipe = sol.derived() ? ComputePipe::derived : ComputePipe::sm;
  }
  // Tensor operations per tensor instruction tell the MMA shape: 4096 for mma.sync m16n8k16, ten times
  // that and more for Hopper's warpgroup MMA (wgmma), whose kernels run one warp-specialised CTA per SM.
  // The tensor-op counters alone: FP32 work over a handful of stray tensor instructions is no wgmma.
  const auto tensor_inst = counter_total(r, kMetricTensorInstHmma);
  if (w.counted_tensor_ops > 0 && tensor_inst && *tensor_inst > 0)
    pipes.ops_per_instruction = w.counted_tensor_ops / *tensor_inst;
  pipes.on_wgmma = pipes.ops_per_instruction > kWgmmaOpsPerInstructionAbove;

  f.stalls = stall_facts(r);
  f.mix = instruction_mix(r);
  f.theoretical_occupancy_pct = r.occupancy.theoretical_pct;
  // Achieved beside theoretical: both of the launch the occupancy describes (its own counter range);
  // the call's total mixes every launch (a backward's short copies at 90% beside its main kernel's 12%)
  // and stands in only where the record has none.
  f.achieved_occupancy_pct = finite(r.occupancy.achieved_pct);
  if (!f.achieved_occupancy_pct)
    if (auto a = counter_total(r, kMetricAchievedOccupancy)) f.achieved_occupancy_pct = *a;
  break_down_launches(r, f);

  // Launch-bound is a GPU-time finding; the host's enqueue time is another (the host-bound flag).
  LaunchFacts& launch = f.launch;
  launch.p50_us = p50_us;
  launch.launches =
      std::max<int64_t>({1, static_cast<int64_t>(r.launches.size()), static_cast<int64_t>(r.stages.size())});
  launch.latency_us = ctx.ceilings.launch_latency_us > 0 ? ctx.ceilings.launch_latency_us : 0;
  launch.limit_per_launch_us =
      launch.latency_us > 0 ? kLaunchBoundLatencyMultiple * launch.latency_us : kLaunchBoundUsPerLaunch;
  f.host_bound = p50_us > 0 && r.launch_overhead_us > kHostBoundOverheadFactor * p50_us;

  TrafficFacts& t = f.traffic;
  t.materialized = r.cost.sp_bytes > 0;
  t.sp_share = w.min_bytes() > 0 ? r.cost.sp_bytes / w.min_bytes() : 0;
  if (w.measured_bytes && w.min_bytes() > 0) t.total_ratio = *w.measured_bytes / w.min_bytes();
  if (w.read_bytes && w.min_bytes_read > 0) t.read_ratio = *w.read_bytes / w.min_bytes_read;
  if (w.write_bytes && w.writes_trusted && w.min_bytes_write > 0) t.write_ratio = *w.write_bytes / w.min_bytes_write;

  // A decode point is read in bandwidth terms, and a call too short for its bytes is named.
  f.decode.decode = is_decode(r.shape);
  if (f.decode.decode) {
    f.decode.in = {.p50_us = p50_us,
                   .dram_bytes = w.bytes,
                   .bytes_measured = w.bytes_measured(),
                   .min_bytes = w.min_bytes(),
                   .read_factor = t.read_ratio ? t.read_ratio : (w.writes_trusted ? t.total_ratio : std::nullopt),
                   .traffic_ratio = t.total_ratio,
                   .peak_bw_bytes_per_s = f.roof.bw_bytes_per_s,
                   .launches = launch.launches,
                   .launch_latency_us = launch.latency_us,
                   .host_bound = f.host_bound};
    f.decode.view = decode_view(r, f.decode.in, f.decode.metrics);
  }

  if (r.backend == BackendKind::cuda) f.tiles.tiling = tiling_of_record(r);
  if (f.tiles.tiling) f.tiles.split = persistent_split(f.tiles.tiling->tiling, r.shape, f.tiles.tiling->grid_ctas);
  if (p50_us > 0) f.p50_ci_half_share = 0.5 * (r.latency.p50_ci_high_us - r.latency.p50_ci_low_us) / p50_us;
  return f;
}

void fill_metrics(const DiagnosisFacts& f, DiagnosisMetrics& m) {
  const Record& r = f.r();
  const WorkFacts& w = f.work;
  m.p50_us = r.latency.p50_us;
  m.p99_us = r.latency.p99_us;
  m.launch_overhead_us = r.launch_overhead_us;
  if (f.launch.latency_us > 0) m.launch_latency_us = f.launch.latency_us;
  m.flops = w.exact_flops;
  m.flops_source = "cost model (exact)";
  m.counted_flops = w.counted_flops;
  if (w.counted_flops) m.counted_flops_source = w.counted_flops_source;
  m.flops_vs_cost = w.flops_vs_cost();
  if (w.counted_flops && *w.counted_flops > w.exact_flops && *w.counted_flops > 0)
    m.padded_flop_share = 1 - w.exact_flops / *w.counted_flops;
  m.dram_bytes = w.bytes;
  m.bytes_source = std::string(to_string(w.bytes_source));
  m.dram_bytes_read = w.read_bytes;
  m.dram_bytes_write = w.write_bytes;
  if (w.counters_ok && (w.dram_write || w.dram_total)) m.dram_writes_trusted = w.writes_trusted;
  m.min_bytes = w.min_bytes();
  m.sp_bytes = r.cost.sp_bytes;
  m.materialized = f.traffic.materialized;
  if (f.traffic.materialized) m.sp_share = f.traffic.sp_share;

  const RoofFacts& roof = f.roof;
  m.intensity_flop_per_byte = roof.intensity;
  m.achieved_flops_per_s = roof.achieved_flops_per_s;
  m.achieved_bytes_per_s = roof.achieved_bytes_per_s;
  if (roof.known) {
    m.roof_source = roof.source;
    m.peak_flops_per_s = roof.peak_flops_per_s;
    m.peak_bw_bytes_per_s = roof.bw_bytes_per_s;
    m.ridge_flop_per_byte = roof.ridge_flop_per_byte;
    m.roof_sm_mhz = roof.roof_sm_mhz;
    m.attainable_flops_per_s = roof.attainable_flops_per_s;
    if (roof.bound) m.roof_bound = std::string(to_string(*roof.bound));
    m.pct_of_roof = roof.pct_of_roof;
    m.pct_of_clock_scaled_roof = roof.pct_of_clock_scaled_roof;
    m.pct_of_datasheet_roof = roof.pct_of_datasheet_roof;
  }

  m.compute_sol_pct = f.sol.compute_pct;
  m.memory_sol_pct = f.sol.memory_pct;
  if (f.sol.source) m.sol_source = std::string(to_string(*f.sol.source));
  const MemoryFacts& mem = f.memory;
  m.dram_sol_pct = mem.dram_pct;
  if (mem.dram_pct) m.dram_sol_source = mem.dram_counted ? "counters" : "derived from DRAM bytes / bandwidth";
  m.l2_sol_pct = mem.l2_pct;
  m.l1_sol_pct = mem.l1_pct;
  m.memory_level = mem.level;
  m.l2_hit_rate_pct = mem.l2_hit_rate_pct;
  m.l2_over_dram_bytes = finite(mem.l2_over_dram);
  if (mem.l2_pct && mem.dram_counted) m.l2_explained_by_dram = mem.l2_explained_by_dram;
  m.tensor_pipe_active_pct = f.pipes.tensor_pct;
  m.fma_pipe_active_pct = f.pipes.fma_pct;
  m.compute_pipe_pct = f.pipes.pct;
  if (f.pipes.pipe) m.compute_pipe = std::string(to_string(*f.pipes.pipe));
  if (f.pipes.ops_per_instruction > 0) m.tensor_ops_per_instruction = f.pipes.ops_per_instruction;

  m.issue_active_pct = f.stalls.issue_active_pct;
  m.latency_stall_share = f.stalls.latency_share;
  if (!f.stalls.top.empty()) m.top_stall = f.stalls.top;
  const Occupancy& occ = r.occupancy;
  if (occ.theoretical_pct > 0) m.theoretical_occupancy_pct = occ.theoretical_pct;
  m.achieved_occupancy_pct = f.achieved_occupancy_pct;
  if (!occ.limiter.empty()) m.occupancy_limiter = occ.limiter;
  if (f.sol.compute_pct && mem.level_pct && r.latency.p50_us > 0 &&
      (*f.sol.compute_pct > kSolSaturatedPct || *mem.level_pct > kSolSaturatedPct))
    m.saturated = *f.sol.compute_pct >= *mem.level_pct ? "compute" : "memory";

  if (!f.launches.empty()) {
    const auto dominant = std::max_element(f.launches.begin(), f.launches.end(),
                                           [](const auto& a, const auto& b) { return a.time_share < b.time_share; });
    m.dominant_launch = dominant->name;
    m.dominant_launch_time_share = dominant->time_share;
  }
  m.launches_per_call = f.launch.launches;

  if (occ.waves > 0) m.waves = occ.waves;
  if (f.tiles.tiling) {
    m.kernel_variant = f.tiles.tiling->tiling.family + " " + f.tiles.tiling->tiling.variant;
    m.query_tile_rows = f.tiles.tiling->tiling.query_tile_rows;
    m.persistent_grid = f.tiles.split.has_value();
  }
  if (f.tiles.split) {
    m.tail_source = "tiles per CTA";
    m.work_tiles = f.tiles.split->tiles;
    m.tiles_per_cta_max = f.tiles.split->tiles_per_cta_max;
    m.tiles_per_cta_mean = f.tiles.split->tiles_per_cta_mean;
    m.tail_idle_share = f.tiles.split->idle_share;
  } else if (occ.waves >= 1) {
    const double slots = std::ceil(occ.waves);
    m.tail_source = "waves";
    m.tail_idle_share = (slots - occ.waves) / slots;
  }
  if (f.tiles.tiling && !r.shape.varlen()) {
    const int64_t rows = r.shape.seq_q % f.tiles.tiling->tiling.query_tile_rows;
    if (rows != 0) m.last_query_tile_rows = rows;
  }

  m.dram_write_tail_bytes = w.bytes_measured() ? w.l2_tail : std::nullopt;
  m.excess_traffic_ratio = finite(f.traffic.total_ratio);
  m.read_traffic_ratio = finite(f.traffic.read_ratio);
  m.write_traffic_ratio = finite(f.traffic.write_ratio);
  if (r.clock.sm_mhz_median > 0) m.sm_mhz_median = r.clock.sm_mhz_median;
  m.rel_stddev = r.latency.rel_stddev;
  if (f.decode.decode) {
    const DiagnosisMetrics& d = f.decode.metrics;
    m.decode = d.decode;
    m.tokens_per_call = d.tokens_per_call;
    m.kv_cache_bytes = d.kv_cache_bytes;
    m.min_bytes_per_token = d.min_bytes_per_token;
    m.dram_bytes_per_token = d.dram_bytes_per_token;
    m.pct_of_hbm_ceiling = d.pct_of_hbm_ceiling;
    m.hbm_stream_us = d.hbm_stream_us;
    m.short_call_limit_us = d.short_call_limit_us;
    m.fixed_time_share = d.fixed_time_share;
    m.combine_stage = d.combine_stage;
    m.combine_time_share = d.combine_time_share;
    m.kv_tile_keys = d.kv_tile_keys;
  }
}

}  // namespace attnprof::core
