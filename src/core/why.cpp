#include "core/why.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/diagnosis_facts.hpp"
#include "core/errors.hpp"
#include "core/instruction_mix.hpp"
#include "core/metric_names.hpp"
#include "core/stalls.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"

namespace attnprof::core {

namespace {

std::string base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::optional<double> positive(double v) {
  if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
  return v;
}

int64_t count_of(const std::map<std::string, int64_t>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

// A side's warp samples, every kernel of the call pooled: the shares are of the call's samples.
struct Samples {
  int64_t total = 0;
  std::map<std::string, int64_t> states;
  bool ok() const { return total > 0; }
};

Samples samples_of(const Record& r) {
  Samples s;
  if (!r.stalls || r.stalls->status != SamplingStatus::ok) return s;
  for (const KernelStalls& k : r.stalls->per_kernel)
    for (const auto& [state, n] : k.reasons) {
      s.states[state] += n;
      s.total += n;
    }
  return s;
}

// A place in the code, as the two sides can share it: a source line, or a function's SASS offset.
struct Place {
  std::string kernel, file;
  int64_t line = 0;
  uint64_t pc_offset = 0;
  bool has_line() const { return line > 0; }
};

// The hot spots a kernel's samples name: its source lines when it has line info, else its instructions.
const std::vector<HotSpot>& spots_of(const KernelStalls& k) { return k.lines.empty() ? k.instructions : k.lines; }

Place place_of(const KernelStalls& k, const HotSpot& spot) {
  Place p;
  p.kernel = short_kernel_name(k.kernel);
  if (spot.line > 0) {
    p.file = base_name(spot.file);
    p.line = spot.line;
  } else {
    p.pc_offset = spot.pc_offset;
  }
  return p;
}

// Samples of `state` at `place` among a side's hot spots; nullopt when the place is not among them.
std::optional<int64_t> samples_at(const Record& r, const Place& place, const std::string& state) {
  std::optional<int64_t> found;
  for (const KernelStalls& k : r.stalls->per_kernel)
    for (const HotSpot& spot : spots_of(k)) {
      const Place p = place_of(k, spot);
      const bool same = place.has_line() ? p.has_line() && p.file == place.file && p.line == place.line
                                         : !p.has_line() && p.kernel == place.kernel && p.pc_offset == place.pc_offset;
      if (same) found = found.value_or(0) + count_of(spot.reasons, state);
    }
  return found;
}

// Where a side holds `state`, most time first, with the other side's time at the same place.
std::vector<WhySpot> spots_for(const Record& r, const Samples& s, double p50_us, const std::string& state,
                               const Record& other, const Samples& other_samples, double other_p50_us) {
  const int64_t in_state = count_of(s.states, state);
  std::vector<WhySpot> out;
  if (in_state <= 0) return out;
  for (const KernelStalls& k : r.stalls->per_kernel)
    for (const HotSpot& spot : spots_of(k)) {
      const int64_t n = count_of(spot.reasons, state);
      const double share = static_cast<double>(n) / static_cast<double>(in_state);
      if (n <= 0 || share < kWhySpotMinShare) continue;
      const Place p = place_of(k, spot);
      WhySpot w;
      w.kernel = p.kernel;
      w.file = p.file;
      w.line = p.line;
      w.pc_offset = p.pc_offset;
      w.us = static_cast<double>(n) / static_cast<double>(s.total) * p50_us;
      w.share_of_state = share;
      if (const auto there = samples_at(other, p, state))
        w.other_us = static_cast<double>(*there) / static_cast<double>(other_samples.total) * other_p50_us;
      out.push_back(std::move(w));
    }
  std::stable_sort(out.begin(), out.end(), [](const WhySpot& a, const WhySpot& b) { return a.us > b.us; });
  if (out.size() > kWhySpotsPerTerm) out.resize(kWhySpotsPerTerm);
  return out;
}

std::vector<StallTerm> stall_terms(const Record& b, const Samples& bs, const Record& c, const Samples& cs) {
  const double b_p50 = b.latency.p50_us, c_p50 = c.latency.p50_us;
  std::set<std::string> states;
  for (const auto& [state, n] : bs.states) states.insert(state);
  for (const auto& [state, n] : cs.states) states.insert(state);
  std::vector<StallTerm> terms;
  for (const std::string& state : states) {
    StallTerm t;
    t.state = state;
    t.baseline_share = static_cast<double>(count_of(bs.states, state)) / static_cast<double>(bs.total);
    t.candidate_share = static_cast<double>(count_of(cs.states, state)) / static_cast<double>(cs.total);
    t.baseline_us = t.baseline_share * b_p50;
    t.candidate_us = t.candidate_share * c_p50;
    t.delta_us = t.candidate_us - t.baseline_us;
    t.delta_pct = t.delta_us / b_p50 * 100;
    t.baseline_spots = spots_for(b, bs, b_p50, state, c, cs, c_p50);
    t.candidate_spots = spots_for(c, cs, c_p50, state, b, bs, b_p50);
    terms.push_back(std::move(t));
  }
  std::stable_sort(terms.begin(), terms.end(),
                   [](const StallTerm& x, const StallTerm& y) { return std::abs(x.delta_us) > std::abs(y.delta_us); });
  return terms;
}

// Each kernel of a call with several, with its share of GPU time: the counters' per-launch durations,
// else the launch records', else the stages' P50s. Empty for a call of one kernel.
std::vector<WhyKernelTime> kernel_times(const Record& r, const DiagnosisFacts& f) {
  std::vector<WhyKernelTime> out;
  const double p50 = r.latency.p50_us;
  if (f.launches.size() >= 2) {
    for (const LaunchDiagnosis& l : f.launches)
      out.push_back({.kernel = l.name == l.kernel ? short_kernel_name(l.kernel) : l.name,
                     .share = l.time_share,
                     .us = l.time_share * p50});
    return out;
  }
  if (r.launches.size() >= 2) {
    double total_us = 0;
    for (const Launch& l : r.launches) total_us += l.duration_us;
    if (total_us > 0) {
      for (const Launch& l : r.launches)
        out.push_back({.kernel = short_kernel_name(l.name), .share = l.duration_us / total_us, .us = l.duration_us / total_us * p50});
      return out;
    }
  }
  if (r.stages.size() >= 2)
    for (const Stage& s : r.stages) out.push_back({.kernel = s.name, .share = s.share_of_p50, .us = s.share_of_p50 * p50});
  return out;
}

// The one kernel of a single-kernel call, for the side of a pair whose other side has several.
std::vector<WhyKernelTime> single_kernel(const Record& r) {
  std::string name = r.kernel;
  if (!r.launches.empty()) name = short_kernel_name(r.launches.front().name);
  else if (!r.occupancy.kernel.empty()) name = r.occupancy.kernel;
  return {{.kernel = name, .share = 1, .us = r.latency.p50_us}};
}

class EvidenceList {
 public:
  void add(std::string what, std::string unit, std::optional<double> b, std::optional<double> c, std::string source,
           std::string b_note = {}, std::string c_note = {}) {
    if (!finite(b) || !finite(c)) return;
    const double scale = std::max(std::abs(*b), std::abs(*c));
    list_.push_back({.what = std::move(what),
                     .unit = std::move(unit),
                     .baseline = *b,
                     .candidate = *c,
                     .source = std::move(source),
                     .baseline_note = std::move(b_note),
                     .candidate_note = std::move(c_note),
                     .difference = scale > 0 ? std::abs(*c - *b) / scale : 0});
  }
  std::vector<WhyEvidence> sorted() && {
    std::stable_sort(list_.begin(), list_.end(),
                     [](const WhyEvidence& x, const WhyEvidence& y) { return x.difference > y.difference; });
    return std::move(list_);
  }

 private:
  std::vector<WhyEvidence> list_;
};

std::optional<double> cycles_per_issue_sampled(const Samples& s) {
  const int64_t issued = count_of(s.states, std::string(kIssuedReason));
  if (issued <= 0) return std::nullopt;
  return static_cast<double>(s.total) / static_cast<double>(issued);
}

std::optional<double> l2_over_minimum(const DiagnosisFacts& f) {
  if (!f.memory.l2_bytes || !(f.work.min_bytes() > 0)) return std::nullopt;
  return *f.memory.l2_bytes / f.work.min_bytes();
}

std::string dram_note(const DiagnosisFacts& f) {
  if (!f.work.measured_bytes) return {};
  std::string note = text::bytes(*f.work.measured_bytes) + " of " + text::bytes(f.work.min_bytes());
  if (!f.work.writes_trusted) note += "; writes: the outputs' minimum (the counted ones are replayed passes')";
  return note;
}

std::string occupancy_note(const Occupancy& o) {
  std::string note = fmt::format("theoretical {:.1f}%", o.theoretical_pct);
  if (!o.limiter.empty()) note += ", limited by " + o.limiter;
  return note;
}

std::optional<double> waves_of(const Occupancy& o) {
  if (o.grid_blocks <= 0 || o.blocks_per_sm <= 0 || o.sm_count <= 0) return std::nullopt;
  return static_cast<double>(o.grid_blocks) / static_cast<double>(o.blocks_per_sm * o.sm_count);
}

std::string waves_note(const Occupancy& o) {
  const auto waves = waves_of(o);
  if (!waves) return {};
  std::string note = fmt::format("{} blocks, {} per SM x {} SMs", o.grid_blocks, o.blocks_per_sm, o.sm_count);
  const double whole = std::floor(*waves), last = *waves - whole;
  if (whole >= 1 && last > 0) note += fmt::format("; last wave {:.0f}% full", last * 100);
  return note;
}

// The instruction mix (sweep --stalls): warp instructions per 1k exact FLOPs, all of them and per class,
// each class's share of the side's warp instructions in its note. A class neither side issued is left out.
void add_instruction_mix(EvidenceList& e, const DiagnosisFacts& fb, const DiagnosisFacts& fc) {
  if (!fb.mix || !fc.mix) return;
  const char* source = "counters, cost model";
  e.add("warp instructions / 1k FLOP", "", fb.mix->per_kflop, fc.mix->per_kflop, source);
  const auto share_note = [](const InstructionClassCount& c) {
    return fmt::format("{:.1f}% of its warp instructions", c.share * 100);
  };
  for (const InstructionClass& k : kInstructionClasses) {
    const InstructionClassCount *b = class_count(*fb.mix, k.name), *c = class_count(*fc.mix, k.name);
    if (!b || !c || (b->warp_instructions <= 0 && c->warp_instructions <= 0)) continue;
    e.add(fmt::format("{} inst. / 1k FLOP", k.name), "", b->per_kflop, c->per_kflop, source, share_note(*b),
          share_note(*c));
  }
}

std::vector<WhyEvidence> evidence_of(const Record& b, const DiagnosisFacts& fb, const Samples& bs, const Record& c,
                                     const DiagnosisFacts& fc, const Samples& cs) {
  EvidenceList e;
  if (bs.ok() && cs.ok())
    e.add("warp cycles per issued instruction", "", cycles_per_issue_sampled(bs), cycles_per_issue_sampled(cs),
          "warp samples");
  else
    e.add("warp cycles per issued instruction", "", counter_total(b, kMetricWarpsPerIssue), counter_total(c, kMetricWarpsPerIssue),
          "counters");
  e.add("issue slots busy", "%", fb.stalls.issue_active_pct, fc.stalls.issue_active_pct, "counters");
  e.add("tensor pipe busy", "%", fb.pipes.tensor_pct, fc.pipes.tensor_pct, "counters");
  e.add("FMA pipe busy", "%", fb.pipes.fma_pct, fc.pipes.fma_pct, "counters");
  e.add("SM throughput", "%", counter_total(b, kMetricComputeSol), counter_total(c, kMetricComputeSol), "counters");
  e.add("L1/shared throughput", "%", fb.memory.l1_pct, fc.memory.l1_pct, "counters");
  e.add("L2 throughput", "%", fb.memory.l2_pct, fc.memory.l2_pct, "counters");
  const auto tensor_ops_per_flop = [](const DiagnosisFacts& f) -> std::optional<double> {
    if (!(f.work.counted_tensor_ops > 0) || !(f.work.exact_flops > 0)) return std::nullopt;
    return f.work.counted_tensor_ops / f.work.exact_flops;
  };
  e.add("tensor ops / exact FLOPs", "x", tensor_ops_per_flop(fb), tensor_ops_per_flop(fc), "counters, cost model");
  e.add("tensor ops per tensor instruction", "", positive(fb.pipes.ops_per_instruction),
        positive(fc.pipes.ops_per_instruction), "counters");
  e.add("FFMA thread instructions", "count", counter_total(b, kMetricFfma), counter_total(c, kMetricFfma), "counters");
  e.add("warp instructions executed", "count", counter_total(b, kMetricInstExecuted), counter_total(c, kMetricInstExecuted),
        "counters");
  add_instruction_mix(e, fb, fc);
  e.add("DRAM bytes / minimum", "x", fb.traffic.total_ratio, fc.traffic.total_ratio, "counters, cost model",
        dram_note(fb), dram_note(fc));
  e.add("L2 bytes / minimum", "x", l2_over_minimum(fb), l2_over_minimum(fc), "counters, cost model",
        fb.memory.l2_bytes ? text::bytes(*fb.memory.l2_bytes) : "", fc.memory.l2_bytes ? text::bytes(*fc.memory.l2_bytes) : "");
  e.add("L2 hit rate", "%", fb.memory.l2_hit_rate_pct, fc.memory.l2_hit_rate_pct, "counters");
  e.add("achieved occupancy", "%", fb.achieved_occupancy_pct, fc.achieved_occupancy_pct, "counters",
        occupancy_note(b.occupancy), occupancy_note(c.occupancy));
  e.add("waves", "", waves_of(b.occupancy), waves_of(c.occupancy), "occupancy", waves_note(b.occupancy),
        waves_note(c.occupancy));
  const auto resource = [](int64_t v) { return v > 0 ? std::optional<double>(static_cast<double>(v)) : std::nullopt; };
  e.add("threads per block", "", resource(b.occupancy.threads_per_block), resource(c.occupancy.threads_per_block),
        "occupancy");
  e.add("registers per thread", "", resource(b.occupancy.registers_per_thread),
        resource(c.occupancy.registers_per_thread), "occupancy");
  e.add("shared memory per block", "bytes", resource(b.occupancy.smem_bytes_per_block),
        resource(c.occupancy.smem_bytes_per_block), "occupancy");
  e.add("kernel launches per call", "", static_cast<double>(fb.launch.launches), static_cast<double>(fc.launch.launches),
        "launch records");
  e.add("SM clock under load", "MHz", positive(b.clock.sm_mhz_median), positive(c.clock.sm_mhz_median), "clock readings");
  const auto tail = [](const Record& r) -> std::optional<double> {
    if (!(r.latency.p50_us > 0) || !(r.latency.p99_us > 0)) return std::nullopt;
    return r.latency.p99_us / r.latency.p50_us;
  };
  e.add("P99 / P50", "x", tail(b), tail(c), "latency samples");
  return std::move(e).sorted();
}

// Why a side has no warp states, and what would sample them; empty when it has them.
std::string stalls_missing(const Record& r, bool sampled) {
  if (sampled) return {};
  if (r.backend == BackendKind::cpu) return fmt::format("no warp states: {}", kNoWarpStatesReason);
  if (!r.stalls) return "no warp states: the sweep ran without --stalls (attnprof sweep --stalls samples them)";
  if (r.stalls->status != SamplingStatus::ok)
    return fmt::format("warp states {}{}{}", to_string(r.stalls->status), r.stalls->reason.empty() ? "" : ": ",
                       r.stalls->reason);
  return "warp-state sampling named no instruction";
}

// Why a side has no counters, and what would collect them; empty when it has them.
std::string counters_missing(const Record& r) {
  const Counters& c = r.counters;
  if (c.status == CounterStatus::ok) return {};
  std::string line = c.status == CounterStatus::not_collected ? "counters not collected"
                                                               : fmt::format("counters {}", to_string(c.status));
  if (!c.reason.empty()) line += ": " + c.reason;
  if (c.status == CounterStatus::not_collected && r.backend != BackendKind::cpu)
    line += " (attnprof sweep collects them unless --no-counters)";
  if (c.status == CounterStatus::pending) line += " (attnprof sweep --resume collects them)";
  return line;
}

// One line per side that lacks something, or one line for both when they lack it for the same reason.
void add_missing(std::vector<std::string>& out, std::string_view b_label, const std::string& b_why,
                 std::string_view c_label, const std::string& c_why) {
  if (!b_why.empty() && b_why == c_why) {
    out.push_back(fmt::format("{} and {}: {}", b_label, c_label, b_why));
    return;
  }
  if (!b_why.empty()) out.push_back(fmt::format("{}: {}", b_label, b_why));
  if (!c_why.empty()) out.push_back(fmt::format("{}: {}", c_label, c_why));
}

std::vector<std::string> sampled_kernels(const Record& r) {
  std::vector<std::string> names;
  if (r.stalls && r.stalls->status == SamplingStatus::ok)
    for (const KernelStalls& k : r.stalls->per_kernel) names.push_back(short_kernel_name(k.kernel));
  return names;
}

bool ran_ok(const Record& r) { return r.status == Status::ok && r.latency.p50_us > 0 && std::isfinite(r.latency.p50_us); }

}  // namespace

std::string_view to_string(WhyMethod m) {
  switch (m) {
    case WhyMethod::warp_states: return "warp-states";
    case WhyMethod::counters: return "counters";
    case WhyMethod::time_only: return "time";
  }
  return "time";
}

double WhyPoint::terms_sum_us() const {
  double sum = 0;
  for (const StallTerm& t : terms) sum += t.delta_us;
  return sum;
}

WhyPoint why_point(const WhyRecord& baseline, const WhyRecord& candidate, std::string_view baseline_label,
                   std::string_view candidate_label) {
  const Record& b = *baseline.record;
  const Record& c = *candidate.record;
  if (!ran_ok(b) || !ran_ok(c))
    throw InputError(fmt::format("{}: both sides must have run ok with a P50 ({} {}, {} {})", b.shape.label(),
                                 baseline_label, to_string(b.status), candidate_label, to_string(c.status)));
  WhyPoint p;
  p.shape = b.shape.label();
  p.baseline_p50_us = b.latency.p50_us;
  p.candidate_p50_us = c.latency.p50_us;
  p.baseline_ci_low_us = b.latency.p50_ci_low_us;
  p.baseline_ci_high_us = b.latency.p50_ci_high_us;
  p.candidate_ci_low_us = c.latency.p50_ci_low_us;
  p.candidate_ci_high_us = c.latency.p50_ci_high_us;
  p.gap_us = p.candidate_p50_us - p.baseline_p50_us;
  p.gap_pct = p.gap_us / p.baseline_p50_us * 100;
  p.speed_ratio = p.baseline_p50_us / p.candidate_p50_us;
  p.baseline_sm_mhz = b.clock.sm_mhz_median > 0 ? b.clock.sm_mhz_median : 0;
  p.candidate_sm_mhz = c.clock.sm_mhz_median > 0 ? c.clock.sm_mhz_median : 0;
  if (p.baseline_sm_mhz > 0 && p.candidate_sm_mhz > 0)
    p.speed_ratio_per_cycle = p.speed_ratio * p.baseline_sm_mhz / p.candidate_sm_mhz;
  const bool intervals = p.baseline_ci_high_us > 0 && p.candidate_ci_high_us > 0;
  p.gap_within_noise = intervals && p.baseline_ci_low_us <= p.candidate_ci_high_us &&
                       p.candidate_ci_low_us <= p.baseline_ci_high_us;

  const Samples bs = samples_of(b), cs = samples_of(c);
  p.baseline_samples = bs.total;
  p.candidate_samples = cs.total;
  p.baseline_sampled = sampled_kernels(b);
  p.candidate_sampled = sampled_kernels(c);
  if (bs.ok() && cs.ok()) {
    p.method = WhyMethod::warp_states;
    p.terms = stall_terms(b, bs, c, cs);
  } else {
    p.method = b.counters.status == CounterStatus::ok && c.counters.status == CounterStatus::ok ? WhyMethod::counters
                                                                                                : WhyMethod::time_only;
  }
  add_missing(p.missing, baseline_label, stalls_missing(b, bs.ok()), candidate_label, stalls_missing(c, cs.ok()));
  add_missing(p.missing, baseline_label, counters_missing(b), candidate_label, counters_missing(c));

  const DiagnosisFacts fb = gather_facts(b, *baseline.context), fc = gather_facts(c, *candidate.context);
  p.evidence = evidence_of(b, fb, bs, c, fc, cs);
  p.baseline_kernels = kernel_times(b, fb);
  p.candidate_kernels = kernel_times(c, fc);
  if (!p.baseline_kernels.empty() || !p.candidate_kernels.empty()) {
    if (p.baseline_kernels.empty()) p.baseline_kernels = single_kernel(b);
    if (p.candidate_kernels.empty()) p.candidate_kernels = single_kernel(c);
  }
  return p;
}

WhyReport why(const WhySide& baseline, const WhySide& candidate, std::string_view shape_filter) {
  WhyReport report;
  report.baseline = baseline.label;
  report.candidate = candidate.label;
  std::map<std::string, const WhyRecord*> candidate_by_shape;
  for (const WhyRecord& r : candidate.points) candidate_by_shape.emplace(r.record->shape.label(), &r);

  std::vector<std::pair<const WhyRecord*, const WhyRecord*>> both_ok;
  size_t common = 0;
  for (const WhyRecord& b : baseline.points) {
    const std::string shape = b.record->shape.label();
    const auto it = candidate_by_shape.find(shape);
    if (it == candidate_by_shape.end()) continue;
    ++common;
    const Record& c = *it->second->record;
    if (ran_ok(*b.record) && ran_ok(c)) {
      both_ok.emplace_back(&b, it->second);
    } else {
      report.skipped.push_back({.shape = shape,
                                .baseline_status = std::string(to_string(b.record->status)),
                                .candidate_status = std::string(to_string(c.status))});
    }
  }
  if (common == 0)
    throw InputError(fmt::format("no shape is in both {} ({} shapes) and {} ({} shapes)", baseline.label,
                                 baseline.points.size(), candidate.label, candidate.points.size()));
  if (both_ok.empty())
    throw InputError(fmt::format("{} and {} share {} shape(s) but ran ok together at none (first: {}, {} {}, {} {})",
                                 baseline.label, candidate.label, common, report.skipped.front().shape, baseline.label,
                                 report.skipped.front().baseline_status, candidate.label,
                                 report.skipped.front().candidate_status));

  std::vector<std::pair<const WhyRecord*, const WhyRecord*>> chosen;
  if (shape_filter.empty()) {
    chosen = both_ok;
  } else {
    for (const auto& pair : both_ok)
      if (pair.first->record->shape.label() == shape_filter) chosen.push_back(pair);
    if (chosen.empty())
      for (const auto& pair : both_ok)
        if (pair.first->record->shape.label().find(shape_filter) != std::string::npos) chosen.push_back(pair);
    if (chosen.empty()) {
      std::vector<std::string> labels;
      for (const auto& pair : both_ok) labels.push_back(pair.first->record->shape.label());
      throw InputError(fmt::format("--shape '{}' matches none of the {} shape(s) both ran ok: {}", shape_filter,
                                   labels.size(), fmt::join(labels, "; ")));
    }
    report.skipped.clear();  // a filtered report speaks of the chosen shapes only
  }
  for (const auto& [b, c] : chosen) report.points.push_back(why_point(*b, *c, baseline.label, candidate.label));
  return report;
}

WhySide why_side(std::string label, std::string_view kernel, const std::vector<const Results*>& files,
                 const std::vector<std::string>& file_names) {
  WhySide side;
  side.label = std::move(label);
  std::map<std::string, size_t> file_of_shape;
  std::vector<std::string> kernels;
  for (size_t i = 0; i < files.size(); ++i)
    for (const Record& r : files[i]->records) {
      if (std::find(kernels.begin(), kernels.end(), r.kernel) == kernels.end()) kernels.push_back(r.kernel);
      if (r.kernel != kernel) continue;
      const auto [it, fresh] = file_of_shape.emplace(r.shape.label(), i);
      if (!fresh)
        throw InputError(fmt::format("{} at {} is in two results files ({} and {}): give one of them", kernel,
                                     r.shape.label(), file_names.at(it->second), file_names.at(i)));
      side.points.push_back({.record = &r, .context = &files[i]->context});
    }
  if (side.points.empty())
    throw InputError(fmt::format("no kernel '{}' in {}: {} hold{} {}", kernel, fmt::join(file_names, ", "),
                                 file_names.size() == 1 ? "it" : "they", file_names.size() == 1 ? "s" : "",
                                 kernels.empty() ? "no records" : fmt::format("{}", fmt::join(kernels, ", "))));
  return side;
}

std::vector<WhyPair> why_against_fastest(const Results& results) {
  std::vector<std::string> shapes;
  std::map<std::string, std::vector<const Record*>> sampled_at;
  for (const Record& r : results.records) {
    if (!ran_ok(r) || !samples_of(r).ok()) continue;
    const std::string shape = r.shape.label();
    if (!sampled_at.contains(shape)) shapes.push_back(shape);
    sampled_at[shape].push_back(&r);
  }
  std::vector<WhyPair> pairs;
  for (const std::string& shape : shapes) {
    const auto& records = sampled_at[shape];
    if (records.size() < 2) continue;
    const Record* fastest = *std::min_element(records.begin(), records.end(), [](const Record* a, const Record* b) {
      return a->latency.p50_us < b->latency.p50_us;
    });
    for (const Record* r : records)
      if (r != fastest)
        pairs.push_back({.baseline = fastest->kernel,
                         .candidate = r->kernel,
                         .point = why_point({fastest, &results.context}, {r, &results.context}, fastest->kernel, r->kernel)});
  }
  return pairs;
}

void to_json(nlohmann::json& j, const WhySpot& s) {
  j = {{"kernel", s.kernel}, {"file", s.file}, {"line", s.line}, {"pc_offset", s.pc_offset},
       {"us", s.us}, {"share_of_state", s.share_of_state},
       {"other_us", s.other_us ? nlohmann::json(*s.other_us) : nlohmann::json(nullptr)}};
}

void to_json(nlohmann::json& j, const StallTerm& t) {
  j = {{"state", t.state},
       {"baseline_share", t.baseline_share},
       {"candidate_share", t.candidate_share},
       {"baseline_us", t.baseline_us},
       {"candidate_us", t.candidate_us},
       {"delta_us", t.delta_us},
       {"delta_pct", t.delta_pct},
       {"baseline_spots", t.baseline_spots},
       {"candidate_spots", t.candidate_spots}};
}

void to_json(nlohmann::json& j, const WhyEvidence& e) {
  j = {{"what", e.what},
       {"unit", e.unit},
       {"baseline", e.baseline},
       {"candidate", e.candidate},
       {"source", e.source},
       {"baseline_note", e.baseline_note},
       {"candidate_note", e.candidate_note},
       {"difference", e.difference}};
}

void to_json(nlohmann::json& j, const WhyKernelTime& k) { j = {{"kernel", k.kernel}, {"share", k.share}, {"us", k.us}}; }

void to_json(nlohmann::json& j, const WhyPoint& p) {
  j = {{"shape", p.shape},
       {"baseline", {{"p50_us", p.baseline_p50_us},
                     {"p50_ci_low_us", p.baseline_ci_low_us},
                     {"p50_ci_high_us", p.baseline_ci_high_us},
                     {"sm_mhz", p.baseline_sm_mhz > 0 ? nlohmann::json(p.baseline_sm_mhz) : nlohmann::json(nullptr)},
                     {"warp_samples", p.baseline_samples},
                     {"sampled_kernels", p.baseline_sampled},
                     {"kernels", p.baseline_kernels}}},
       {"candidate", {{"p50_us", p.candidate_p50_us},
                      {"p50_ci_low_us", p.candidate_ci_low_us},
                      {"p50_ci_high_us", p.candidate_ci_high_us},
                      {"sm_mhz", p.candidate_sm_mhz > 0 ? nlohmann::json(p.candidate_sm_mhz) : nlohmann::json(nullptr)},
                      {"warp_samples", p.candidate_samples},
                      {"sampled_kernels", p.candidate_sampled},
                      {"kernels", p.candidate_kernels}}},
       {"gap_us", p.gap_us},
       {"gap_pct", p.gap_pct},
       {"speed_ratio", p.speed_ratio},
       {"speed_ratio_per_cycle", p.speed_ratio_per_cycle ? nlohmann::json(*p.speed_ratio_per_cycle) : nlohmann::json(nullptr)},
       {"gap_within_noise", p.gap_within_noise},
       {"method", std::string(to_string(p.method))},
       {"terms", p.terms},
       {"terms_sum_us", p.method == WhyMethod::warp_states ? nlohmann::json(p.terms_sum_us()) : nlohmann::json(nullptr)},
       {"evidence", p.evidence},
       {"missing", p.missing}};
}

void to_json(nlohmann::json& j, const WhySkipped& s) {
  j = {{"shape", s.shape}, {"baseline_status", s.baseline_status}, {"candidate_status", s.candidate_status}};
}

void to_json(nlohmann::json& j, const WhyReport& r) {
  j = {{"schema_version", std::string(kWhySchemaVersion)},
       {"baseline", r.baseline},
       {"candidate", r.candidate},
       {"files", r.files},
       {"points", r.points},
       {"skipped", r.skipped}};
}

}  // namespace attnprof::core
