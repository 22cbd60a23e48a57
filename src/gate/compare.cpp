#include "gate/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "core/escape.hpp"
#include "core/host_load.hpp"
#include "gate/bootstrap.hpp"
#include "gate/mann_whitney.hpp"

namespace attnprof::gate {

namespace {

// FNV-1a: a stable hash of the point key, so each point draws its own reproducible bootstrap stream
// (std::hash may differ between standard libraries).
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// Fewer finite samples than this on a side and a point is not compared (no spread, no test).
constexpr size_t kMinSamplesToCompare = 2;

// The finite samples of a record, sorted: every statistic of a point is computed from sorted samples
// (the medians of resamples are order statistics, the test ranks them anyway).
std::vector<double> sorted_finite(const std::vector<double>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (double x : v)
    if (std::isfinite(x)) out.push_back(x);
  std::sort(out.begin(), out.end());
  return out;
}

// Type-7 median of sorted values (core::median without its copy and sort).
double sorted_median(std::span<const double> sorted) {
  const size_t mid = (sorted.size() - 1) / 2;
  if (sorted.size() % 2 == 1) return sorted[mid];
  return sorted[mid] + 0.5 * (sorted[mid + 1] - sorted[mid]);
}

// stddev / mean, computed on the samples divided by the largest magnitude: the ratio is the same, and
// no sum can overflow however large the samples are (1e308 us is a finite double).
double rel_stddev(std::span<const double> sorted) {
  if (sorted.size() < kMinSamplesToCompare) return 0;
  const double scale = std::max(std::abs(sorted.front()), std::abs(sorted.back()));
  if (!(scale > 0)) return 0;
  std::vector<double> scaled(sorted.begin(), sorted.end());
  for (double& x : scaled) x /= scale;
  const double m = core::mean(scaled);
  return m > 0 ? core::stddev(scaled) / m : 0;
}

// Every ratio of medians the point can produce (its own, a resample's) is a ratio of two of its
// samples, so when the largest sample over the smallest positive one is not a double, no ratio of the
// point can be computed: such a file does not hold latencies in microseconds. Bad input, one line.
void check_ratio_range(const std::string& key, std::span<const double> sb, std::span<const double> sc) {
  const double largest = std::max(sb.back(), sc.back());
  double smallest = std::numeric_limits<double>::infinity();
  for (auto side : {sb, sc})
    if (auto it = std::upper_bound(side.begin(), side.end(), 0.0); it != side.end()) smallest = std::min(smallest, *it);
  if (!std::isfinite(smallest) || std::isfinite(largest / smallest)) return;
  throw InputError(fmt::format("point '{}': latency samples from {:g} to {:g} us are too far apart for a ratio of "
                               "two of them to be a number, so the point cannot be compared",
                               core::escape::one_line(key), smallest, largest));
}

std::string pct(double fraction) { return fmt::format("{:+.1f}%", 100.0 * fraction); }

std::string p_text(double p) { return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.4f}", p); }

// Medians of independent resamples of each side (sorted); ratios[b] = median(candidate*) /
// median(baseline*). gate/bootstrap.hpp draws each resample's median without building the resample.
std::vector<double> bootstrap_ratios(std::span<const double> baseline, std::span<const double> candidate,
                                     int resamples, uint64_t seed) {
  BootstrapRng rng(seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(resamples));
  for (int i = 0; i < resamples; ++i) {
    const double mb = resampled_median(baseline, rng);
    const double mc = resampled_median(candidate, rng);
    ratios.push_back(mb > 0 ? mc / mb : 1.0);
  }
  return ratios;
}

core::Interval percentile_interval(std::span<const double> values, double confidence) {
  const double tail = (1.0 - confidence) / 2.0;
  return {core::quantile(values, tail), core::quantile(values, 1.0 - tail)};
}

// The device's top clock as a run names it: a GPU's SM clock, a CPU's core clock.
std::string_view clock_name(const core::Context& c) {
  return c.backend == core::BackendKind::cpu ? "max CPU clock" : "max SM clock";
}

std::string describe_device(const core::Context& c) {
  std::string s = c.device.name.empty() ? "unknown device" : c.device.name;
  if (!c.device.driver_version.empty()) s += ", driver " + c.device.driver_version;
  if (c.device.sm_clock_max_mhz > 0) s += fmt::format(", {} {:.0f} MHz", clock_name(c), c.device.sm_clock_max_mhz);
  s += ", backend " + (c.backend == core::BackendKind::none ? std::string("?") : std::string(core::to_string(c.backend)));
  // The exact build of each plugin measured, so a gate's header says what it compared.
  for (const auto& p : c.plugins) {
    if (!p.is_object()) continue;
    s += fmt::format(", plugin {} {} (sha256 {})", p.value("name", "?"), p.value("version", "?"),
                     p.value("sha256", std::string("?")).substr(0, 12));
  }
  return s;
}

// What makes two runs incomparable: a different GPU model, driver, clock regime or backend.
std::vector<std::string> device_differences(const core::Context& b, const core::Context& c) {
  std::vector<std::string> d;
  if (b.backend != c.backend) d.push_back(fmt::format("backend '{}' vs '{}'", core::to_string(b.backend), core::to_string(c.backend)));
  if (b.device.name != c.device.name)
    d.push_back(fmt::format("device '{}' vs '{}'", b.device.name, c.device.name));
  if (b.device.driver_version != c.device.driver_version)
    d.push_back(fmt::format("driver '{}' vs '{}'", b.device.driver_version, c.device.driver_version));
  // Clocks are reported in whole MHz; anything beyond rounding is another clock regime (locked clocks,
  // another SKU or power mode), which moves latency by itself.
  if (std::abs(b.device.sm_clock_max_mhz - c.device.sm_clock_max_mhz) > 0.5)
    d.push_back(fmt::format("{} {:.0f} vs {:.0f} MHz", clock_name(b), b.device.sm_clock_max_mhz,
                            c.device.sm_clock_max_mhz));
  return d;
}

void validate(const Options& o) {
  auto bad = [](const char* name, double v) {
    throw InputError(fmt::format("compare option {} = {} is out of range", name, v));
  };
  if (!(o.alpha > 0 && o.alpha < 1)) bad("alpha", o.alpha);
  if (!(o.threshold >= 0 && o.threshold < 10)) bad("threshold", o.threshold);
  for (const auto& [kernel, t] : o.kernel_threshold)
    if (!(t >= 0 && t < 10)) bad(("kernel threshold of " + kernel).c_str(), t);
  if (!(o.max_rel_stddev > 0)) bad("max-rel-stddev", o.max_rel_stddev);
  if (!(o.confidence > 0 && o.confidence < 1)) bad("confidence", o.confidence);
  if (o.bootstrap_resamples < 10) bad("resamples", o.bootstrap_resamples);
  const auto& ct = o.counter_thresholds;
  if (!(ct.dram_bytes_increase >= 0)) bad("dram counter threshold", ct.dram_bytes_increase);
  if (!(ct.tensor_ops_increase >= 0)) bad("tensor counter threshold", ct.tensor_ops_increase);
  if (!(ct.occupancy_decrease >= 0 && ct.occupancy_decrease < 1))
    bad("occupancy counter threshold", ct.occupancy_decrease);
}

struct CounterValue {
  double value = 0;
  std::string source;
};

// DRAM bytes: read + write when the split metrics are there, else the combined one.
std::optional<CounterValue> dram_bytes(const std::map<std::string, double>& t) {
  const auto r = t.find(core::kMetricDramRead), w = t.find(core::kMetricDramWrite);
  if (r != t.end() && w != t.end())
    return CounterValue{r->second + w->second, fmt::format("{} + {}", core::kMetricDramRead, core::kMetricDramWrite)};
  if (auto a = t.find(core::kMetricDramTotal); a != t.end()) return CounterValue{a->second, core::kMetricDramTotal};
  return std::nullopt;
}

// Tensor operations: the sum of the tensor-path op counters both sides collected (so the two sums
// cover the same metrics); failing those, tensor-pipe instruction counts.
std::optional<std::pair<CounterValue, CounterValue>> tensor_ops(const std::map<std::string, double>& b,
                                                                const std::map<std::string, double>& c) {
  for (std::string_view prefix : {core::kTensorOpsMetricPrefix, core::kTensorInstMetricPrefix}) {
    CounterValue vb, vc;
    for (const auto& [name, value] : b) {
      auto other = c.find(name);
      if (!name.starts_with(prefix) || other == c.end() || name.find(".sum") == std::string::npos) continue;
      vb.value += value;
      vc.value += other->second;
      vb.source += (vb.source.empty() ? "" : " + ") + name;
    }
    if (!vb.source.empty()) {
      vc.source = vb.source;
      return std::make_pair(vb, vc);
    }
  }
  return std::nullopt;
}

std::optional<CounterValue> achieved_occupancy(const core::Record& r) {
  if (r.occupancy.achieved_pct) return CounterValue{*r.occupancy.achieved_pct, "occupancy.achieved_pct"};
  if (const auto pct = core::counter_total(r, core::kMetricAchievedOccupancy))
    return CounterValue{*pct, core::kMetricAchievedOccupancy};
  return std::nullopt;
}

void compare_counters(const core::Record& b, const core::Record& c, const CounterThresholds& limits,
                      PointComparison& pc) {
  if (b.counters.status != core::CounterStatus::ok || c.counters.status != core::CounterStatus::ok) {
    pc.counters_note = fmt::format("counters not comparable (baseline {}, candidate {})",
                                   core::to_string(b.counters.status), core::to_string(c.counters.status));
    return;
  }
  auto add = [&](const char* name, const CounterValue& vb, const CounterValue& vc, double limit) {
    CounterDelta d;
    d.name = name;
    d.source = vb.source;
    d.baseline = vb.value;
    d.candidate = vc.value;
    d.limit = limit;
    d.change = vb.value != 0 ? vc.value / vb.value - 1.0 : (vc.value == 0 ? 0.0 : INFINITY);
    d.regressed = limit >= 0 ? d.change > limit : d.change < limit;
    pc.counters.push_back(d);
  };
  const auto db = dram_bytes(b.counters.total), dc = dram_bytes(c.counters.total);
  if (db && dc && db->source == dc->source) add("dram_bytes", *db, *dc, limits.dram_bytes_increase);
  if (auto t = tensor_ops(b.counters.total, c.counters.total))
    add("tensor_ops", t->first, t->second, limits.tensor_ops_increase);
  const auto ob = achieved_occupancy(b), oc = achieved_occupancy(c);
  if (ob && oc && ob->source == oc->source)
    add("achieved_occupancy_pct", *ob, *oc, -limits.occupancy_decrease);
  if (pc.counters.empty()) pc.counters_note = "no counter collected on both sides";
}

// The family's significance cutoffs: a one-sided p-value at or under its direction's cutoff is
// significant. Benjamini-Hochberg: the largest k/m * alpha such that k of the m p-values are at or
// under it (alpha/m when none is: then nothing is significant either way).
struct Cutoffs {
  double slower = 0, faster = 0;
};

double benjamini_hochberg_cutoff(std::vector<double> p, double alpha) {
  if (p.empty()) return alpha;
  std::sort(p.begin(), p.end());
  const double m = static_cast<double>(p.size());
  size_t discoveries = 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] <= static_cast<double>(i + 1) / m * alpha) discoveries = i + 1;
  return static_cast<double>(std::max<size_t>(discoveries, 1)) / m * alpha;
}

