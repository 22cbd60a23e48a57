// core/instruction_mix: the pipes grouped into classes (every pipe counter in exactly one class), and the
// mix of a hand-made counter record with known shares, per-FLOP figures and remainder.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "core/instruction_mix.hpp"
#include "core/metric_names.hpp"

using namespace attnprof::core;

namespace {

const InstructionClass& class_of(std::string_view metric) {
  for (const InstructionClass& c : kInstructionClasses)
    for (const char* m : c.metrics)
      if (m && metric == m) return c;
  FAIL("no class counts " << metric);
  return kInstructionClasses.front();
}

// A call of 1000 warp instructions over 1e6 FLOPs: every pipe but FP64 counted, 50 left to no pipe.
std::map<std::string, double> known_counters() {
  return {{kMetricInstExecuted, 1000},    {kMetricInstPipeTensor, 100}, {kMetricInstPipeFma, 300},
          {kMetricInstPipeAlu, 200},      {kMetricInstPipeXu, 50},      {kMetricInstPipeLsu, 150},
          {kMetricInstPipeCbu, 40},       {kMetricInstPipeAdu, 10},     {kMetricInstPipeUniform, 100},
          {kMetricInstPipeTma, 0},        {kMetricWarpsPerIssue, 6.5},  {kMetricDramRead, 1e9}};
}

}  // namespace

TEST_CASE("instruction classes: every pipe counter of the mix is in exactly one class, the total in none") {
  std::set<std::string> in_classes, names;
  size_t counters = 0;
  for (const InstructionClass& c : kInstructionClasses) {
    CHECK(names.insert(std::string(c.name)).second);
    CHECK_FALSE(c.executes.empty());
    REQUIRE(c.metrics[0] != nullptr);
    for (const char* m : c.metrics)
      if (m) {
        CHECK(in_classes.insert(m).second);
        ++counters;
      }
  }
  CHECK(counters == in_classes.size());
  std::set<std::string> requested(kInstructionMixMetrics.begin(), kInstructionMixMetrics.end());
  requested.erase(kMetricInstExecuted);
  CHECK(in_classes == requested);
  CHECK(in_classes.count(kMetricInstExecuted) == 0);
}

TEST_CASE("instruction classes: the pipes a reader looks for are where the docs say") {
  CHECK(class_of(kMetricInstPipeTensor).name == "tensor");
  CHECK(class_of(kMetricInstPipeFma).name == "FMA");
  CHECK(class_of(kMetricInstPipeAlu).name == "ALU");
  CHECK(class_of(kMetricInstPipeXu).name == "transcendental");
  CHECK(class_of(kMetricInstPipeLsu).name == "load/store");
  CHECK(class_of(kMetricInstPipeCbu).name == "branch/barrier");
  CHECK(class_of(kMetricInstPipeAdu).name == "branch/barrier");
  CHECK(class_of(kMetricInstPipeUniform).name == "uniform");
  CHECK(class_of(kMetricInstPipeTma).name == "TMA");
  CHECK(class_of(kMetricInstPipeFp64).name == "FP64");
  CHECK(class_of(kMetricInstPipeCbu).pipes == "CBU, ADU");
}

TEST_CASE("instruction mix: shares of all warp instructions, per 1k FLOP, and the remainder no pipe counted") {
  const auto mix = instruction_mix(known_counters(), 1e6);
  REQUIRE(mix);
  CHECK(mix->warp_instructions == 1000);
  REQUIRE(mix->per_kflop);
  CHECK(*mix->per_kflop == Approx(1.0));  // 1000 instructions / 1000 kFLOP
  // Eight classes: FP64 was not collected, TMA was (as 0).
  REQUIRE(mix->classes.size() == 8);
  CHECK(mix->classes.front().info->name == "tensor");  // the table's order
  CHECK(class_count(*mix, "FP64") == nullptr);
  const auto* fma = class_count(*mix, "FMA");
  REQUIRE(fma);
  CHECK(fma->warp_instructions == 300);
  CHECK(fma->share == Approx(0.3));
  REQUIRE(fma->per_kflop);
  CHECK(*fma->per_kflop == Approx(0.3));
  const auto* control = class_count(*mix, "branch/barrier");  // CBU + ADU
  REQUIRE(control);
  CHECK(control->warp_instructions == 50);
  CHECK(control->share == Approx(0.05));
  const auto* tma = class_count(*mix, "TMA");
  REQUIRE(tma);
  CHECK(tma->warp_instructions == 0);
  CHECK(mix->unclassified == Approx(50));  // 1000 - 950
  REQUIRE(mix->unclassified_per_kflop);
  CHECK(*mix->unclassified_per_kflop == Approx(0.05));
  REQUIRE(mix->warp_cycles_per_issue);
  CHECK(*mix->warp_cycles_per_issue == 6.5);
  CHECK(largest_classes_text(*mix, 3) == "FMA 30%, ALU 20%, load/store 15%");
  // A class with nothing is never among the largest.
  CHECK(largest_classes(*mix, 20).size() == 7);
}

TEST_CASE("instruction mix: absent without the total or any class; no per-FLOP figures without FLOPs") {
  auto counters = known_counters();
  CHECK_FALSE(instruction_mix({{kMetricInstPipeFma, 10}}, 1e6));          // no total
  CHECK_FALSE(instruction_mix({{kMetricInstExecuted, 10}}, 1e6));         // a total alone (--metrics)
  CHECK_FALSE(instruction_mix({{kMetricInstExecuted, 0}, {kMetricInstPipeFma, 0}}, 1e6));
  counters[kMetricInstExecuted] = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(instruction_mix(counters, 1e6));

  const auto no_flops = instruction_mix(known_counters(), 0);
  REQUIRE(no_flops);
  CHECK_FALSE(no_flops->per_kflop);
  CHECK_FALSE(no_flops->classes.front().per_kflop);

  // Pipes that count more than the total (overlapping pipes) leave no negative remainder.
  auto over = known_counters();
  over[kMetricInstPipeFp64] = 500;
  const auto mix = instruction_mix(over, 1e6);
  REQUIRE(mix);
  CHECK(mix->unclassified == 0);
  // A non-finite class counter counts as not collected.
  over[kMetricInstPipeFp64] = std::numeric_limits<double>::infinity();
  CHECK(class_count(*instruction_mix(over, 1e6), "FP64") == nullptr);
}

TEST_CASE("instruction mix of a record: its counters when ok, and its exact FLOPs") {
  Record r;
  r.cost.flops = 2e6;
  r.counters.total = known_counters();
  CHECK_FALSE(instruction_mix(r));  // counters not collected
  r.counters.status = CounterStatus::ok;
  const auto mix = instruction_mix(r);
  REQUIRE(mix);
  REQUIRE(mix->per_kflop);
  CHECK(*mix->per_kflop == Approx(0.5));
}
