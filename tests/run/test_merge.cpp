#include <catch2/catch.hpp>

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/sweep_spec.hpp"
#include "run/merge.hpp"
#include "run/plan.hpp"

using namespace attnprof;
using namespace attnprof::run;
using nlohmann::json;

namespace {

const char* kSpec = "batch=1;heads=2;seq=64,128,256;hdim=64;dtype=fp32";

// Shard k of n of the test sweep, as `attnprof sweep --shard k/n` would write it.
core::Results shard(int k, int n, const char* spec = kSpec) {
  const std::vector<KernelRef> kernels{{"reference", core::KernelKind::materialized},
                                       {"fused", core::KernelKind::fused}};
  const auto all = plan_points(core::parse_axes(spec).shapes, kernels);
  core::Results r;
  r.context.backend = attnprof::core::BackendKind::cpu;
  r.context.device.name = "CPU: test";
  r.context.sweep = {{"spec", spec},         {"preset", ""},
                     {"shard", fmt::format("{}/{}", k, n)},
                     {"points_total", all.size()}, {"kernels", {"reference", "fused"}}};
  for (const auto& p : select_shard(all, ShardSpec{k, n})) {
    core::Record rec;
    rec.shape = p.shape;
    rec.kernel = p.kernel;
    rec.backend = attnprof::core::BackendKind::cpu;
    r.records.push_back(rec);
  }
  return r;
}

std::vector<std::string> keys(const core::Results& r) {
  std::vector<std::string> out;
  for (const auto& rec : r.records) out.push_back(core::point_key(rec));
  return out;
}

}  // namespace

TEST_CASE("merging every shard gives the whole sweep in sweep order") {
  const auto whole = shard(1, 1);
  REQUIRE(whole.records.size() == 6);
  const auto merged = merge_results({{"c", shard(3, 3)}, {"a", shard(1, 3)}, {"b", shard(2, 3)}}, {});
  CHECK(keys(merged) == keys(whole));
  CHECK(merged.context.sweep.at("shard") == "1/1");
  CHECK(merged.context.sweep.at("merged_from").size() == 3);
  CHECK(expected_keys(whole.context) == keys(whole));
}

TEST_CASE("a duplicate point is refused unless allowed") {
  CHECK_THROWS_AS(merge_results({{"a", shard(1, 2)}, {"b", shard(2, 2)}, {"a2", shard(1, 2)}}, {}),
                  InputError);
  MergeOptions allow;
  allow.allow_duplicates = true;
  const auto merged = merge_results({{"a", shard(1, 2)}, {"b", shard(2, 2)}, {"a2", shard(1, 2)}}, allow);
  CHECK(merged.records.size() == 6);
}

TEST_CASE("a gap (a shard missing, or a point missing) is refused unless allowed") {
  CHECK_THROWS_AS(merge_results({{"a", shard(1, 2)}}, {}), InputError);
  auto cut = shard(2, 2);
  cut.records.pop_back();
  CHECK_THROWS_AS(merge_results({{"a", shard(1, 2)}, {"b", cut}}, {}), InputError);
  MergeOptions allow;
  allow.allow_partial = true;
  const auto merged = merge_results({{"a", shard(1, 2)}, {"b", cut}}, allow);
  CHECK(merged.records.size() == 5);
  CHECK(std::any_of(merged.context.notices.begin(), merged.context.notices.end(),
                    [](const std::string& n) { return n.find("partial") != std::string::npos; }));
}

TEST_CASE("shards of another sweep, device or backend are refused") {
  CHECK_THROWS_AS(merge_results({{"a", shard(1, 2)}, {"b", shard(2, 2, "batch=1;heads=2;seq=64;hdim=64;dtype=fp32")}}, {}),
                  InputError);
  auto other_device = shard(2, 2);
  other_device.context.device.name = "NVIDIA H200";
  CHECK_THROWS_AS(merge_results({{"a", shard(1, 2)}, {"b", other_device}}, {}), InputError);
  auto other_backend = shard(2, 2);
  other_backend.context.backend = attnprof::core::BackendKind::cuda;
  CHECK_THROWS_AS(merge_results({{"a", shard(1, 2)}, {"b", other_backend}}, {}), InputError);
  auto other_kernels = shard(2, 2);
  other_kernels.context.sweep["kernels"] = {"fused"};
  CHECK_THROWS_AS(merge_results({{"a", shard(1, 2)}, {"b", other_kernels}}, {}), InputError);
  core::Results no_sweep;
  CHECK_THROWS_AS(merge_results({{"a", no_sweep}}, {}), InputError);
  CHECK_THROWS_AS(merge_results({}, {}), InputError);
}

TEST_CASE("a sweep that cannot be recomputed falls back to the point count") {
  auto a = shard(1, 2), b = shard(2, 2);
  for (auto* r : {&a, &b}) r->context.sweep["spec"] = "[{\"batch\": 1}]";  // a shape list from a file
  CHECK(expected_keys(a.context).empty());
  CHECK(merge_results({{"a", a}, {"b", b}}, {}).records.size() == 6);
  CHECK_THROWS_AS(merge_results({{"a", a}}, {}), InputError);
}
