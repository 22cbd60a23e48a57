#include "run/merge.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/sweep_spec.hpp"
#include "run/plan.hpp"

namespace attnprof::run {

using nlohmann::json;

namespace {

// The context's sweep block is untyped JSON from a file: a field of the wrong type is bad input.
std::string sweep_field(const core::Context& c, const char* key) {
  if (!c.sweep.is_object()) return "";
  auto it = c.sweep.find(key);
  if (it == c.sweep.end() || it->is_null()) return "";
  if (!it->is_string()) throw InputError(fmt::format("context.sweep.{} is not a string", key));
  return it->get<std::string>();
}

std::vector<std::string> sweep_kernels(const core::Context& c) {
  if (!c.sweep.is_object() || !c.sweep.contains("kernels")) return {};
  const json& k = c.sweep.at("kernels");
  if (!k.is_array() || !std::all_of(k.begin(), k.end(), [](const json& e) { return e.is_string(); }))
    throw InputError("context.sweep.kernels is not a list of names");
  return k.get<std::vector<std::string>>();
}

// Each input's context, checked once so every later read of it is safe.
void check_context(const MergeInput& in) {
  try {
    sweep_field(in.results.context, "spec");
    sweep_field(in.results.context, "preset");
    sweep_field(in.results.context, "shard");
    sweep_kernels(in.results.context);
    const json& sweep = in.results.context.sweep;
    if (sweep.is_object() && sweep.contains("points_total") && !sweep.at("points_total").is_number_unsigned())
      throw InputError("context.sweep.points_total is not a count");
  } catch (const InputError& e) {
    throw InputError(fmt::format("'{}': {}", in.name, e.what()));
  }
}

}  // namespace

std::vector<std::string> expected_keys(const core::Context& context) {
  const auto kernel_names = sweep_kernels(context);
  if (kernel_names.empty()) return {};
  const std::string spec_text = sweep_field(context, "spec");
  const std::string preset_name = sweep_field(context, "preset");
  std::vector<core::Shape> shapes;
  try {
    if (!preset_name.empty()) {
      auto spec = core::preset(preset_name);
      if (spec.text != spec_text) return {};  // the preset changed since: the text is what ran
      shapes = std::move(spec.shapes);
    } else if (spec_text.starts_with("[")) {
      // A sweep file's shape list: its text is the list's compact JSON (docs/sweep-spec.md).
      shapes = core::parse_sweep_file(fmt::format("{{\"shapes\": {}}}", spec_text), "the sweep's shapes").shapes;
    } else {
      shapes = core::parse_axes(spec_text).shapes;
    }
  } catch (const InputError&) {
    return {};  // a spec this attnprof cannot recompute (a newer grammar): nothing to check against
  }
  std::vector<KernelRef> kernels;
  for (const auto& name : kernel_names) kernels.push_back({name, core::KernelKind::fused});
  std::vector<std::string> keys;
  for (const auto& p : plan_points(shapes, kernels)) keys.push_back(p.key);
  return keys;
}

core::Results merge_results(const std::vector<MergeInput>& inputs, const MergeOptions& options) {
  if (inputs.empty()) throw InputError("merge needs at least one results file");
  const auto& first = inputs.front();
  const auto& c0 = first.results.context;
  for (const auto& in : inputs) {
    const auto& c = in.results.context;
    check_context(in);
    if (!c.sweep.is_object() || !c.sweep.contains("spec"))
      throw InputError(fmt::format("'{}' has no sweep in its context: not written by attnprof sweep", in.name));
    if (sweep_field(c, "spec") != sweep_field(c0, "spec") ||
        sweep_field(c, "preset") != sweep_field(c0, "preset"))
      throw InputError(fmt::format("'{}' is from another sweep than '{}' (spec '{}' vs '{}')", in.name,
                                   first.name, sweep_field(c, "spec"), sweep_field(c0, "spec")));
    if (sweep_kernels(c) != sweep_kernels(c0))
      throw InputError(fmt::format("'{}' measured other kernels than '{}' ({} vs {})", in.name,
                                   first.name, json(sweep_kernels(c)).dump(),
                                   json(sweep_kernels(c0)).dump()));
    if (c.backend != c0.backend)
      throw InputError(fmt::format("'{}' ran the {} backend, '{}' the {} backend", in.name,
                                   core::to_string(c.backend), first.name, core::to_string(c0.backend)));
    if (c.device.name != c0.device.name)
      throw InputError(fmt::format("'{}' ran on '{}', '{}' on '{}'", in.name, c.device.name, first.name,
                                   c0.device.name));
  }

  core::Results merged;
  merged.context = c0;
  std::map<std::string, std::string> origin;  // key -> file it came from
  std::vector<core::Record> records;
  std::vector<std::string> shards;
  int dropped_duplicates = 0;
  for (const auto& in : inputs) {
    shards.push_back(sweep_field(in.results.context, "shard"));
    for (const auto& notice : in.results.context.notices)
      if (std::find(merged.context.notices.begin(), merged.context.notices.end(), notice) ==
          merged.context.notices.end())
        merged.context.notices.push_back(notice);
    for (const auto& r : in.results.records) {
      const std::string key = core::point_key(r);
      auto [it, fresh] = origin.emplace(key, in.name);
      if (!fresh) {
        if (!options.allow_duplicates)
          throw InputError(fmt::format("point '{}' is in both '{}' and '{}' (--allow-duplicates keeps "
                                       "the first)", key, it->second, in.name));
        ++dropped_duplicates;
        continue;
      }
      records.push_back(r);
    }
  }

  const auto expected = expected_keys(c0);
  int64_t missing = 0;
  std::string first_missing;
  if (!expected.empty()) {
    // A record of a point the sweep does not have would pass for a measurement of this sweep.
    const std::set<std::string> planned(expected.begin(), expected.end());
    for (const auto& [key, file] : origin)
      if (!planned.count(key))
        throw InputError(fmt::format("'{}' holds point '{}', which is not in the sweep", file, key));
    for (const auto& key : expected)
      if (!origin.count(key)) {
        if (missing++ == 0) first_missing = key;
      }
    // Sweep order, whatever order the shards came in.
    std::map<std::string, size_t> rank;
    for (size_t i = 0; i < expected.size(); ++i) rank.emplace(expected[i], i);
    std::stable_sort(records.begin(), records.end(), [&](const core::Record& a, const core::Record& b) {
      auto ra = rank.find(core::point_key(a)), rb = rank.find(core::point_key(b));
      const size_t ia = ra == rank.end() ? expected.size() : ra->second;
      const size_t ib = rb == rank.end() ? expected.size() : rb->second;
      return ia < ib;
    });
  } else if (c0.sweep.contains("points_total") && c0.sweep.at("points_total").is_number_unsigned()) {
    missing = std::max<int64_t>(0, c0.sweep.at("points_total").get<int64_t>() -
                                       static_cast<int64_t>(records.size()));
  }
  if (missing > 0 && !options.allow_partial) {
    if (!first_missing.empty())
      throw InputError(fmt::format("{} point(s) of the sweep are in no input, e.g. '{}' (a shard "
                                   "missing or interrupted; --allow-partial accepts)", missing,
                                   first_missing));
    throw InputError(fmt::format("{} point(s) of the sweep are in no input (a shard missing or "
                                 "interrupted; --allow-partial accepts)", missing));
  }

  merged.records = std::move(records);
  merged.context.sweep["shard"] = "1/1";
  merged.context.sweep["merged_from"] = shards;
  merged.context.sweep["points"] = merged.records.size();
  merged.context.notices.push_back(
      fmt::format("merged from {} results file(s) (shards {})", inputs.size(), json(shards).dump()));
  if (missing > 0)
    merged.context.notices.push_back(fmt::format("partial: {} point(s) of the sweep are missing", missing));
  if (dropped_duplicates > 0)
    merged.context.notices.push_back(
        fmt::format("{} duplicate point(s) dropped (the first input's record kept)", dropped_duplicates));
  return merged;
}

}  // namespace attnprof::run