// The latency rule: a change is slower or faster when it is significant and beyond the threshold.
Verdict latency_rule(double ratio, double p_slower, double p_faster, const Cutoffs& cut, double threshold) {
  if (p_slower <= cut.slower && ratio > 1.0 + threshold) return Verdict::slower;
  if (p_faster <= cut.faster && ratio < 1.0 / (1.0 + threshold)) return Verdict::faster;
  return Verdict::same;
}

// The rule for a point judged on an interval (a spread over the ceiling, throttled samples): the
// point estimate alone could be moved by the spread or the clocks, so the whole interval the point is
// judged on must clear the threshold (or lie within it).
Verdict interval_rule(const PointComparison& pc, const Cutoffs& cut) {
  const double up = 1.0 + pc.threshold, down = 1.0 / (1.0 + pc.threshold);
  if (pc.p_slower <= cut.slower && pc.judged_ci.low > up) return Verdict::slower;
  if (pc.p_faster <= cut.faster && pc.judged_ci.high < down) return Verdict::faster;
  if (pc.judged_ci.low >= down && pc.judged_ci.high <= up) return Verdict::same;
  return Verdict::noisy;
}

// Where an interval of the ratio lies against the threshold, from its numbers alone.
const char* interval_position(const core::Interval& ci, double threshold) {
  const double up = 1.0 + threshold, down = 1.0 / (1.0 + threshold);
  if (ci.low > up || ci.high < down) return "clears the threshold";
  if (ci.low >= down && ci.high <= up) return "lies within the threshold";
  return "reaches past the threshold without clearing it";
}

