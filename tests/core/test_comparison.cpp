// Reference vs fused (src/core/comparison.cpp): read from the records' stored diagnoses.
#include <catch2/catch.hpp>

#include "core/comparison.hpp"
#include "core/diagnosis.hpp"
#include "core/results.hpp"

using namespace attnprof::core;

namespace {

Results analysed_fixture() {
  Results res = read_results(ATTNPROF_SOURCE_DIR "/tests/report/fixtures/synthetic_results.json");
  annotate(res);
  return res;
}

}  // namespace

TEST_CASE("reference vs fused: speedup, bytes saved, intensity shift, S/P share of the gain") {
  const Results res = analysed_fixture();
  const std::vector<KernelComparison> cmp = compare_kernels(res);
  REQUIRE(cmp.size() == 2);  // s8192 and s2048 have both kernels ok
  const KernelComparison& c = cmp[0];
  CHECK(c.shape == "b4 h16/16 s8192x8192 d128 bf16");
  CHECK(c.reference == "reference");
  CHECK(c.fused == "fused");
  REQUIRE(c.speedup);
  CHECK(*c.speedup == Approx(17250.0 / 5114.0));
  CHECK(c.latency_saved_us == Approx(17250.0 - 5114.0));
  CHECK(c.bytes_source == "DRAM counters");
  CHECK(c.bytes_saved > 0);
  REQUIRE(c.intensity_gain);
  CHECK(*c.intensity_gain > 10);
  const Record* ref = nullptr;
  for (const auto& r : res.records)
    if (r.kernel == "reference" && r.shape.seq_q == 8192) ref = &r;
  REQUIRE(ref);
  const double sp_time_us = ref->cost.sp_bytes / res.context.ceilings.peak_bw_bytes_per_s * 1e6;
  REQUIRE(c.sp_time_us);
  CHECK(*c.sp_time_us == Approx(sp_time_us));
  REQUIRE(c.sp_explained_share);
  CHECK(*c.sp_explained_share == Approx(sp_time_us / (17250.0 - 5114.0)));
  CHECK_THAT(c.summary, Catch::StartsWith("fused is 3.37x faster than reference (17250 -> 5114 us)"));
  // The 2048 pair mixes a counter-less reference with a counted fused point, and says so.
  CHECK(cmp[1].bytes_source == "cost-model minimum / DRAM counters");
}

TEST_CASE("reference vs fused computes no diagnosis: without stored ones, no bytes, intensity or S/P time") {
  const Results res = read_results(ATTNPROF_SOURCE_DIR "/tests/report/fixtures/synthetic_results.json");
  const std::vector<KernelComparison> cmp = compare_kernels(res);
  REQUIRE(cmp.size() == 2);
  CHECK(cmp[0].speedup);  // timings come from the records themselves
  CHECK(cmp[0].bytes_saved == 0);
  CHECK(cmp[0].bytes_source.empty());
  CHECK_FALSE(cmp[0].intensity_gain);
  CHECK_FALSE(cmp[0].sp_time_us);
}

TEST_CASE("reference vs fused: none without an ok pair of both kinds") {
  Results res = analysed_fixture();
  for (auto& r : res.records)
    if (is_materialized(r)) r.status = Status::failed;
  CHECK(compare_kernels(res).empty());
}
