// core/comparison.cpp: which records compare_kernels pairs (ok records of one shape, backend and device;
// the materialised kernel named "reference" and the fused one named "fused" first) and the figures of a
// pair that follow from the records alone: speedup, latency saved, S/P bytes and their time at the
// bandwidth peak.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "core/comparison.hpp"
#include "core/results.hpp"

using namespace attnprof::core;

namespace {

Record record(const std::string& kernel, int64_t seq, double p50_us, double sp_bytes, Status status = Status::ok) {
  Record r;
  r.shape = Shape{1, 8, 8, seq, seq, 64, false, DType::bf16};
  r.kernel = kernel;
  r.backend = BackendKind::cuda;
  r.status = status;
  r.latency.p50_us = p50_us;
  r.cost.sp_bytes = sp_bytes;  // > 0: the kernel materialises S and P
  return r;
}

}  // namespace

TEST_CASE("compare_kernels: one entry per shape with both kinds ok, in the records' order") {
  Results res;
  res.context.ceilings.peak_bw_bytes_per_s = 4e12;
  res.context.ceilings.peak_flops_per_s["bf16"] = 1e15;  // a roof needs both ceilings
  res.records = {
      record("fused", 2048, 50, 0),
      record("reference", 2048, 200, 4e8),
      record("fused", 1024, 20, 0),                              // no materialised kernel at 1024
      record("reference", 4096, 900, 1.6e9),
      record("fused", 4096, 100, 0, Status::incorrect),          // not ok: no pair at 4096
      record("fused-other", 2048, 40, 0),                        // "fused" is preferred over it
  };
  const nlohmann::json cmp = compare_kernels(res);
  REQUIRE(cmp.size() == 1);
  const nlohmann::json& c = cmp[0];
  CHECK(c.at("shape") == res.records[0].shape.label());
  CHECK(c.at("reference") == "reference");
  CHECK(c.at("fused") == "fused");
  CHECK(c.at("reference_p50_us") == 200.0);
  CHECK(c.at("fused_p50_us") == 50.0);
  CHECK(c.at("speedup").get<double>() == Approx(4.0));
  CHECK(c.at("latency_saved_us").get<double>() == Approx(150.0));
  CHECK(c.at("sp_bytes") == 4e8);
  CHECK(c.at("sp_time_us").get<double>() == Approx(4e8 / 4e12 * 1e6));  // 100 us
  CHECK(c.at("sp_explained_share").get<double>() == Approx(100.0 / 150.0));
  CHECK(c.at("summary").get<std::string>().rfind("fused is 4.00x faster than reference", 0) == 0);
}

TEST_CASE("compare_kernels: a slower fused kernel says so; other devices are other groups") {
  Results res;
  res.context.ceilings.peak_bw_bytes_per_s = 4e12;
  res.context.ceilings.peak_flops_per_s["bf16"] = 1e15;  // a roof needs both ceilings
  Record ref = record("reference", 512, 10, 1e6);
  Record fused = record("fused", 512, 20, 0);
  Record fused_elsewhere = record("fused", 512, 5, 0);
  fused_elsewhere.device_id = 1;
  res.records = {ref, fused_elsewhere, fused};
  const nlohmann::json cmp = compare_kernels(res);
  REQUIRE(cmp.size() == 1);
  CHECK(cmp[0].at("speedup").get<double>() == Approx(0.5));
  CHECK(cmp[0].at("latency_saved_us").get<double>() == Approx(-10.0));
  CHECK(cmp[0].at("sp_explained_share").is_null());  // nothing saved to explain
  CHECK(cmp[0].at("summary").get<std::string>().rfind("fused is 2.00x slower than reference", 0) == 0);
  CHECK(compare_kernels(Results{}).empty());
}