// The samples of a side that were not throttled, taken to be its fastest: throttling (a clock under
// core::kThrottledClockFraction of the maximum) only slows a call, so the throttled samples are its
// slowest, or the worst case if not. Empty when fewer than kMinSamplesToCompare remain.
std::span<const double> unthrottled(std::span<const double> sorted, int64_t throttled_samples) {
  const auto drop = static_cast<size_t>(std::clamp<int64_t>(throttled_samples, 0, static_cast<int64_t>(sorted.size())));
  const size_t keep = sorted.size() - drop;
  return keep < kMinSamplesToCompare ? std::span<const double>{} : sorted.first(keep);
}

// The interval of the ratio widened for throttled samples: without the candidate's throttled samples
// the ratio is at its lowest, without the baseline's at its highest. The widened interval runs from
// the lower end of the first's bootstrap interval to the upper end of the second's, and contains the
// interval of all the samples. An end stays open (0 or infinity) when a side has fewer than
// kMinSamplesToCompare unthrottled samples.
core::Interval widened_for_throttling(std::span<const double> sb, std::span<const double> sc, const PointComparison& pc,
                                      const Options& o, uint64_t seed) {
  const auto interval = [&](std::span<const double> base, std::span<const double> cand) {
    return percentile_interval(bootstrap_ratios(base, cand, o.bootstrap_resamples, seed), o.confidence);
  };
  core::Interval w = pc.ratio_ci;
  if (pc.candidate_throttled_samples > 0) {
    const auto fast_c = unthrottled(sc, pc.candidate_throttled_samples);
    w.low = fast_c.empty() ? 0.0 : std::min(w.low, interval(sb, fast_c).low);
  }
  if (pc.baseline_throttled_samples > 0) {
    const auto fast_b = unthrottled(sb, pc.baseline_throttled_samples);
    w.high = fast_b.empty() ? std::numeric_limits<double>::infinity() : std::max(w.high, interval(fast_b, sc).high);
  }
  return w;
}

