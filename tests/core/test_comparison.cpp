// Reference vs fused (src/core/comparison.cpp): which records are paired (ok records of one shape, backend
// and device; the kernels named "reference" and "fused" first), and the figures read from the records'
// stored diagnoses.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "core/comparison.hpp"
#include "core/diagnosis.hpp"
#include "core/metric_names.hpp"
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

TEST_CASE("compare_kernels: one entry per shape with both kinds ok, in the records' order") {
  Results res;
  res.records = {
      record("fused", 2048, 50, 0),
      record("reference", 2048, 200, 4e8),
      record("fused", 1024, 20, 0),                              // no materialised kernel at 1024
      record("reference", 4096, 900, 1.6e9),
      record("fused", 4096, 100, 0, Status::incorrect),          // not ok: no pair at 4096
      record("fused-other", 2048, 40, 0),                        // "fused" is preferred over it
  };
  const std::vector<KernelComparison> cmp = compare_kernels(res);
  REQUIRE(cmp.size() == 1);
  const KernelComparison& c = cmp[0];
  CHECK(c.shape == res.records[0].shape.label());
  CHECK(c.reference == "reference");
  CHECK(c.fused == "fused");
  CHECK(c.reference_p50_us == 200.0);
  CHECK(c.fused_p50_us == 50.0);
  REQUIRE(c.speedup);
  CHECK(*c.speedup == Approx(4.0));
  CHECK(c.latency_saved_us == Approx(150.0));
  CHECK(c.sp_bytes == 4e8);
  CHECK_FALSE(c.sp_time_us);  // the S/P time needs the reference's stored diagnosis (bandwidth ceiling)
  CHECK_FALSE(c.sp_explained_share);
  CHECK(c.summary.starts_with("fused is 4.00x faster than reference"));
}

TEST_CASE("compare_kernels: a slower fused kernel says so; other devices are other groups") {
  Results res;
  Record ref = record("reference", 512, 10, 1e6);
  Record fused = record("fused", 512, 20, 0);
  Record fused_elsewhere = record("fused", 512, 5, 0);
  fused_elsewhere.device_id = 1;
  res.records = {ref, fused_elsewhere, fused};
  const std::vector<KernelComparison> cmp = compare_kernels(res);
  REQUIRE(cmp.size() == 1);
  REQUIRE(cmp[0].speedup);
  CHECK(*cmp[0].speedup == Approx(0.5));
  CHECK(cmp[0].latency_saved_us == Approx(-10.0));
  CHECK_FALSE(cmp[0].sp_explained_share);  // nothing saved to explain
  CHECK(cmp[0].summary.starts_with("fused is 2.00x slower than reference"));
  CHECK(compare_kernels(Results{}).empty());
}

TEST_CASE("compare_quantized_kv: each quantized point beside the same kernel's dtype point, with its cost") {
  Results res;
  Record plain = record("decode", 512, 30, 0);
  Record fp8 = record("decode", 512, 20, 0);
  fp8.shape.kv_dtype = KvDType::fp8_e4m3;
  fp8.shape.kv_scale = KvScale::head;
  fp8.counters.status = CounterStatus::ok;
  fp8.counters.total[kMetricDramRead] = 40e6;  // 40 MB in 20 us: 2 TB/s
  fp8.verification.checked = true;
  fp8.verification.o_max_abs_err = 1e-4;
  fp8.verification.tolerance = 4e-3;
  fp8.verification.quant = {true, 2e-3, 5e-4, 0.03};
  Record int8 = fp8;
  int8.shape.kv_dtype = KvDType::int8;
  int8.kernel = "reference";  // no reference point at the dtype: no speedup
  Record failed = fp8;
  failed.shape.kv_scale = KvScale::token;
  failed.status = Status::failed;
  res.records = {plain, fp8, int8, failed};
  const std::vector<QuantizedKvComparison> cmp = compare_quantized_kv(res);
  REQUIRE(cmp.size() == 2);
  CHECK(cmp[0].kv == "fp8_e4m3/head");
  REQUIRE(cmp[0].speedup);
  CHECK(*cmp[0].speedup == Approx(1.5));
  REQUIRE(cmp[0].dram_read_tb_per_s);
  CHECK(*cmp[0].dram_read_tb_per_s == Approx(2.0));
  CHECK(cmp[0].cost.o_max_rel_err == Approx(0.03));
  CHECK(*cmp[0].kernel_err == Approx(1e-4));
  CHECK(cmp[1].kernel == "reference");
  CHECK_FALSE(cmp[1].speedup);
  CHECK(compare_quantized_kv(Results{}).empty());
}

TEST_CASE("compare_quantized_kv: no DRAM rate from counters that failed or read NaN") {
  Record plain = record("decode", 512, 30, 0);
  Record fp8 = record("decode", 512, 20, 0);
  fp8.shape.kv_dtype = KvDType::fp8_e4m3;
  fp8.shape.kv_scale = KvScale::head;
  fp8.counters.total[kMetricDramRead] = 40e6;
  for (const CounterStatus status : {CounterStatus::unavailable, CounterStatus::not_collected}) {
    fp8.counters.status = status;
    const std::vector<QuantizedKvComparison> cmp = compare_quantized_kv(Results{.records = {plain, fp8}});
    REQUIRE(cmp.size() == 1);
    CHECK_FALSE(cmp[0].dram_read_tb_per_s);
  }
  fp8.counters.status = CounterStatus::ok;
  fp8.counters.total[kMetricDramRead] = std::nan("");
  const std::vector<QuantizedKvComparison> cmp = compare_quantized_kv(Results{.records = {plain, fp8}});
  REQUIRE(cmp.size() == 1);
  CHECK_FALSE(cmp[0].dram_read_tb_per_s);
  CHECK(*cmp[0].speedup == Approx(1.5));
}

TEST_CASE("compare_quantized_kv: an fp8 prefill point beside its bf16 twin, marked, with its bound ratio") {
  Results res;
  Record bf16 = record("fused-sm90", 4096, 400, 0);
  Record fp8 = record("fused-sm90", 4096, 250, 0);
  fp8.shape.dtype = DType::fp8_e4m3;
  imply_fp8_kv_format(fp8.shape);
  fp8.verification.checked = true;
  fp8.verification.o_max_abs_err = 3e-3;
  fp8.verification.tolerance = 5e-2;
  fp8.verification.o_max_bound_ratio = 0.2;
  fp8.verification.quant = {true, 4e-2, 6e-3, 0.05};
  Record fp16 = bf16;  // not the twin: an fp8 point's is the bf16 point
  fp16.shape.dtype = DType::fp16;
  fp16.latency.p50_us = 1;
  Record lone = fp8;  // another kernel, with no bf16 point of its own
  lone.kernel = "reference";
  res.records = {fp16, bf16, fp8, lone};
  const std::vector<QuantizedKvComparison> cmp = compare_quantized_kv(res);
  REQUIRE(cmp.size() == 2);
  CHECK(cmp[0].fp8_prefill);
  CHECK(cmp[0].shape == fp8.shape.label());
  REQUIRE(cmp[0].unquantized_p50_us);
  CHECK(*cmp[0].unquantized_p50_us == Approx(400));
  REQUIRE(cmp[0].speedup);
  CHECK(*cmp[0].speedup == Approx(1.6));
  CHECK(cmp[0].cost.o_max_abs_err == Approx(4e-2));
  REQUIRE(cmp[0].bound_ratio);
  CHECK(*cmp[0].bound_ratio == Approx(0.2));
  CHECK(cmp[1].kernel == "reference");
  CHECK_FALSE(cmp[1].speedup);
}
