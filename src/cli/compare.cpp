// attnprof compare BASELINE.json CANDIDATE.json: the CI regression gate. Declares the options and
// calls gate::compare; the decision rules live in src/gate (docs/ci-gate.md).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/validators.hpp"
#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/results.hpp"
#include "gate/compare.hpp"
#include "gate/render.hpp"

namespace attnprof::cli {

namespace {

struct CompareArgs {
  std::string baseline_path, candidate_path;
  gate::Options options;
  std::vector<std::string> kernel_thresholds, counter_thresholds;
  std::string md_path, junit_path, json_path;
  std::string confirm_path, rerun_spec_path;
  bool quiet = false;
};

// The shapes of the points the comparison found slower, as a sweep file ({"shapes": [...]}) that
// `attnprof sweep --spec-file` re-measures; returns the kernels involved, for --kernels.
std::vector<std::string> write_rerun_spec(const gate::Comparison& cmp, const core::Results& candidate,
                                          const std::string& path) {
  std::map<std::string, const core::Record*> by_key;
  for (const auto& r : candidate.records) by_key[core::point_key(r)] = &r;
  nlohmann::json shapes = nlohmann::json::array();
  std::set<std::string> seen_shapes;
  std::vector<std::string> kernels;
  for (const auto& p : cmp.points) {
    if (p.verdict != gate::Verdict::slower) continue;
    const auto it = by_key.find(p.key);
    if (it == by_key.end()) continue;
    const core::Shape& s = it->second->shape;
    if (std::find(kernels.begin(), kernels.end(), p.kernel) == kernels.end()) kernels.push_back(p.kernel);
    if (!seen_shapes.insert(s.label()).second) continue;
    nlohmann::json shape = {{"batch", s.batch}, {"heads", s.heads}, {"kv_heads", s.kv_heads}, {"seq_q", s.seq_q},
                            {"seq_k", s.seq_k}, {"hdim", s.hdim}, {"causal", s.causal},
                            {"dtype", std::string(core::to_string(s.dtype))}};
    if (s.distinct_hdim_v()) shape["hdim_v"] = s.hdim_v;
    shapes.push_back(std::move(shape));
  }
  core::write_file(path, shapes.empty() ? std::string("{}\n") : core::dump_json(nlohmann::json{{"shapes", shapes}}, 1) + "\n");
  return kernels;
}

void apply_counter_threshold(const std::string& token, gate::CounterThresholds& t) {
  const auto [name, value] = gate::parse_name_value(token);
  if (name == "dram") t.dram_bytes_increase = value;
  else if (name == "tensor") t.tensor_ops_increase = value;
  else if (name == "occupancy") t.occupancy_decrease = value;
  else throw InputError(fmt::format("unknown counter '{}' in '{}' (dram, tensor, occupancy)", name, token));
}

void run_compare(const CompareArgs& a, Run& run) {
  gate::Options o = a.options;
  for (const auto& token : a.kernel_thresholds) {
    const auto [kernel, value] = gate::parse_name_value(token);
    o.kernel_threshold[kernel] = value;
  }
  for (const auto& token : a.counter_thresholds) apply_counter_threshold(token, o.counter_thresholds);

  core::check_distinct_paths({{"baseline", a.baseline_path}, {"candidate", a.candidate_path}, {"--confirm", a.confirm_path}},
                             {{"--md", a.md_path}, {"--junit", a.junit_path}, {"--json", a.json_path},
                              {"--rerun-spec", a.rerun_spec_path}});
  const core::Results baseline = core::read_results(a.baseline_path);
  const core::Results candidate = core::read_results(a.candidate_path);
  gate::Comparison cmp = gate::compare(baseline, candidate, o, a.baseline_path, a.candidate_path);
  if (!a.rerun_spec_path.empty()) {
    const std::vector<std::string> kernels = write_rerun_spec(cmp, candidate, a.rerun_spec_path);
    if (!kernels.empty() && !a.quiet) {
      fmt::print("re-run the slower points: attnprof sweep --spec-file {} --kernels {} ..., then compare again with "
                 "--confirm\n", core::escape::one_line(a.rerun_spec_path),
                 core::escape::one_line(fmt::format("{}", fmt::join(kernels, ","))));
    }
  }
  if (!a.confirm_path.empty()) {
    const core::Results rerun = core::read_results(a.confirm_path);
    gate::confirm(cmp, gate::compare(baseline, rerun, o, a.baseline_path, a.confirm_path), a.confirm_path);
  }

  // Said on stderr even with -q: a verdict on runs from a busy machine is the machine's as much as the code's.
  for (const auto& w : cmp.busy_warnings) fmt::print(stderr, "attnprof: warning: {}\n", core::escape::terminal(w));
  if (!a.md_path.empty()) core::write_file(a.md_path, gate::render_markdown(cmp));
  if (!a.junit_path.empty()) core::write_file(a.junit_path, gate::render_junit(cmp));
  if (!a.json_path.empty()) core::write_file(a.json_path, gate::render_json(cmp));
  const std::string text = a.quiet ? core::escape::terminal(cmp.summary) + "\n" : gate::render_terminal(cmp);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  run.exit_code = cmp.exit_code;
}

}  // namespace

void add_compare(CLI::App& app, Run& run) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare a candidate results file with a baseline: exit 0 pass, 1 regression, 2 bad input, "
      "3 inconclusive (noisy)");
  cmd->add_option("baseline", args->baseline_path, "Baseline results JSON")->required();
  cmd->add_option("candidate", args->candidate_path, "Candidate results JSON")->required();
  auto& o = args->options;
  cmd->add_option("--alpha", o.alpha,
                  "False discovery rate over the compared points (with --correction none: each point's "
                  "significance level) of the one-sided Mann-Whitney U tests")
      ->capture_default_str()
      ->check(kOpenUnitInterval);
  cmd->add_option_function<std::string>(
         "--correction", [args](const std::string& v) { args->options.correction = gate::parse_correction(v); },
         "Multiple-comparison control over the points: bh (Benjamini-Hochberg false discovery rate, the "
         "default) or none")
      ->check(CLI::IsMember({"bh", "none"}));
  cmd->add_option("--threshold", o.threshold, "Smallest slowdown that fails, as a fraction (0.03 = 3%)")
      ->capture_default_str()
      ->check(kFinite & kGateThreshold);
  cmd->add_option("--kernel-threshold", args->kernel_thresholds,
                  "Per-kernel slowdown threshold KERNEL=FRACTION, e.g. fused=0.05 (repeatable, or comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--max-rel-stddev", o.max_rel_stddev,
                  "Spread ceiling (stddev / mean) of either side; above it a point is judged on the whole "
                  "interval of its median ratio (noisy when the interval straddles the threshold)")
      ->capture_default_str()
      ->check(kFinite & CLI::PositiveNumber);
  cmd->add_flag("--counters", o.counters,
                "Also fail on counter regressions: DRAM bytes, tensor ops, achieved occupancy");
  cmd->add_option("--counter-threshold", args->counter_thresholds,
                  "Counter limit NAME=FRACTION for dram (+), tensor (+), occupancy (-); defaults dram=0.02 "
                  "tensor=0.02 occupancy=0.05 (repeatable, or comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  // A gate that passes when the candidate lost points is a hole: missing points fail by default.
  auto* allow_missing = cmd->add_flag("--allow-missing{false}", o.fail_on_missing,
                                      "Let a baseline point missing from the candidate pass (default: it fails "
                                      "the gate, exit 1)");
  cmd->add_flag("--fail-on-missing", o.fail_on_missing, "A baseline point missing from the candidate fails (the default)")
      ->excludes(allow_missing);
  cmd->add_flag("--allow-device-mismatch", o.allow_device_mismatch,
                "Compare across GPU model, driver, max SM clock or backend (printed in the verdict)");
  cmd->add_option("--confidence", o.confidence, "Confidence of the bootstrap interval of the median ratio")
      ->capture_default_str()
      ->check(kOpenUnitInterval);
  cmd->add_option("--resamples", o.bootstrap_resamples, "Bootstrap resamples")
      ->capture_default_str()
      ->check(CLI::Range(10, 100000));
  cmd->add_option("--seed", o.seed, "Bootstrap seed")->capture_default_str();
  cmd->add_option("--confirm", args->confirm_path,
                  "A second run of the candidate (e.g. of the slower points only): a slower point fails only "
                  "if it is slower there too");
  cmd->add_option("--rerun-spec", args->rerun_spec_path,
                  "Write the shapes of the slower points as a sweep file for --spec-file ({} when none)");
  cmd->add_option("--md", args->md_path, "Write a Markdown summary (PR comment, job summary)");
  cmd->add_option("--junit", args->junit_path, "Write JUnit XML, one testcase per point");
  cmd->add_option("--json", args->json_path, "Write the verdicts as JSON");
  cmd->add_flag("-q,--quiet", args->quiet, "Print only the summary line");
  cmd->callback([args, &run] { run_compare(*args, run); });
}

}  // namespace attnprof::cli