std::string status_text(const core::Record& r) {
  std::string s(core::to_string(r.status));
  if (!r.reason.empty()) s += " (" + r.reason + ")";
  return s;
}

// First stage of a point that is ok on both sides: the statistics, which do not depend on the other
// points. `ratios` receives the bootstrap resamples of the median ratio (empty when the point could
// not be compared). Throws InputError when the samples' range leaves no ratio computable.
void measure_point(const core::Record& b, const core::Record& c, const Options& o, PointComparison& pc,
                   std::vector<double>& ratios) {
  const std::vector<double> sb = sorted_finite(b.samples_us);
  const std::vector<double> sc = sorted_finite(c.samples_us);
  pc.baseline_n = static_cast<int64_t>(sb.size());
  pc.candidate_n = static_cast<int64_t>(sc.size());
  pc.baseline_throttled_samples = b.clock.throttled_samples;
  pc.candidate_throttled_samples = c.clock.throttled_samples;
  pc.baseline_sm_mhz = b.clock.sm_mhz_median;
  pc.candidate_sm_mhz = c.clock.sm_mhz_median;
  auto kt = o.kernel_threshold.find(c.kernel);
  pc.threshold = kt != o.kernel_threshold.end() ? kt->second : o.threshold;

  if (sb.size() < kMinSamplesToCompare || sc.size() < kMinSamplesToCompare) {
    pc.verdict = Verdict::noisy;
    pc.reason = fmt::format("too few finite latency samples to compare (baseline {}, candidate {})",
                            sb.size(), sc.size());
    return;
  }
  check_ratio_range(pc.key, sb, sc);
  pc.compared = true;
  pc.baseline_median_us = sorted_median(sb);
  pc.candidate_median_us = sorted_median(sc);
  if (!(pc.baseline_median_us > 0)) {
    pc.compared = false;
    pc.verdict = Verdict::noisy;
    pc.reason = "baseline median latency is not positive";
    return;
  }
  pc.ratio = pc.candidate_median_us / pc.baseline_median_us;
  const MannWhitney mw = mann_whitney_u(sc, sb);  // x = candidate: "greater" means slower
  pc.p_slower = mw.p_greater;
  pc.p_faster = mw.p_less;
  pc.exact_p = mw.exact;
  const uint64_t seed = o.seed ^ fnv1a(pc.key);
  ratios = bootstrap_ratios(sb, sc, o.bootstrap_resamples, seed);
  pc.ratio_ci = percentile_interval(ratios, o.confidence);
  pc.judged_ci = widened_for_throttling(sb, sc, pc, o, seed);
  pc.baseline_rel_stddev = rel_stddev(sb);
  pc.candidate_rel_stddev = rel_stddev(sc);
}

// "p = 1.2e-11 <= 6.9e-05 (Benjamini-Hochberg over 144 points at 0.01)", or "p = ... <= 0.01".
std::string significance_text(double p, double cutoff, bool significant, const Options& o, int64_t family) {
  const std::string how = o.correction == Correction::benjamini_hochberg && family > 1
                              ? fmt::format(" (Benjamini-Hochberg over {} points at {})", family, o.alpha)
                              : "";
  return fmt::format("p = {} {} {}{}", p_text(p), significant ? "<=" : ">", p_text(cutoff), how);
}

// What the median and the test say, from their numbers (not from the verdict, which may rest on an
// interval or be overruled by noise).
std::string change_reason(const PointComparison& pc, const Cutoffs& cut, const Options& o, int64_t family) {
  const double up = 1.0 + pc.threshold, down = 1.0 / (1.0 + pc.threshold);
  const bool toward_slower = pc.ratio >= 1.0;
  const double p = toward_slower ? pc.p_slower : pc.p_faster;
  const double cutoff = toward_slower ? cut.slower : cut.faster;
  const bool significant = p <= cutoff;
  const std::string change = pct(pc.ratio - 1.0), significance = significance_text(p, cutoff, significant, o, family);
  if (!significant) return fmt::format("median {} is not significant ({})", change, significance);
  if (toward_slower && pc.ratio > up)
    return fmt::format("median {} ({}, over the {} threshold)", change, significance, pct(pc.threshold));
  if (!toward_slower && pc.ratio < down)
    return fmt::format("median {} ({}, beyond the {} threshold)", change, significance, pct(down - 1.0));
  return fmt::format("median {} is significant ({}) but within the {} threshold", change, significance,
                     pct(toward_slower ? pc.threshold : down - 1.0));
}

