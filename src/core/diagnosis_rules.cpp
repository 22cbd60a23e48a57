#include "core/diagnosis_rules.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/text.hpp"
#include "core/thresholds.hpp"

namespace attnprof::core {

namespace {

// The score-sized tensors a materialized kernel moves through memory: the forward's S and P, the
// backward's S, P, dP and dS (core/cost_model.hpp).
std::string score_buffers_text(const Shape& s) { return s.backward() ? "S, P, dP and dS" : "S and P"; }

using text::giga;
using text::human;
using text::pct;
using text::tera_bytes;

using Found = std::optional<Finding>;

Finding verdict(Verdict v) {
  Finding out;
  out.verdict = v;
  return out;
}
Finding flag(Flag f) {
  Finding out;
  out.flag = f;
  return out;
}
Finding observation(std::string line) {
  Finding out;
  out.evidence.push_back(std::move(line));
  return out;
}

// ---- Shared wording ------------------------------------------------------------------------------------

std::string pipe_text(const DiagnosisFacts& f) {
  switch (f.pipes.pipe.value_or(ComputePipe::sm)) {
    case ComputePipe::tensor: return "the tensor pipe";
    case ComputePipe::fma: return "the FMA pipe";
    default: return "compute";
  }
}
std::string level_text(const DiagnosisFacts& f) {
  return std::string(level_name(f.memory.level.value_or(MemoryLevel::on_chip)));
}
double mem_pct(const DiagnosisFacts& f) { return f.memory.level_pct.value_or(0); }
double compute_pct(const DiagnosisFacts& f) { return f.sol.compute_pct.value_or(0); }
double pipe_pct(const DiagnosisFacts& f) { return f.pipes.pct.value_or(0); }
bool sol_known(const DiagnosisFacts& f) { return f.sol.compute_pct && f.memory.level_pct && f.pipes.pct; }
bool neither_busy(const DiagnosisFacts& f) {
  return compute_pct(f) < kSolLatencyBelowPct && mem_pct(f) < kSolLatencyBelowPct;
}
bool on_compute_roof(const DiagnosisFacts& f) {
  return f.roof.bound == Bound::compute && f.roof.pct_of_clock_scaled_roof &&
         *f.roof.pct_of_clock_scaled_roof >= kComputeRoofSharePct;
}
bool low_occupancy(const DiagnosisFacts& f) {
  return !f.r().occupancy.limiter.empty() && f.theoretical_occupancy_pct > 0 &&
         f.theoretical_occupancy_pct < kOccupancyBoundBelowPct;
}
bool latency_exposed(const DiagnosisFacts& f) {
  return f.stalls.known() && *f.stalls.issue_active_pct < kIssueActiveBusyPct &&
         *f.stalls.latency_share >= kLatencyStallShareFrom;
}
// The decode short-call rule on the numbers decode_view computed (diagnosis_decode.hpp).
bool short_call(const DiagnosisFacts& f) {
  const DiagnosisMetrics& m = f.decode.metrics;
  if (!f.decode.decode || !m.hbm_stream_us || !m.short_call_limit_us || !m.fixed_time_share) return false;
  const double beyond_us = std::max(0.0, f.launch.p50_us - *m.hbm_stream_us);
  return *m.hbm_stream_us < *m.short_call_limit_us && *m.fixed_time_share >= kDecodeFixedTimeShareFrom &&
         beyond_us <= *m.short_call_limit_us;
}

// "compute throughput 85% is over 80%: saturated", for the verdicts the SOL numbers decide.
void note_saturation(const DiagnosisFacts& f, Finding& out) {
  const double c = compute_pct(f), mem = mem_pct(f);
  if (c <= kSolSaturatedPct && mem <= kSolSaturatedPct) return;
  const bool compute_hi = c >= mem;
  out.evidence.push_back(fmt::format("{} throughput {:.0f}% is over {:.0f}%: saturated",
                                     compute_hi ? "compute" : level_text(f), compute_hi ? c : mem, kSolSaturatedPct));
}

std::string compute_next_step(const DiagnosisFacts& f) {
  const bool roof = on_compute_roof(f);
  const double shown = roof ? *f.roof.pct_of_clock_scaled_roof : pipe_pct(f);
  const char* of_what = roof ? "of the clock-scaled roof" : "of the compute pipe's peak";
  // The non-MMA work of a tile: the softmax, or in a backward P's recomputed exp2 and dS.
  const bool backward = f.r().shape.backward();
  return f.pipes.on_wgmma
             ? fmt::format("at {:.0f}% {} on wgmma: fewer FLOPs (skip fully masked causal tiles), fewer non-MMA "
                           "instructions per tile ({}), or more of {} hidden under the MMAs",
                           shown, of_what, backward ? "P's exp2 and dS" : "softmax",
                           backward ? "them" : "the softmax")
             : fmt::format("at {:.0f}% {}: a faster main loop (wgmma + TMA, warp specialisation as in "
                           "FlashAttention-3) or fewer FLOPs (skip fully masked causal tiles)",
                           shown, of_what);
}

void add_compute_next_steps(const DiagnosisFacts& f, Finding& out) {
  out.next_steps.push_back(compute_next_step(f));
  if (f.decode.decode)
    if (std::string step = decode_compute_next_step(f.r(), f.work.flops_vs_cost()); !step.empty())
      out.next_steps.push_back(std::move(step));
}

// L2 re-reads shown by the hit rate (or, without it, by the L2 bytes over the DRAM bytes).
bool l2_rereads_shown(const MemoryFacts& mem) {
  return mem.l2_hit_rate_pct ? *mem.l2_hit_rate_pct >= kL2RereadHitRatePct : mem.l2_rereads.value_or(false);
}

// A backward call (pass bwd or fwd_bwd, whose backward is most of its time) moves other bytes than the
// forward: in FlashAttention-2's design (fused's, fused-sm90's) each CTA owns a block of keys and walks
// the query rows, so Q and dO are what is re-read, and dQ is summed over the key blocks (fp32 atomics or
// reductions into an accumulator).
std::string memory_next_step(const DiagnosisFacts& f) {
  const MemoryLevel level = f.memory.level.value_or(MemoryLevel::on_chip);
  const double level_pct = mem_pct(f);
  const bool backward = f.r().shape.backward();
  const std::string hbm = f.memory.dram_pct ? fmt::format(" (HBM at {:.0f}%)", *f.memory.dram_pct) : std::string();
  switch (level) {
    case MemoryLevel::dram:
      return backward ? fmt::format("at {:.0f}% of HBM bandwidth: move fewer bytes (Q and dO re-read per block of "
                                    "keys, dQ's fp32 accumulator zeroed, summed and converted) or overlap loads better",
                                    level_pct)
                      : fmt::format("at {:.0f}% of HBM bandwidth: move fewer bytes (re-read K/V less, lower-precision "
                                    "K/V, grouped-query heads) or overlap loads better",
                                    level_pct);
    case MemoryLevel::l2:
      if (!l2_rereads_shown(f.memory))
        return fmt::format("L2 at {:.0f}% of its throughput{}: fewer L2 accesses per byte of HBM traffic (wider, "
                           "fully used sectors; loads that do not go through L2 twice)",
                           level_pct, hbm);
      return backward ? fmt::format("L2 at {:.0f}% of its throughput{}: a backward over blocks of keys "
                                    "(FlashAttention-2's) re-reads Q and dO from L2 for every block and adds its part "
                                    "of dQ there in fp32; more keys per CTA (fewer passes over Q and dO, fewer dQ "
                                    "additions), the CTAs of one head scheduled together, or dQ in a pass of its own",
                                    level_pct, hbm)
                      : fmt::format("L2 at {:.0f}% of its throughput{}: K/V are re-read from L2 by many CTAs; more "
                                    "query rows per CTA (fewer passes over K/V), CTAs of one head scheduled together, "
                                    "or TMA multicast across a cluster",
                                    level_pct, hbm);
    case MemoryLevel::l1:
      // On wgmma the operands already come from shared memory: what is left is fewer bytes per MMA and
      // fewer trips through it (fused-sm90's backward stages dS and dQ there).
      if (f.pipes.on_wgmma)
        return fmt::format(
            "L1/shared memory at {:.0f}% of its throughput{}, on wgmma, which reads its operands there: fewer bytes "
            "per MMA (larger tiles, so each {} tile feeds more MMAs; an operand from registers, wgmma's RS form), "
            "fewer {} round trips through shared memory, and no bank conflicts in their stores",
            level_pct, hbm, backward ? "Q, dO, K or V" : "Q or K/V", backward ? "dS and dQ" : "staging");
      return fmt::format(
          "L1/shared memory at {:.0f}% of its throughput{}: fewer shared-memory reads per FLOP (larger per-warp "
          "tiles so each {} fragment feeds more MMAs, {}wgmma reading operands straight from shared memory), and no "
          "bank conflicts",
          level_pct, hbm, backward ? "Q, dO, K or V" : "K/V", backward ? "" : "Q kept in registers, ");
    case MemoryLevel::on_chip:
      return fmt::format(
          "memory throughput {:.0f}%{} is on chip: fewer L2/shared-memory accesses per FLOP; collect the per-level "
          "counters (the default set has them) to tell L2 from L1/shared",
          level_pct, hbm);
  }
  return {};
}

// What the warps issued, by class (counted with `sweep --stalls`): the classes a latency-bound point
// spends its issue slots on, beside the MMAs.
void note_mix(const DiagnosisFacts& f, Finding& out) {
  if (!f.mix) return;
  constexpr size_t kClassesNamed = 3;
  out.evidence.push_back(fmt::format(
      "warp instructions by class (counters): {} of {} executed{}", largest_classes_text(*f.mix, kClassesNamed),
      text::count(f.mix->warp_instructions),
      f.mix->per_kflop ? fmt::format(", {:.3g} per 1k FLOP", *f.mix->per_kflop) : std::string()));
}

// The lines of a point where neither unit is busy: both throughputs, then issue slots and stalls.
void note_idle(const DiagnosisFacts& f, Finding& out) {
  out.evidence.push_back(fmt::format("compute {:.0f}% and memory {:.0f}% ({}) are both under {:.0f}%: neither unit is busy",
                                     compute_pct(f), mem_pct(f), level_text(f), kSolLatencyBelowPct));
  const StallFacts& s = f.stalls;
  if (s.known())
    out.evidence.push_back(fmt::format(
        "issue slots used {:.0f}% of active cycles; dependency stalls (long/short scoreboard, wait) are {:.0f}% of the "
        "warps' resident cycles{}",
        *s.issue_active_pct, *s.latency_share * 100,
        s.top.empty() ? std::string() : fmt::format(", the largest reason {} ({:.0f}%)", s.top, s.top_share * 100)));
  note_mix(f, out);
}

std::string occupancy_text(const DiagnosisFacts& f) {
  const Occupancy& occ = f.r().occupancy;
  return fmt::format(
      "theoretical occupancy {:.0f}% (limited by {}, {} blocks/SM of {} threads, {} registers/thread, {} B shared "
      "memory/block){}",
      f.theoretical_occupancy_pct, occ.limiter, occ.blocks_per_sm, occ.threads_per_block, occ.registers_per_thread,
      occ.smem_bytes_per_block,
      f.achieved_occupancy_pct ? fmt::format(", achieved {:.0f}%", *f.achieved_occupancy_pct) : std::string());
}

void tensor_overlap_step(const DiagnosisFacts& f, Finding& out) {
  const auto tensor = f.pipes.tensor_pct;
  if (tensor && !f.traffic.materialized && !f.pipes.on_wgmma && *tensor >= kTensorPipeOverlapFromPct)
    out.next_steps.push_back(
        f.r().shape.backward()
            ? fmt::format("the tensor pipe runs {:.0f}% of cycles and waits while each warp recomputes P's exp2 and "
                          "forms dS: overlap that work of one block with the MMAs of the next (warp specialisation "
                          "as in FlashAttention-3's backward, wgmma on Hopper)",
                          *tensor)
            : fmt::format("the tensor pipe runs {:.0f}% of cycles and waits while each warp does its softmax: overlap "
                          "the softmax of one tile with the MMAs of the next (warp-specialised ping-pong as in "
                          "FlashAttention-3, wgmma on Hopper)",
                          *tensor));
}

// ---- Observations: what the numbers rest on ------------------------------------------------------------

Found counted_flops(const RuleInput& in) {
  const WorkFacts& w = in.facts.work;
  const auto ratio = w.flops_vs_cost();
  if (!ratio) return std::nullopt;
  std::string line = fmt::format("counted {}FLOP ({}) = {:.2f}x the cost model's {}FLOP", giga(*w.counted_flops),
                                 w.counted_flops_source, *ratio, giga(w.exact_flops));
  const double padded_share = 1 - 1 / *ratio;
  if (padded_share >= 0.005)
    line += fmt::format(": the roofline places the point on the exact FLOPs; the other {:.0f}% of the counted ones "
                        "are padded or redundant work, the kernel's waste",
                        padded_share * 100);
  return observation(std::move(line));
}

Found dram_bytes(const RuleInput& in) {
  const WorkFacts& w = in.facts.work;
  Finding out;
  if (w.counters_ok && !w.writes_trusted && w.dram_write)
    out.evidence.push_back(fmt::format("writes: {} counted on replayed passes, not the call's; the outputs' {} are used",
                                       text::bytes(*w.dram_write), text::bytes(w.min_bytes_write)));
  if (w.bytes_source == BytesSource::minimum_over_counts)
    out.evidence.push_back(fmt::format(
        "DRAM counted {}{} in all, under the cost model's minimum {} (inputs already in L2, or a tail not measured): "
        "the roofline uses the minimum",
        text::bytes(*w.measured_bytes), w.l2_tail && w.writes_trusted ? " with the L2 tail" : "",
        text::bytes(w.min_bytes())));
  if (out.evidence.empty()) return std::nullopt;
  return out;
}

Found roofline(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const RoofFacts& roof = f.roof;
  if (!roof.known && !roof.missing.empty()) return observation(roof.missing + ": the roofline position is unknown");
  if (!roof.known)
    return observation("no compute/bandwidth ceilings in the results (and no datasheet for '" + f.context->device.name +
                       "'): the roofline position is unknown");
  if (!roof.intensity || !roof.attainable_flops_per_s) return std::nullopt;
  std::string line = fmt::format("intensity {} FLOP/B ({} / {}) is {} the {} ridge {} FLOP/B; the roof there is {}",
                                 human(*roof.intensity), "exact FLOPs", to_string(f.work.bytes_source),
                                 roof.bound == Bound::memory ? "below" : "above", to_string(f.r().shape.dtype),
                                 human(roof.ridge_flop_per_byte), text::flop_rate(*roof.attainable_flops_per_s, f.r().backend));
  if (roof.pct_of_roof) {
    line += fmt::format(", it reaches {} = {:.0f}% of it", text::flop_rate(*roof.achieved_flops_per_s, f.r().backend),
                        *roof.pct_of_roof);
    if (*roof.pct_of_clock_scaled_roof != *roof.pct_of_roof)
      line += fmt::format(" ({:.0f}% of the roof scaled to the {:.0f} MHz it ran at)", *roof.pct_of_clock_scaled_roof,
                          f.r().clock.sm_mhz_median);
  }
  return observation(line + fmt::format(" (ceilings: {}{})", roof.source,
                                        roof.roof_sm_mhz ? fmt::format("; compute roof at the point's {:.0f} MHz SM clock",
                                                                       *roof.roof_sm_mhz)
                                                         : std::string()));
}

Found speed_of_light(const RuleInput& in) {
  const SolFacts& sol = in.facts.sol;
  if (!sol.compute_pct || !sol.memory_pct) return std::nullopt;
  return observation(fmt::format("speed of light: compute {:.0f}%, memory {:.0f}% ({})", *sol.compute_pct,
                                 *sol.memory_pct, to_string(*sol.source)));
}

Found memory_level(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const MemoryFacts& mem = f.memory;
  if (!mem.per_level()) {
    if (f.counters_ok() && mem.level && !mem.how.empty()) return observation(mem.how);
    return std::nullopt;
  }
  std::string line = "memory levels (% of each level's peak):";
  if (mem.dram_counted && mem.dram_pct) {
    line += fmt::format(" HBM {:.0f}%", *mem.dram_pct);
    if (f.roof.achieved_bytes_per_s && f.roof.known)
      line += fmt::format(" ({} of the {} ceiling)", tera_bytes(*f.roof.achieved_bytes_per_s),
                          tera_bytes(f.roof.bw_bytes_per_s));
  }
  if (mem.l2_pct) {
    line += fmt::format(", L2 {:.0f}%", *mem.l2_pct);
    std::vector<std::string> l2;
    if (mem.l2_bytes && f.launch.p50_us > 0) {
      const double rate = *mem.l2_bytes / (f.launch.p50_us * 1e-6);
      l2.push_back(mem.l2_bw_bytes_per_s ? fmt::format("{} of the {} L2 ceiling", tera_bytes(rate),
                                                       tera_bytes(*mem.l2_bw_bytes_per_s))
                                         : tera_bytes(rate));
    }
    if (mem.l2_over_dram) l2.push_back(fmt::format("{:.2f}x the DRAM bytes", *mem.l2_over_dram));
    if (mem.l2_hit_rate_pct) l2.push_back(fmt::format("hit rate {:.1f}%", *mem.l2_hit_rate_pct));
    if (!l2.empty()) {
      line += " (";
      for (size_t i = 0; i < l2.size(); ++i) line += (i ? ", " : "") + l2[i];
      line += ")";
    }
  }
  if (mem.l1_pct) line += fmt::format(", L1/shared {:.0f}%", *mem.l1_pct);
  if (mem.l2_explained_by_dram && mem.dram_pct && mem.l2_pct) {
    const double dram = *mem.dram_pct, l2 = *mem.l2_pct;
    std::string why;
    if (dram >= kSolSaturatedPct)
      why = fmt::format("HBM is saturated (at least {:.0f}%)", kSolSaturatedPct);
    else if (l2 - dram < kSolDominanceMarginPct)
      why = fmt::format("L2 leads HBM by under {:.0f} points", kSolDominanceMarginPct);
    else
      why = fmt::format("its traffic shows no re-reads (L2 bytes at least {:g}x the DRAM bytes{})", kL2RereadBytesRatio,
                        mem.l2_hit_rate_pct ? fmt::format(", hit rate at least {:.0f}%", kL2RereadHitRatePct) : "");
    line += fmt::format("; L2 is busier than HBM, but every DRAM byte passes L2 twice (fill and read) and {}: HBM "
                        "is the level that binds",
                        why);
  }
  return observation(line);
}

Found compute_pipes(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const PipeFacts& p = f.pipes;
  if (p.tensor_pct || p.fma_pct) {
    std::string line = "compute pipes:";
    if (p.tensor_pct) line += fmt::format(" tensor {:.0f}% of active cycles", *p.tensor_pct);
    if (p.fma_pct) line += fmt::format("{} FMA {:.0f}%", p.tensor_pct ? "," : "", *p.fma_pct);
    if (!p.fma_pct) line += " (FMA pipe not collected)";
    return observation(line);
  }
  if (f.counters_ok() && f.sol.compute_pct)
    return observation("pipe counters not collected: sm__throughput stands in for the tensor and FMA pipes");
  return std::nullopt;
}

Found launches(const RuleInput& in) {
  if (in.facts.launches_line.empty()) return std::nullopt;
  return observation(in.facts.launches_line);
}

Found host_bound(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (!f.host_bound) return std::nullopt;
  Finding out = flag(Flag::host_bound);
  out.evidence.push_back(fmt::format(
      "enqueueing one call takes {:.3g} us on the host, longer than its {:.3g} us on the GPU: calls back to back would "
      "leave the GPU waiting for the host (the GPU time above excludes that wait)",
      f.r().launch_overhead_us, f.launch.p50_us));
  out.next_steps.push_back("capture the calls in a CUDA graph, or put more work in each call, so the host keeps ahead");
  return out;
}

Found counters_unavailable(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (f.counters_ok()) return std::nullopt;
  const Record& r = f.r();
  std::string why = r.backend == BackendKind::cpu ? "CPU backend: no hardware counters"
                                                  : fmt::format("counters {}", to_string(r.counters.status));
  // The CPU backend's reason is that same sentence: once is enough.
  if (!r.counters.reason.empty() && r.counters.reason != why) why += ": " + r.counters.reason;
  // The CPU backend never has counters: a flag on every one of its points would say nothing, so
  // there it is an observation alone.
  Finding out = r.backend == BackendKind::cpu ? Finding{} : flag(Flag::counters_unavailable);
  out.evidence.push_back(why + "; FLOPs and DRAM bytes come from the cost model");
  return out;
}

Found decode(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (!f.decode.decode) return std::nullopt;
  const DecodeView& v = f.decode.view;
  Finding out = observation(v.evidence);
  if (v.short_stream && !v.short_call && f.launch.p50_us > 0 && !f.launch.launch_bound())
    out.evidence.push_back(v.short_call_evidence);
  return out;
}

// ---- Verdicts, in the order they are decided --------------------------------------------------------------

Found no_latency(const RuleInput& in) {
  if (in.facts.launch.p50_us > 0) return std::nullopt;
  Finding out = verdict(Verdict::unknown);
  out.evidence.push_back("no latency samples: nothing to place against the ceilings");
  out.next_steps.push_back("time the point (it has no P50) before diagnosing it");
  return out;
}

Found launch_bound(const RuleInput& in) {
  const LaunchFacts& l = in.facts.launch;
  if (!l.launch_bound()) return std::nullopt;
  Finding out = verdict(Verdict::launch_bound);
  const char* plural = l.launches == 1 ? "" : "es";
  out.evidence.push_back(
      l.latency_us > 0
          ? fmt::format("P50 {:.3g} us over {} kernel launch{}: under {:.0f}x the {:.3g} us an empty kernel's launch "
                        "takes on this GPU (context.ceilings.launch_latency_us) per launch, the fixed cost of each "
                        "launch is a large part of the call",
                        l.p50_us, l.launches, plural, kLaunchBoundLatencyMultiple, l.latency_us)
          : fmt::format("P50 {:.3g} us over {} kernel launch{}: under {:.0f} us of GPU time per launch, the fixed cost "
                        "of each launch is a large part of the call (no empty-kernel launch latency in the results, "
                        "context.ceilings.launch_latency_us: the rule falls back to {:.0f} us per launch)",
                        l.p50_us, l.launches, plural, kLaunchBoundUsPerLaunch, kLaunchBoundUsPerLaunch));
  out.next_steps.push_back(
      "the call takes about as long as launching it: put more work in one call (more heads, batch or sequence) or "
      "replay calls from a CUDA graph; kernel tuning will not show here");
  return out;
}

Found decode_short_call(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (!short_call(f)) return std::nullopt;
  Finding out = verdict(Verdict::launch_bound);
  out.evidence.push_back(f.decode.view.short_call_evidence);
  out.next_steps.push_back(f.decode.view.short_call_next_step);
  return out;
}

Found no_ceilings(const RuleInput& in) {
  if (sol_known(in.facts)) return std::nullopt;
  Finding out = verdict(Verdict::unknown);
  if (!in.facts.roof.missing.empty())
    out.next_steps.push_back(fmt::format("collect counters to diagnose the point by its speed of light: the ceilings "
                                         "give it no roof ({})",
                                         in.facts.roof.missing));
  else
    out.next_steps.push_back(
        "record ceilings (a GPU run measures them; a known device name selects its datasheet) to place the point on "
        "the roofline");
  return out;
}

Found compute_roof(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (!on_compute_roof(f)) return std::nullopt;
  Finding out = verdict(Verdict::compute_bound);
  note_saturation(f, out);
  out.evidence.push_back(fmt::format(
      "the point reaches {:.0f}% of the compute roof scaled to its SM clock (at least {:.0f}%): compute-bound whatever "
      "the throughput counters read ({} {:.0f}%, {} {:.0f}%)",
      *f.roof.pct_of_clock_scaled_roof, kComputeRoofSharePct, pipe_text(f), pipe_pct(f), level_text(f), mem_pct(f)));
  add_compute_next_steps(f, out);
  return out;
}

Found occupancy_bound(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (!f.counters_ok() || !neither_busy(f) || !low_occupancy(f) || !latency_exposed(f) || f.pipes.on_wgmma)
    return std::nullopt;
  Finding out = verdict(Verdict::occupancy_bound);
  note_idle(f, out);
  const Occupancy& occ = f.r().occupancy;
  out.evidence.push_back(occupancy_text(f) + fmt::format(
      ": the schedulers issue on under {:.0f}% of cycles and the warps mostly wait on results (at least {:.0f}% of "
      "their cycles), which more resident warps would hide",
      kIssueActiveBusyPct, kLatencyStallShareFrom * 100));
  out.next_steps.push_back(fmt::format(
      "occupancy is capped at {:.0f}% by {}: use fewer {} per block so more blocks fit on an SM, or keep more loads "
      "in flight per warp",
      f.theoretical_occupancy_pct, occ.limiter,
      occ.limiter == "registers" ? "registers" : occ.limiter == "shared_memory" ? "bytes of shared memory" : "threads"));
  tensor_overlap_step(f, out);
  return out;
}

// An unfused call (S and P in HBM): fusing is the step, whatever the verdict.
std::string fuse_step(const DiagnosisFacts& f) {
  const double min_bytes = f.work.min_bytes();
  return fmt::format(
      "fuse {} so that {} ({} of the minimum bytes) never leave the chip",
      f.r().shape.backward() ? "the backward's products (a FlashAttention-2 backward)"
                             : "QK^T, softmax and PV (the fused kernel)",
      score_buffers_text(f.r().shape), pct(min_bytes > 0 ? f.r().cost.sp_bytes / min_bytes * 100 : 0));
}

// An unfused call where neither unit is busy is a chain of kernels (GEMMs, softmax passes), not one kernel
// whose loads could be pipelined deeper: fusing is the step, and short of it, the launches that are
// themselves latency-bound (per-launch counters) are where its time goes without saturating a unit.
void unfused_idle_steps(const DiagnosisFacts& f, Finding& out) {
  out.next_steps.push_back(fuse_step(f));
  std::vector<const LaunchDiagnosis*> idle;  // a launch has a verdict only with both throughputs
  for (const LaunchDiagnosis& l : f.launches)
    if (l.verdict == Verdict::latency_bound) idle.push_back(&l);
  if (idle.empty()) return;
  std::ranges::sort(idle, std::greater{}, &LaunchDiagnosis::time_share);
  std::vector<std::string> names;
  for (const LaunchDiagnosis* l : idle)
    names.push_back(fmt::format("{} ({:.0f}% of GPU time, compute {:.0f}%, memory {:.0f}%)", l->name,
                                l->time_share * 100, *l->compute_sol_pct, *l->memory_sol_pct));
  out.next_steps.push_back(fmt::format(
      "short of fusing, the launches where neither unit is busy: {}; keep more independent loads in flight per thread "
      "there",
      fmt::join(names, ", ")));
}

Found latency_bound_idle(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (!f.counters_ok() || !neither_busy(f)) return std::nullopt;
  Finding out = verdict(Verdict::latency_bound);
  note_idle(f, out);
  const bool low = low_occupancy(f);
  const StallFacts& s = f.stalls;
  if (low && f.pipes.on_wgmma) {
    out.evidence.push_back(occupancy_text(f) + fmt::format(
        ", by design: a wgmma kernel ({:.0f} tensor ops per instruction, over {:.0f}) runs one warp-specialised CTA "
        "per SM and hides latency inside it, so it is not called occupancy-bound",
        f.pipes.ops_per_instruction, kWgmmaOpsPerInstructionAbove));
  } else if (low && !s.known()) {
    out.evidence.push_back(occupancy_text(f) +
                           ", but the issue-slot and stall counters (smsp__issue_active, "
                           "smsp__average_warps_issue_stalled_*) were not collected: occupancy is not shown to be what "
                           "limits");
  } else if (low) {
    out.evidence.push_back(occupancy_text(f) + fmt::format(
        ", by design: {} , so more resident warps would not help",
        *s.issue_active_pct >= kIssueActiveBusyPct
            ? fmt::format("the issue slots are busy ({:.0f}%, at least {:.0f}%)", *s.issue_active_pct, kIssueActiveBusyPct)
            : fmt::format("the warps wait on results only {:.0f}% of their cycles (under {:.0f}%)", *s.latency_share * 100,
                          kLatencyStallShareFrom * 100)));
  }
  if (f.pipes.on_wgmma && low)
    out.next_steps.push_back(fmt::format(
        "occupancy is {:.0f}% by design (one warp-specialised CTA per SM on wgmma): latency is hidden inside the CTA, "
        "so {}",
        f.theoretical_occupancy_pct,
        f.r().shape.backward()
            ? "deepen the Q/dO ring, overlap more of P's exp2 and dS with the MMAs, or give the consumer warpgroups "
              "more keys"
            : "deepen the K/V ring, overlap more of the softmax with the MMAs, or give the consumer warpgroups more rows"));
  else if (f.r().backend == BackendKind::cpu)
    out.next_steps.push_back(
        "neither unit is busy: keep every core busy with independent (batch, head, query-tile) work, vectorise the "
        "inner products, and block K/V so that they stay in cache");
  else if (f.traffic.materialized)
    unfused_idle_steps(f, out);
  else
    out.next_steps.push_back(fmt::format(
        "neither unit is busy: put more work in flight per SM (more blocks or warps, deeper pipelining of {} loads) "
        "or remove serialising steps",
        f.r().shape.backward() ? "the Q and dO" : "K/V"));
  tensor_overlap_step(f, out);
  return out;
}

Found compute_bound(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const double pipe = pipe_pct(f), mem = mem_pct(f);
  if (!(pipe >= kSolLatencyBelowPct && pipe - mem >= kSolDominanceMarginPct)) return std::nullopt;
  Finding out = verdict(Verdict::compute_bound);
  note_saturation(f, out);
  out.evidence.push_back(fmt::format("{} at {:.0f}% leads the busiest memory level ({} {:.0f}%) by {:.0f} points "
                                     "(margin {:.0f})",
                                     pipe_text(f), pipe, level_text(f), mem, pipe - mem, kSolDominanceMarginPct));
  add_compute_next_steps(f, out);
  return out;
}

Found memory_bound(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const double pipe = pipe_pct(f), mem = mem_pct(f);
  if (!(mem >= kSolLatencyBelowPct)) return std::nullopt;
  Finding out = verdict(Verdict::memory_bound);
  note_saturation(f, out);
  const std::string level = level_text(f), compute = pipe_text(f);
  out.evidence.push_back(
      mem - pipe >= kSolDominanceMarginPct
          ? fmt::format("{} at {:.0f}% leads {} ({:.0f}%) by {:.0f} points (margin {:.0f}): memory-bound on {}", level,
                        mem, compute, pipe, mem - pipe, kSolDominanceMarginPct, level)
          : fmt::format("{} is busy at {:.0f}% and {} ({:.0f}%) does not lead it by {:.0f} points: memory-bound on {}",
                        level, mem, compute, pipe, kSolDominanceMarginPct, level));
  if (f.traffic.materialized) out.next_steps.push_back(fuse_step(f));
  // A decode point bound by HBM always gets the decode step; the others the level's own.
  if (f.decode.decode && f.memory.level == MemoryLevel::dram)
    out.next_steps.push_back(decode_memory_next_step(f.r(), f.decode.in, f.decode.metrics));
  else if (!f.traffic.materialized)
    out.next_steps.push_back(memory_next_step(f));
  return out;
}

Found latency_bound_issue(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (!f.counters_ok()) return std::nullopt;
  Finding out = verdict(Verdict::latency_bound);
  note_saturation(f, out);
  out.evidence.push_back(fmt::format(
      "the SM is busy (sm__throughput {:.0f}%) but {} ({:.0f}%) does not lead memory ({:.0f}%, under {:.0f}%) by "
      "{:.0f} points: the SM's time goes to issuing other instructions and waiting, not to one unit",
      compute_pct(f), pipe_text(f), pipe_pct(f), mem_pct(f), kSolLatencyBelowPct, kSolDominanceMarginPct));
  note_mix(f, out);
  out.next_steps.push_back(
      "fewer non-MMA instructions per tile (softmax: exp2 with the scale folded in, fewer conversions and shuffles) "
      "and more of them overlapped with the MMAs");
  return out;
}

Found undetermined_without_counters(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  if (f.counters_ok()) return std::nullopt;
  Finding out = verdict(Verdict::unknown);
  out.evidence.push_back(fmt::format(
      "undetermined without counters: the exact FLOPs reach {:.0f}% of the compute ceiling and the {} {:.0f}% of the "
      "bandwidth ceiling, neither at least {:.0f}% and compute not {:.0f} points ahead; the roofline alone cannot tell "
      "latency, occupancy or on-chip traffic apart",
      compute_pct(f), f.work.bytes_measured() ? "DRAM bytes" : "minimum bytes (a lower bound)", mem_pct(f),
      kSolLatencyBelowPct, kSolDominanceMarginPct));
  out.next_steps.push_back(
      f.r().backend == BackendKind::cpu
          ? "neither ceiling is reached: keep every core busy with independent (batch, head, query-tile) work, "
            "vectorise the inner products, and block K/V so that they stay in cache"
          : "collect the counters (a run with CUPTI access, without --no-counters) to tell latency, occupancy and "
            "on-chip traffic apart");
  return out;
}

// ---- Flags ------------------------------------------------------------------------------------------------

// A verdict threshold and the number held against it, for the borderline rule: it moves the number to
// the mirror position across the threshold and decides again.
struct Edge {
  std::string_view quantity;
  std::string_view unit;  // "%", " points", " us", ""
  std::optional<double> (*get)(const DiagnosisFacts&);
  void (*set)(DiagnosisFacts&, double);
  double (*threshold)(const DiagnosisFacts&);
  double (*band)(const DiagnosisFacts&);
};

double sol_band(const DiagnosisFacts&) { return kBorderlineSolPoints; }
double share_band(const DiagnosisFacts&) { return kBorderlineShare; }
double sol_busy(const DiagnosisFacts&) { return kSolLatencyBelowPct; }

const Edge kEdges[] = {
    {"compute throughput", "%", [](const DiagnosisFacts& f) { return f.sol.compute_pct; },
     [](DiagnosisFacts& f, double v) { f.sol.compute_pct = v; }, sol_busy, sol_band},
    {"memory throughput", "%", [](const DiagnosisFacts& f) { return f.memory.level_pct; },
     [](DiagnosisFacts& f, double v) { f.memory.level_pct = v; }, sol_busy, sol_band},
    {"compute pipe", "%", [](const DiagnosisFacts& f) { return f.pipes.pct; },
     [](DiagnosisFacts& f, double v) { f.pipes.pct = v; }, sol_busy, sol_band},
    {"compute lead over memory", " points",
     [](const DiagnosisFacts& f) -> std::optional<double> {
       if (!f.pipes.pct || !f.memory.level_pct) return std::nullopt;
       return *f.pipes.pct - *f.memory.level_pct;
     },
     [](DiagnosisFacts& f, double v) { f.pipes.pct = f.memory.level_pct.value_or(0) + v; },
     [](const DiagnosisFacts&) { return kSolDominanceMarginPct; }, sol_band},
    {"share of the clock-scaled roof", "%", [](const DiagnosisFacts& f) { return f.roof.pct_of_clock_scaled_roof; },
     [](DiagnosisFacts& f, double v) { f.roof.pct_of_clock_scaled_roof = v; },
     [](const DiagnosisFacts&) { return kComputeRoofSharePct; }, sol_band},
    {"theoretical occupancy", "%",
     [](const DiagnosisFacts& f) -> std::optional<double> {
       if (!(f.theoretical_occupancy_pct > 0)) return std::nullopt;
       return f.theoretical_occupancy_pct;
     },
     [](DiagnosisFacts& f, double v) { f.theoretical_occupancy_pct = v; },
     [](const DiagnosisFacts&) { return kOccupancyBoundBelowPct; }, sol_band},
    {"issue-slot use", "%", [](const DiagnosisFacts& f) { return f.stalls.issue_active_pct; },
     [](DiagnosisFacts& f, double v) { f.stalls.issue_active_pct = v; },
     [](const DiagnosisFacts&) { return kIssueActiveBusyPct; }, sol_band},
    {"stall share", "", [](const DiagnosisFacts& f) { return f.stalls.latency_share; },
     [](DiagnosisFacts& f, double v) { f.stalls.latency_share = v; },
     [](const DiagnosisFacts&) { return kLatencyStallShareFrom; }, share_band},
    {"P50", " us",
     [](const DiagnosisFacts& f) -> std::optional<double> {
       if (!(f.launch.p50_us > 0)) return std::nullopt;
       return f.launch.p50_us;
     },
     [](DiagnosisFacts& f, double v) { f.launch.p50_us = v; },
     [](const DiagnosisFacts& f) { return f.launch.limit_us(); },
     [](const DiagnosisFacts& f) { return kBorderlineLaunchFraction * f.launch.limit_us(); }},
    {"decode fixed-time share", "", [](const DiagnosisFacts& f) { return f.decode.metrics.fixed_time_share; },
     [](DiagnosisFacts& f, double v) { f.decode.metrics.fixed_time_share = v; },
     [](const DiagnosisFacts&) { return kDecodeFixedTimeShareFrom; }, share_band},
    {"decode stream time", " us", [](const DiagnosisFacts& f) { return f.decode.metrics.hbm_stream_us; },
     [](DiagnosisFacts& f, double v) { f.decode.metrics.hbm_stream_us = v; },
     [](const DiagnosisFacts& f) { return f.decode.metrics.short_call_limit_us.value_or(0); },
     [](const DiagnosisFacts& f) { return kBorderlineLaunchFraction * f.decode.metrics.short_call_limit_us.value_or(0); }},
};

Found borderline(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  Finding out = flag(Flag::borderline);
  for (const Edge& edge : kEdges) {
    const auto value = edge.get(f);
    const double threshold = edge.threshold(f), band = edge.band(f);
    if (!value || !(band > 0) || std::abs(*value - threshold) > band) continue;
    // The mirror position across the threshold (just under it when the number sits on it).
    const double gap = std::max(std::abs(*value - threshold), band * 1e-3);
    DiagnosisFacts other = f;
    edge.set(other, *value >= threshold ? threshold - gap : threshold + gap);
    const Verdict across = decide_verdict(other).verdict;
    if (across == in.verdict) continue;
    const std::string_view band_unit = edge.unit == "%" ? " points" : edge.unit;
    out.evidence.push_back(fmt::format("borderline: {} at {} {:.3g}{}; within {:.3g}{} of {:.3g}{}: {} on the other side",
                                       to_string(in.verdict), edge.quantity, *value, edge.unit, band, band_unit,
                                       threshold, edge.unit, to_string(across)));
  }
  if (out.evidence.empty()) return std::nullopt;
  return out;
}

Found under_filled(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const Occupancy& occ = f.r().occupancy;
  if (!(occ.waves > 0 && occ.waves < 1)) return std::nullopt;
  Finding out = flag(Flag::under_filled);
  out.evidence.push_back(fmt::format("under-filled: {} blocks fill {:.2f} of a wave ({} SMs x {} blocks/SM)",
                                     occ.grid_blocks, occ.waves, occ.sm_count, occ.blocks_per_sm));
  // A decode call bound by its fixed cost, or already streaming at the HBM roof, is not helped by more
  // CTAs: its next step says what is.
  const bool decode_not_by_ctas =
      f.decode.decode && (in.verdict == Verdict::launch_bound ||
                          (in.verdict == Verdict::memory_bound &&
                           f.decode.metrics.pct_of_hbm_ceiling.value_or(0) >= kSolSaturatedPct));
  if (!decode_not_by_ctas)
    out.next_steps.push_back(
        "the grid does not fill the GPU: split the KV sequence across blocks (split-KV) or run more heads/batch per "
        "call");
  return out;
}

Found tail_effect(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const Record& r = f.r();
  const Occupancy& occ = r.occupancy;
  Finding out = flag(Flag::tail_effect);
  const auto& split = f.tiles.split;
  if (split) {
    if (split->idle_share > kTailWasteShare)
      out.evidence.push_back(fmt::format(
          "tail effect: the persistent grid's {} CTAs take {} work tiles round-robin, {:.2f} per CTA on average and "
          "{:.0f} for the busiest; with the work per tile{} the busiest CTA carries {:.2f}x the mean, so {:.0f}% of the "
          "CTA time is idle at the end",
          split->grid, split->tiles, split->tiles_per_cta_mean, split->tiles_per_cta_max,
          r.shape.causal ? " (key tiles visited under the causal mask)" : "", split->work_max / split->work_mean,
          split->idle_share * 100));
  } else if (occ.waves >= 1) {
    const double slots = std::ceil(occ.waves);
    const double idle_share = (slots - occ.waves) / slots;
    if (idle_share > kTailWasteShare)
      out.evidence.push_back(fmt::format(
          "tail effect: {:.2f} waves, the last wave is {:.0f}% full, {:.0f}% of the launched wave slots idle",
          occ.waves, (occ.waves - std::floor(occ.waves)) * 100, idle_share * 100));
  }
  const auto& tiling = f.tiles.tiling;
  if (tiling && r.shape.varlen()) {
    // A packed batch: every sequence's last query tile is part-filled; the padding share is over all the
    // tiles computed.
    const int64_t tile_rows = tiling->tiling.query_tile_rows;
    int64_t tiles = 0;
    for (int64_t len : r.shape.seq_lens) tiles += (len + tile_rows - 1) / tile_rows;
    const double padded_share =
        tiles > 0 ? 1 - static_cast<double>(r.shape.tokens_q()) / static_cast<double>(tiles * tile_rows) : 0;
    if (padded_share > 1 - kTailTileFillBelow)
      out.evidence.push_back(fmt::format(
          "tail effect: the {} sequences of the packed batch fill their last {}-row query tiles ({}, {} variant) so "
          "partly that {:.1f}% of the query rows computed are padding",
          r.shape.batch, tile_rows, tiling->tiling.family, tiling->tiling.variant, padded_share * 100));
  } else if (tiling) {
    const int64_t tile_rows = tiling->tiling.query_tile_rows;
    const int64_t rows = r.shape.seq_q % tile_rows;
    const int64_t tiles = (r.shape.seq_q + tile_rows - 1) / tile_rows;
    if (rows != 0 && rows < kTailTileFillBelow * static_cast<double>(tile_rows)) {
      const double padded_share = static_cast<double>(tile_rows - rows) / static_cast<double>(tiles * tile_rows);
      out.evidence.push_back(fmt::format(
          "tail effect: seq_q {} leaves the last {}-row query tile ({}, {} variant) with {} rows; {:.1f}% of the query "
          "rows computed are padding",
          r.shape.seq_q, tile_rows, tiling->tiling.family, tiling->tiling.variant, rows, padded_share * 100));
    }
  }
  if (out.evidence.empty()) return std::nullopt;
  out.next_steps.push_back(
      split ? "tail: balance the tiles over the persistent CTAs (a grid that divides the tile count, heaviest tiles "
              "first, or one CTA per tile when the imbalance is large)"
            : "tail: pick a sequence length / block count that fills the last wave and tile, or schedule blocks "
              "persistently");
  return out;
}

// One direction of DRAM traffic against its minimum: excess only over the ratio and over the floor.
bool judge_direction(std::string_view what, std::optional<double> bytes, std::optional<double> ratio, double min_bytes,
                     Finding& out) {
  if (!bytes || !ratio) return false;
  std::string line = fmt::format("DRAM {} {}, {:.2f}x the minimum {}", what, text::bytes(*bytes), *ratio,
                                 text::bytes(min_bytes));
  const bool over = *ratio > kExcessTrafficRatio;
  const bool counted_enough = *bytes >= kExcessTrafficMinBytes;
  if (over && !counted_enough)
    line += fmt::format(" (over {:g}x, but under the {} below which DRAM counts are noise: not judged)",
                        kExcessTrafficRatio, text::bytes(kExcessTrafficMinBytes));
  else if (over)
    line += fmt::format(" (over {:g}x)", kExcessTrafficRatio);
  out.evidence.push_back(line);
  return over && counted_enough;
}

Found excess_traffic(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const WorkFacts& w = f.work;
  const TrafficFacts& t = f.traffic;
  Finding out = flag(Flag::excess_traffic);
  bool excess = false;
  if (t.total_ratio) {
    const bool tail = w.l2_tail && w.writes_trusted;
    out.evidence.push_back(
        tail ? fmt::format("DRAM moved {}B in the call and {}B after it (lines it left dirty in L2), {:.2f}x the "
                           "cost-model minimum {}B",
                           giga(*w.measured_bytes - *w.l2_tail), giga(*w.l2_tail), *t.total_ratio, giga(w.min_bytes()))
             : fmt::format("DRAM moved {}B{}, {:.2f}x the cost-model minimum {}B", giga(*w.measured_bytes),
                           w.writes_trusted ? "" : " (the outputs' minimum standing in for the writes)",
                           *t.total_ratio, giga(w.min_bytes())));
    if (w.read_bytes) {
      excess |= judge_direction("read", w.read_bytes, t.read_ratio, w.min_bytes_read, out);
      excess |= judge_direction(tail ? "wrote (with the L2 tail)" : "wrote", w.writes_trusted ? w.write_bytes : std::nullopt,
                                t.write_ratio, w.min_bytes_write, out);
    } else if (w.writes_trusted) {  // only the combined count: judged as one
      excess |= judge_direction("moved", w.measured_bytes, t.total_ratio, w.min_bytes(), out);
    }
  }
  // A backward that sums dQ over its key blocks in fp32 (plan.dq_atomic: fused's and fused-sm90's) zeroes
  // the accumulator, writes its reduced lines back and reads it for the conversion: up to three times its
  // size beyond the minimum, which counts dQ once in the dtype (less of it reaches DRAM where it stays in
  // L2).
  const auto dq_atomic = f.r().plan.find("dq_atomic");
  if (f.r().shape.backward() && dq_atomic != f.r().plan.end() && dq_atomic->second == 1 && w.measured_bytes &&
      *w.measured_bytes > w.min_bytes()) {
    const Shape& s = f.r().shape;
    const double accumulator = static_cast<double>(s.heads * s.tokens_q() * s.hdim) * 4;
    const double over = *w.measured_bytes - w.min_bytes();
    out.evidence.push_back(fmt::format(
        "dQ is summed over the key blocks in an fp32 accumulator of {}B (plan.dq_atomic): zeroed, its lines written "
        "back and read for the conversion, up to {}B of DRAM traffic, {:.0f}% of the {}B over the minimum",
        giga(accumulator), giga(3 * accumulator), std::min(100.0, 300 * accumulator / over), giga(over)));
  }
  if (t.materialized) {
    out.evidence.push_back(fmt::format("{} are {:.0f}% of the minimum bytes ({}B of {}B): a fused kernel never moves them",
                                       score_buffers_text(f.r().shape), t.sp_share * 100, giga(f.r().cost.sp_bytes),
                                       giga(w.min_bytes())));
    excess |= t.sp_share > kSpShareExcess;
  }
  if (out.evidence.empty()) return std::nullopt;
  if (!excess) out.flag.reset();
  return out;
}

Found throttled(const RuleInput& in) {
  const ClockInfo& c = in.facts.r().clock;
  if (c.throttled_samples <= 0) return std::nullopt;
  Finding out = flag(Flag::throttled);
  out.evidence.push_back(fmt::format("{} samples ran under {:g}% of the {:.0f} MHz SM clock (lowest {:.0f} MHz)",
                                     c.throttled_samples, kThrottledClockFraction * 100, c.sm_mhz_unthrottled,
                                     c.sm_mhz_min));
  return out;
}

Found clock_note(const RuleInput& in) {
  const ClockInfo& c = in.facts.r().clock;
  if (!(c.sm_mhz_median > 0 && c.sm_mhz_unthrottled > 0 && c.sm_mhz_median < kClockNoteBelowFraction * c.sm_mhz_unthrottled))
    return std::nullopt;
  return observation(fmt::format(
      "the SM clock under load was {:.0f} MHz at the median, {:.0f}% of its {:.0f} MHz maximum: compute runs that much "
      "slower than at the maximum clock",
      c.sm_mhz_median, 100 * c.sm_mhz_median / c.sm_mhz_unthrottled, c.sm_mhz_unthrottled));
}

// The warp-state samples (--stalls) of the call's most-sampled kernel: where its warps spend their
// cycles and the source line (or SASS offset) that holds most of them.
Found warp_states(const RuleInput& in) {
  const Record& r = in.facts.r();
  if (!r.stalls || r.stalls->status != SamplingStatus::ok || r.stalls->per_kernel.empty()) return std::nullopt;
  const KernelStalls& k = r.stalls->per_kernel.front();
  const std::string top = dominant_stall(k.reasons);
  if (top.empty()) return std::nullopt;
  std::string where;
  const std::vector<HotSpot>& spots = !k.lines.empty() ? k.lines : k.instructions;
  if (!spots.empty()) {
    const HotSpot& hot = spots.front();
    const std::string hot_top = dominant_stall(hot.reasons);
    where = fmt::format("; its hottest {} holds {:.0f}% of them{}",
                        hot.line > 0 ? fmt::format("source line, {}:{},", hot.file.substr(hot.file.rfind('/') + 1), hot.line)
                                     : fmt::format("instruction, SASS offset 0x{:x},", hot.pc_offset),
                        100.0 * static_cast<double>(hot.samples) / static_cast<double>(k.samples),
                        hot_top.empty() ? std::string()
                                        : fmt::format(", mostly {}", hot_top));
  }
  return observation(fmt::format(
      "warp states (stalls, sampled): {} spends {:.0f}% of its warp samples on {} and {:.0f}% issuing ({:.1f} warp "
      "cycles per issued instruction){}",
      short_kernel_name(k.kernel), 100.0 * stall_share(k.reasons, k.samples, top), top,
      100.0 * stall_share(k.reasons, k.samples, kIssuedReason), cycles_per_issue(k), where));
}

Found noisy(const RuleInput& in) {
  const DiagnosisFacts& f = in.facts;
  const Record& r = f.r();
  Finding out = flag(Flag::noisy);
  if (r.latency.rel_stddev > kNoisyRelStddev)
    out.evidence.push_back(fmt::format("latency spread {:.1f}% (stddev/mean) is over {:.0f}%", r.latency.rel_stddev * 100,
                                       kNoisyRelStddev * 100));
  if (r.sampling_stop == "time_budget" && f.p50_ci_half_share > kNoisyP50CiHalfWidth) {
    const ClockInfo& c = r.clock;
    const bool dipped = c.sm_mhz_median > 0 && c.sm_mhz_min > 0 && c.sm_mhz_min < (1 - kClockDipFraction) * c.sm_mhz_median;
    const std::string why =
        dipped ? fmt::format("the SM clock dipped to {:.0f} MHz, {:.0f}% under its median {:.0f} MHz, within the window "
                             "(a power-capped GPU's power manager does this)",
                             c.sm_mhz_min, 100 * (1 - c.sm_mhz_min / c.sm_mhz_median), c.sm_mhz_median)
               : std::string(r.backend == BackendKind::cpu
                                 ? "the timings kept drifting (other work on the host, the CPU's clock and threads moving)"
                                 : "the timings kept drifting (on a GPU, the SM clock stepping)");
    out.evidence.push_back(fmt::format(
        "sampling spent its whole time budget ({} samples) and the P50 is known to +-{:.1f}% (95% CI over batches of "
        "consecutive samples): {}; a longer --warmup-seconds or --max-seconds pins it better",
        r.latency.n, f.p50_ci_half_share * 100, why));
  }
  if (out.evidence.empty()) return std::nullopt;
  return out;
}

Found verification(const RuleInput& in) {
  const Record& r = in.facts.r();
  if (!r.verification.checked) {
    Finding out = flag(Flag::unverified);
    out.evidence.push_back("output not verified against the float64 reference");
    return out;
  }
  if (!r.verification.passed || r.status == Status::incorrect) {
    std::string text = fmt::format("verification FAILED: max |O error| {:.3g} over tolerance {:.3g} ({} unwritten elements)",
                                   r.verification.o_max_abs_err, r.verification.tolerance, r.verification.unwritten);
    // A backward point's gradients (dq, dk, dv) that failed.
    for (const auto& [name, g] : r.verification.grads)
      if (!g.passed) text += fmt::format("; max |{} error| {:.3g} over tolerance {:.3g}", name, g.max_abs_err, g.tolerance);
    return observation(text);
  }
  return std::nullopt;
}

// ---- The table ------------------------------------------------------------------------------------------

using T = std::string_view;
constexpr T kMemoryLevel[] = {"kSolDominanceMarginPct", "kSolSaturatedPct", "kL2RereadBytesRatio",
                              "kL2RereadHitRatePct", "kDramAccountsWithinPct"};
constexpr T kSolVerdict[] = {"kSolLatencyBelowPct", "kSolDominanceMarginPct"};
constexpr T kLaunchT[] = {"kLaunchBoundLatencyMultiple", "kLaunchBoundUsPerLaunch"};
constexpr T kShortCall[] = {"kDecodeShortCallLaunchLatencies", "kDecodeFixedTimeShareFrom",
                            "kDecodeAssumedLaunchLatencyUs"};
constexpr T kDecodeT[] = {"kDecodeMaxSeqQ", "kDecodeMinKeysPerQuery"};
constexpr T kComputeRoof[] = {"kComputeRoofSharePct", "kSolSaturatedPct", "kWgmmaOpsPerInstructionAbove",
                              "kDecodePaddedFlopsAbove"};
constexpr T kOccupancy[] = {"kSolLatencyBelowPct", "kOccupancyBoundBelowPct", "kIssueActiveBusyPct",
                            "kLatencyStallShareFrom", "kWgmmaOpsPerInstructionAbove", "kTensorPipeOverlapFromPct"};
constexpr T kCompute[] = {"kSolLatencyBelowPct", "kSolDominanceMarginPct", "kSolSaturatedPct",
                          "kWgmmaOpsPerInstructionAbove", "kDecodePaddedFlopsAbove"};
constexpr T kMemory[] = {"kSolLatencyBelowPct", "kSolDominanceMarginPct", "kSolSaturatedPct", "kL2RereadHitRatePct",
                         "kDecodeReadFactorAbove", "kDecodeAtRoofPct"};
constexpr T kBorderline[] = {"kBorderlineSolPoints", "kBorderlineShare", "kBorderlineLaunchFraction"};
constexpr T kUnderFilled[] = {"kSolSaturatedPct"};
constexpr T kTail[] = {"kTailWasteShare", "kTailTileFillBelow"};
constexpr T kExcess[] = {"kExcessTrafficRatio", "kExcessTrafficMinBytes", "kSpShareExcess"};
constexpr T kThrottledT[] = {"kThrottledClockFraction"};
constexpr T kClockT[] = {"kClockNoteBelowFraction"};
constexpr T kNoisyT[] = {"kNoisyRelStddev", "kNoisyP50CiHalfWidth", "kClockDipFraction"};
constexpr T kHostT[] = {"kHostBoundOverheadFactor"};

constexpr std::span<const T> none() { return {}; }

using K = RuleKind;
const Rule kRules[] = {
    {"counted-flops", K::observation, none(), counted_flops},
    {"counters-unavailable", K::flag, none(), counters_unavailable},
    {"dram-bytes", K::observation, none(), dram_bytes},
    {"roofline", K::observation, none(), roofline},
    {"speed-of-light", K::observation, none(), speed_of_light},
    {"memory-level", K::observation, kMemoryLevel, memory_level},
    {"compute-pipes", K::observation, none(), compute_pipes},
    {"launches", K::observation, kSolVerdict, launches},
    {"host-bound", K::flag, kHostT, host_bound},
    {"decode", K::observation, kDecodeT, decode},
    {"no-latency", K::verdict, none(), no_latency},
    {"launch-bound", K::verdict, kLaunchT, launch_bound},
    {"short-call", K::verdict, kShortCall, decode_short_call},
    {"no-ceilings", K::verdict, none(), no_ceilings},
    {"compute-roof", K::verdict, kComputeRoof, compute_roof},
    {"occupancy-bound", K::verdict, kOccupancy, occupancy_bound},
    {"latency-bound", K::verdict, kOccupancy, latency_bound_idle},
    {"compute-bound", K::verdict, kCompute, compute_bound},
    {"memory-bound", K::verdict, kMemory, memory_bound},
    {"latency-bound-issue", K::verdict, kSolVerdict, latency_bound_issue},
    {"undetermined-without-counters", K::verdict, kSolVerdict, undetermined_without_counters},
    {"borderline", K::flag, kBorderline, borderline},
    {"under-filled", K::flag, kUnderFilled, under_filled},
    {"tail-effect", K::flag, kTail, tail_effect},
    {"excess-traffic", K::flag, kExcess, excess_traffic},
    {"throttled", K::flag, kThrottledT, throttled},
    {"clock", K::observation, kClockT, clock_note},
    {"warp-states", K::observation, none(), warp_states},
    {"noisy", K::flag, kNoisyT, noisy},
    {"unverified", K::flag, none(), verification},
};

}  // namespace

std::span<const Rule> diagnosis_rules() { return kRules; }

const Rule* find_rule(std::string_view name) {
  for (const Rule& rule : kRules)
    if (rule.name == name) return &rule;
  return nullptr;
}

Decision decide_verdict(const DiagnosisFacts& f) {
  const RuleInput in{f};
  for (const Rule& rule : kRules) {
    if (rule.kind != RuleKind::verdict) continue;
    if (auto found = rule.apply(in); found && found->verdict)
      return Decision{*found->verdict, &rule, std::move(*found)};
  }
  return {};
}

}  // namespace attnprof::core
