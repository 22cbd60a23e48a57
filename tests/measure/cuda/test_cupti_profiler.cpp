// measure/cuda/cupti_profiler.cpp, its host half (no GPU needed: CUPTI checks metric names offline for
// a named chip): the default metrics valid on GH100 and planned as one configuration (with the
// instruction mix of --stalls, one pass more), unknown names refused by name, CUPTI failures reported
// as "unavailable" with the fix, per-launch counters folded into a call total. Collecting counters on a device is tested in tests/gpu/test_gpu_measure.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/figures.hpp"
#include "core/errors.hpp"
#include "core/metric_names.hpp"
#include "core/results.hpp"
#include "measure/counter_batch.hpp"
#include "measure/cuda/cupti_profiler.hpp"

namespace {

namespace m = attnprof::measure;
namespace core = attnprof::core;

constexpr const char* kChip = "GH100";

}  // namespace

TEST_CASE("default metrics are all valid on GH100 and unknown names are refused by name") {
  REQUIRE_NOTHROW(m::validate_metrics(m::default_metrics(), kChip));
  try {
    m::validate_metrics({"dram__bytes_read.sum", "dram__bytez_read.sum"}, kChip);
    FAIL("an unknown metric was accepted");
  } catch (const attnprof::InputError& e) {
    REQUIRE(std::string(e.what()).find("'dram__bytez_read.sum'") != std::string::npos);
  }
  // Names Nsight Compute has but CUPTI does not (reference doc: invalid on GH100).
  REQUIRE_THROWS_AS(m::validate_metrics({"launch__registers_per_thread"}, kChip), attnprof::InputError);
  // A second SASS-op metric beside the default ffma would read ffma's count: refused by name.
  try {
    m::validate_metrics({"sm__sass_thread_inst_executed_op_fadd_pred_on.sum"}, kChip);
    FAIL("a second SASS-op metric was accepted");
  } catch (const attnprof::InputError& e) {
    REQUIRE(std::string(e.what()).find("fadd_pred_on") != std::string::npos);
  }
  REQUIRE(m::passes_needed({"dram__bytes_read.sum"}, kChip) >= 1);
}

TEST_CASE("the default metric set is planned as one configuration: 15 passes on GH100") {
  // Added one name per call, CUPTI gave each name passes of its own (29 for the set before the memory
  // levels, pipes and stall ratios were added); added in one call it packs them. The two
  // speed-of-light metrics are most of it (sm__throughput alone is 8); the 12 diagnosis metrics added
  // with the memory levels cost 2 passes (13 before).
  std::vector<std::string> with_marker = m::default_metrics();
  with_marker.push_back(m::kMarkerMetric);
  const int64_t passes = m::passes_needed(with_marker, kChip);
  attnprof::gpu_test::figure("MEASURE default metric set on %s: %lld passes\n", kChip, static_cast<long long>(passes));
  REQUIRE(passes == 15);
  int64_t one_by_one = 0;
  for (const auto& name : with_marker) one_by_one = std::max(one_by_one, m::passes_needed({name}, kChip));
  REQUIRE(passes >= one_by_one);  // never fewer than its costliest metric alone
}

TEST_CASE("the instruction mix of --stalls is valid on GH100 and adds one pass to the default set") {
  const std::vector<std::string> mix(core::kInstructionMixMetrics.begin(), core::kInstructionMixMetrics.end());
  REQUIRE_NOTHROW(m::validate_metrics(mix, kChip));
  std::vector<std::string> with_mix = m::default_metrics();
  with_mix.insert(with_mix.end(), mix.begin(), mix.end());
  with_mix.push_back(m::kMarkerMetric);
  const int64_t passes = m::passes_needed(with_mix, kChip);
  attnprof::gpu_test::figure("MEASURE default metric set with the instruction mix on %s: %lld passes\n", kChip,
                             static_cast<long long>(passes));
  REQUIRE(passes == 16);
}

TEST_CASE("CUPTI failures become 'unavailable' with the reason and the fix") {
  const core::Counters denied = m::unavailable_counters(35 /* INSUFFICIENT_PRIVILEGES */, "cuptiRangeProfilerStart");
  REQUIRE(denied.status == attnprof::core::CounterStatus::unavailable);
  REQUIRE(denied.reason.find("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES") != std::string::npos);
  REQUIRE(denied.reason.find("NVreg_RestrictProfilingToAdminUsers=0") != std::string::npos);
  const core::Counters busy = m::unavailable_counters(26 /* HARDWARE_BUSY */, "cuptiRangeProfilerStart");
  REQUIRE(busy.status == attnprof::core::CounterStatus::unavailable);
  REQUIRE(busy.reason.find("another profiler") != std::string::npos);
}

TEST_CASE("per-launch counters fold into a call total: sums add, ratios are duration-weighted") {
  std::vector<core::KernelCounters> per_kernel(2);
  per_kernel[0].metrics = {{"gpu__time_duration.sum", 100}, {"dram__bytes_read.sum", 1e6},
                           {"sm__warps_active.avg.pct_of_peak_sustained_active", 80}};
  per_kernel[1].metrics = {{"gpu__time_duration.sum", 300}, {"dram__bytes_read.sum", 3e6},
                           {"sm__warps_active.avg.pct_of_peak_sustained_active", 40}};
  const auto total = m::total_of(per_kernel);
  REQUIRE(total.at("gpu__time_duration.sum") == Approx(400));
  REQUIRE(total.at("dram__bytes_read.sum") == Approx(4e6));
  REQUIRE(total.at("sm__warps_active.avg.pct_of_peak_sustained_active") == Approx(50));
}