// Second stage: the verdict, from the point's statistics and the family's cutoffs.
void decide_point(const core::Record& b, const core::Record& c, const Options& o, const Cutoffs& cut,
                  int64_t family, PointComparison& pc) {
  pc.p_slower_cutoff = cut.slower;
  pc.p_faster_cutoff = cut.faster;
  const bool wide = pc.baseline_rel_stddev > o.max_rel_stddev || pc.candidate_rel_stddev > o.max_rel_stddev;
  const bool throttled = pc.baseline_throttled_samples > 0 || pc.candidate_throttled_samples > 0;
  const Verdict estimate = latency_rule(pc.ratio, pc.p_slower, pc.p_faster, cut, pc.threshold);
  // Spread and throttled samples widen the interval the point is judged on; neither vetoes a change
  // that lies beyond it.
  const Verdict latency = wide || throttled ? interval_rule(pc, cut) : estimate;
  pc.reason = change_reason(pc, cut, o, family);
  if (wide || throttled) {
    std::vector<std::string> why;
    if (pc.baseline_rel_stddev > o.max_rel_stddev)
      why.push_back(fmt::format("baseline spread {:.1f}%", 100 * pc.baseline_rel_stddev));
    if (pc.candidate_rel_stddev > o.max_rel_stddev)
      why.push_back(fmt::format("candidate spread {:.1f}%", 100 * pc.candidate_rel_stddev));
    std::string joined = fmt::format("{}", fmt::join(why, ", "));
    if (wide) joined += fmt::format(" > {:.1f}%", 100 * o.max_rel_stddev);
    if (throttled)
      joined += fmt::format("{}throttled in {} of {} baseline and {} of {} candidate samples", wide ? "; " : "",
                            pc.baseline_throttled_samples, pc.baseline_n, pc.candidate_throttled_samples,
                            pc.candidate_n);
    pc.reason = fmt::format("{}: judged on the {:.0f}% interval of the ratio{} [{:.3f}, {:.3f}], which {}; {}", joined,
                            100 * o.confidence, throttled ? " widened for the throttled samples" : "",
                            pc.judged_ci.low, pc.judged_ci.high, interval_position(pc.judged_ci, pc.threshold),
                            pc.reason);
  }
  pc.latency_verdict = std::string(to_string(latency == Verdict::noisy ? estimate : latency));
  pc.verdict = latency;
  if (pc.baseline_sm_mhz > 0 && pc.candidate_sm_mhz > 0 &&
      std::abs(pc.candidate_sm_mhz / pc.baseline_sm_mhz - 1.0) >= core::kGateClockNoteChange) {
    pc.reason += fmt::format("; the SM clock under load moved {} ({:.0f} -> {:.0f} MHz)",
                             pct(pc.candidate_sm_mhz / pc.baseline_sm_mhz - 1.0), pc.baseline_sm_mhz,
                             pc.candidate_sm_mhz);
  }

  // What keeps a point from being decided, whatever latency says.
  std::vector<std::string> noise;
  // Past core::kGateThrottledShareMax of a side, throttled samples are the point's typical state, not
  // its exceptions: only a slowdown that clears even the widened interval is decided.
  const auto share = [](int64_t throttled_samples, int64_t samples) {
    return static_cast<double>(throttled_samples) / static_cast<double>(std::max<int64_t>(samples, 1));
  };
  const double worst_share = std::max(share(pc.baseline_throttled_samples, pc.baseline_n),
                                      share(pc.candidate_throttled_samples, pc.candidate_n));
  if (worst_share > core::kGateThrottledShareMax && latency != Verdict::slower)
    noise.push_back(fmt::format("{:.0f}% of a side's samples throttled (over {:.0f}%): only a slowdown beyond the "
                                "widened interval is decided",
                                100 * worst_share, 100 * core::kGateThrottledShareMax));
  // A test that cannot reach the cutoff actually applied (the family's, under Benjamini-Hochberg)
  // cannot see a slowdown of any size: such a point is undecided, not `same`.
  if (const double min_p = mann_whitney_min_p(pc.candidate_n, pc.baseline_n); min_p > cut.slower)
    noise.push_back(fmt::format("{} vs {} samples cannot reach p <= {} (their smallest p is {})", pc.baseline_n,
                                pc.candidate_n, p_text(cut.slower), p_text(min_p)));
  if (!noise.empty()) {
    pc.verdict = Verdict::noisy;
    pc.reason = fmt::format("{}; latency alone: {}, {}", fmt::join(noise, "; "), pc.latency_verdict, pc.reason);
  }

  if (o.counters) {
    compare_counters(b, c, o.counter_thresholds, pc);
    std::string worse;
    for (const auto& d : pc.counters)
      if (d.regressed)
        worse += fmt::format("{}{} {} (limit {})", worse.empty() ? "" : ", ", d.name, pct(d.change), pct(d.limit));
    // Counters are counted, not timed, so timing noise does not excuse them; a latency regression
    // stays the headline.
    if (!worse.empty()) {
      if (pc.verdict == Verdict::slower) {
        pc.reason += "; counters: " + worse;
      } else {
        pc.reason = "counters " + worse + "; latency: " + pc.reason;
        pc.verdict = Verdict::counter_regression;
      }
    }
  }
  pc.fails = pc.verdict == Verdict::slower || pc.verdict == Verdict::counter_regression;
}

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::same: return "same";
    case Verdict::faster: return "faster";
    case Verdict::slower: return "slower";
    case Verdict::noisy: return "noisy";
    case Verdict::counter_regression: return "counter-regression";
    case Verdict::error: return "error";
    case Verdict::unsupported: return "unsupported";
    case Verdict::missing: return "missing";
    case Verdict::added: return "new";
    case Verdict::unconfirmed: return "unconfirmed";
  }
  return "?";
}

std::string_view to_string(Correction c) {
  return c == Correction::benjamini_hochberg ? "bh" : "none";
}

Correction parse_correction(std::string_view s) {
  if (s == "bh") return Correction::benjamini_hochberg;
  if (s == "none") return Correction::none;
  throw InputError(fmt::format("unknown correction '{}' (bh, none)", core::escape::one_line(s)));
}

std::pair<std::string, double> parse_name_value(const std::string& token) {
  const auto eq = token.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == token.size())
    throw InputError(fmt::format("'{}' is not NAME=VALUE", token));
  const std::string value = token.substr(eq + 1);
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !std::isfinite(v))
    throw InputError(fmt::format("'{}' in '{}' is not a number", value, token));
  return {token.substr(0, eq), v};
}

core::Interval bootstrap_ratio_ci(std::span<const double> baseline, std::span<const double> candidate,
                                  double confidence, int resamples, uint64_t seed) {
  if (baseline.empty() || candidate.empty() || resamples < 1) return {1, 1};
  std::vector<double> sb(baseline.begin(), baseline.end()), sc(candidate.begin(), candidate.end());
  std::sort(sb.begin(), sb.end());
  std::sort(sc.begin(), sc.end());
  const std::vector<double> ratios = bootstrap_ratios(sb, sc, resamples, seed);
  return percentile_interval(ratios, confidence);
}

namespace {
// Counts the verdicts and sets the summary line and exit code from the points' verdicts.
void finish(Comparison& cmp) {
  cmp.counts.clear();
  bool any_fail = false, any_noisy = false;
  for (const auto& p : cmp.points) {
    ++cmp.counts[p.verdict];
    any_fail |= p.fails;
    any_noisy |= p.verdict == Verdict::noisy;
  }
  std::string tally;
  for (const auto& [v, n] : cmp.counts) tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", n, to_string(v));
  const std::string of = fmt::format("{} of {} points", tally.empty() ? "no points" : tally, cmp.points.size());
  if (any_fail) {
    cmp.exit_code = kExitRegression;
    cmp.summary = "FAIL: regression (" + of + ")";
  } else if (any_noisy) {
    cmp.exit_code = kExitInconclusive;
    cmp.summary = "INCONCLUSIVE: noisy points and no regression (" + of + ")";
  } else if (cmp.geomean_points == 0) {
    // A gate that compared nothing must not pass silently.
    cmp.exit_code = kExitInconclusive;
    cmp.summary = "INCONCLUSIVE: no point could be compared (" + of + ")";
  } else {
    cmp.exit_code = kExitOk;
    cmp.summary = "PASS: no regression (" + of + ")";
  }
  if (!cmp.rerun_label.empty()) cmp.summary += "; slower points re-checked against " + cmp.rerun_label;
}
}  // namespace

Comparison compare(const core::Results& baseline, const core::Results& candidate, const Options& o,
                   const std::string& baseline_label, const std::string& candidate_label) {
  validate(o);
  Comparison cmp;
  cmp.options = o;
  cmp.baseline_label = baseline_label;
  cmp.candidate_label = candidate_label;
  cmp.baseline_device = describe_device(baseline.context);
  cmp.candidate_device = describe_device(candidate.context);
  const auto differences = device_differences(baseline.context, candidate.context);
  if (!differences.empty()) {
    std::string joined;
    for (const auto& d : differences) joined += (joined.empty() ? "" : ", ") + d;
    if (!o.allow_device_mismatch)
      throw InputError(fmt::format("baseline and candidate were measured on different setups ({}); "
                                   "rerun the baseline here or pass --allow-device-mismatch",
                                   joined));
    cmp.device_differences = differences;
  }
  if (auto w = core::recorded_busy_warning(baseline.context, baseline_label)) cmp.busy_warnings.push_back(*w);
  if (auto w = core::recorded_busy_warning(candidate.context, candidate_label)) cmp.busy_warnings.push_back(*w);

  std::map<std::string, const core::Record*> cand_by_key;
  for (const auto& r : candidate.records) cand_by_key.emplace(core::point_key(r), &r);
  std::set<std::string> seen;
  std::vector<std::vector<double>> log_ratio_resamples;  // per compared point
  // A compared point waiting for the family's cutoffs: its records and its place.
  struct Pending {
    const core::Record *b, *c;
    size_t index;
  };
  std::vector<Pending> to_decide;

  for (const auto& b : baseline.records) {
    PointComparison pc;
    pc.key = core::point_key(b);
    if (!seen.insert(pc.key).second) continue;  // a duplicate key: the first record stands
    pc.shape = b.shape.label();
    pc.kernel = b.kernel;
    pc.baseline_status = b.status;
    auto it = cand_by_key.find(pc.key);
    if (it == cand_by_key.end()) {
      pc.verdict = Verdict::missing;
      pc.fails = o.fail_on_missing;
      pc.reason = "in the baseline only";
      cmp.points.push_back(std::move(pc));
      continue;
    }
    const core::Record& c = *it->second;
    pc.candidate_status = c.status;
    if (b.status == core::Status::unsupported && c.status == core::Status::unsupported) {
      // The kernel has never run this shape: nothing to compare and nothing broken.
      pc.verdict = Verdict::unsupported;
      pc.reason = fmt::format("unsupported in both runs{}", c.reason.empty() ? "" : " (" + c.reason + ")");
      cmp.points.push_back(std::move(pc));
      continue;
    }
    if (b.status != core::Status::ok || c.status != core::Status::ok) {
      pc.verdict = Verdict::error;
      // A point that worked before and does not now is a regression; one broken on both sides (or
      // fixed in the candidate) is reported but cannot be blamed on this change.
      pc.fails = b.status == core::Status::ok;
      pc.reason = fmt::format("baseline {}, candidate {}", status_text(b), status_text(c));
      cmp.points.push_back(std::move(pc));
      continue;
    }
    std::vector<double> ratios;
    measure_point(b, c, o, pc, ratios);
    if (pc.compared && !ratios.empty()) {
      for (double& r : ratios) r = std::log(r);
      log_ratio_resamples.push_back(std::move(ratios));
      to_decide.push_back({&b, &c, cmp.points.size()});
    }
    cmp.points.push_back(std::move(pc));
  }

  // The compared points are one family of tests: their verdicts are decided together, against
  // cutoffs that hold the false discovery rate (or, with no correction, each test) at alpha.
  std::vector<double> p_slower, p_faster;
  for (const auto& d : to_decide) {
    p_slower.push_back(cmp.points[d.index].p_slower);
    p_faster.push_back(cmp.points[d.index].p_faster);
  }
  Cutoffs cut{o.alpha, o.alpha};
  if (o.correction == Correction::benjamini_hochberg)
    cut = {benjamini_hochberg_cutoff(p_slower, o.alpha), benjamini_hochberg_cutoff(p_faster, o.alpha)};
  cmp.family_size = static_cast<int64_t>(to_decide.size());
  cmp.p_slower_cutoff = cut.slower;
  cmp.p_faster_cutoff = cut.faster;
  for (const auto& d : to_decide) decide_point(*d.b, *d.c, o, cut, cmp.family_size, cmp.points[d.index]);
  for (const auto& c : candidate.records) {
    PointComparison pc;
    pc.key = core::point_key(c);
    if (!seen.insert(pc.key).second) continue;
    pc.shape = c.shape.label();
    pc.kernel = c.kernel;
    pc.candidate_status = c.status;
    pc.verdict = Verdict::added;
    pc.reason = "in the candidate only";
    cmp.points.push_back(std::move(pc));
  }

  // Geometric mean of the ratios and its interval from the joint resamples.
  double log_sum = 0;
  for (const auto& p : cmp.points)
    if (p.compared) {
      log_sum += std::log(p.ratio);
      ++cmp.geomean_points;
    }
  if (cmp.geomean_points > 0) {
    cmp.geomean_ratio = std::exp(log_sum / static_cast<double>(cmp.geomean_points));
    std::vector<double> geo(static_cast<size_t>(o.bootstrap_resamples), 0.0);
    for (const auto& lr : log_ratio_resamples)
      for (size_t i = 0; i < geo.size(); ++i) geo[i] += lr[i];
    for (double& g : geo) g = std::exp(g / static_cast<double>(log_ratio_resamples.size()));
    cmp.geomean_ci = percentile_interval(geo, o.confidence);
  }

  finish(cmp);
  return cmp;
}

void confirm(Comparison& first, const Comparison& rerun, const std::string& rerun_label) {
  std::map<std::string, const PointComparison*> again;
  for (const auto& q : rerun.points) again[q.key] = &q;
  for (auto& p : first.points) {
    if (p.verdict != Verdict::slower) continue;
    const auto it = again.find(p.key);
    if (it == again.end() || it->second->verdict == Verdict::missing) {
      p.reason += "; not in the re-run, so not re-checked";
      continue;
    }
    const PointComparison& q = *it->second;
    if (q.verdict == Verdict::slower) {
      p.reason += fmt::format("; confirmed by the re-run: median {:+.1f}% (p = {:.2g})", 100 * (q.ratio - 1), q.p_slower);
      continue;
    }
    p.verdict = Verdict::unconfirmed;
    p.fails = false;
    p.reason = fmt::format("{}; the re-run says {}: {}", p.reason, to_string(q.verdict), q.reason);
  }
  first.rerun_label = rerun_label;
  for (const auto& w : rerun.busy_warnings)
    if (std::find(first.busy_warnings.begin(), first.busy_warnings.end(), w) == first.busy_warnings.end())
      first.busy_warnings.push_back(w);
  finish(first);
}

namespace {
double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }
}  // namespace

void to_json(nlohmann::json& j, const CounterDelta& d) {
  j = {{"name", d.name},
       {"source", d.source},
       {"baseline", finite_or_zero(d.baseline)},
       {"candidate", finite_or_zero(d.candidate)},
       {"change", std::isfinite(d.change) ? nlohmann::json(d.change) : nlohmann::json("inf")},
       {"limit", d.limit},
       {"regressed", d.regressed}};
}

void to_json(nlohmann::json& j, const PointComparison& p) {
  j = {{"key", p.key},
       {"shape", p.shape},
       {"kernel", p.kernel},
       {"verdict", std::string(to_string(p.verdict))},
       {"fails", p.fails},
       {"reason", p.reason},
       {"baseline_status", p.baseline_status},
       {"candidate_status", p.candidate_status}};
  if (p.verdict == Verdict::missing) j.erase("candidate_status");
  if (p.verdict == Verdict::added) j.erase("baseline_status");
  if (p.compared) {
    j["latency"] = {{"baseline_n", p.baseline_n},
                    {"candidate_n", p.candidate_n},
                    {"baseline_median_us", p.baseline_median_us},
                    {"candidate_median_us", p.candidate_median_us},
                    {"ratio", p.ratio},
                    {"ratio_ci_low", p.ratio_ci.low},
                    {"ratio_ci_high", p.ratio_ci.high},
                    {"judged_ci_low", p.judged_ci.low},
                    {"judged_ci_high", std::isfinite(p.judged_ci.high) ? nlohmann::json(p.judged_ci.high)
                                                                       : nlohmann::json("inf")},
                    {"p_slower", p.p_slower},
                    {"p_faster", p.p_faster},
                    {"p_slower_cutoff", p.p_slower_cutoff},
                    {"p_faster_cutoff", p.p_faster_cutoff},
                    {"exact_p", p.exact_p},
                    {"baseline_rel_stddev", p.baseline_rel_stddev},
                    {"candidate_rel_stddev", p.candidate_rel_stddev},
                    {"baseline_throttled_samples", p.baseline_throttled_samples},
                    {"candidate_throttled_samples", p.candidate_throttled_samples},
                    {"baseline_sm_mhz", p.baseline_sm_mhz},
                    {"candidate_sm_mhz", p.candidate_sm_mhz},
                    {"threshold", p.threshold},
                    {"latency_verdict", p.latency_verdict}};
  }
  if (!p.counters.empty()) j["counters"] = p.counters;
  if (!p.counters_note.empty()) j["counters_note"] = p.counters_note;
}

void to_json(nlohmann::json& j, const Comparison& c) {
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [v, n] : c.counts) counts[std::string(to_string(v))] = n;
  nlohmann::json kernel_threshold = c.options.kernel_threshold;
  j = {{"baseline", {{"label", c.baseline_label}, {"device", c.baseline_device}}},
       {"candidate", {{"label", c.candidate_label}, {"device", c.candidate_device}}},
       {"rerun", c.rerun_label.empty() ? nlohmann::json(nullptr) : nlohmann::json({{"label", c.rerun_label}})},
       {"device_mismatch_allowed", c.device_differences},
       {"options",
        {{"alpha", c.options.alpha},
         {"correction", std::string(to_string(c.options.correction))},
         {"threshold", c.options.threshold},
         {"kernel_threshold", kernel_threshold},
         {"max_rel_stddev", c.options.max_rel_stddev},
         {"counters", c.options.counters},
         {"counter_thresholds",
          {{"dram_bytes_increase", c.options.counter_thresholds.dram_bytes_increase},
           {"tensor_ops_increase", c.options.counter_thresholds.tensor_ops_increase},
           {"occupancy_decrease", c.options.counter_thresholds.occupancy_decrease}}},
         {"fail_on_missing", c.options.fail_on_missing},
         {"allow_device_mismatch", c.options.allow_device_mismatch},
         {"confidence", c.options.confidence},
         {"bootstrap_resamples", c.options.bootstrap_resamples},
         {"seed", c.options.seed}}},
       {"points", c.points},
       {"counts", counts},
       {"family", {{"points", c.family_size},
                   {"p_slower_cutoff", c.p_slower_cutoff},
                   {"p_faster_cutoff", c.p_faster_cutoff}}},
       {"geomean", {{"points", c.geomean_points},
                    {"ratio", c.geomean_ratio},
                    {"ci_low", c.geomean_ci.low},
                    {"ci_high", c.geomean_ci.high}}},
       {"exit_code", c.exit_code},
       {"summary", c.summary}};
  if (!c.busy_warnings.empty()) j["busy_machine"] = c.busy_warnings;  // only when a run was busy
}

}  // namespace attnprof::gate
