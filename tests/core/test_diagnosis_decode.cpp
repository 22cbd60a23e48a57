// Decode points in decode terms: which shapes are decode, the bandwidth metrics and evidence, the
// short-call rule at and around each of its thresholds, and the next steps of memory-bound decode.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "core/cost_model.hpp"
#include "core/decode_terms.hpp"
#include "core/diagnosis.hpp"
#include "core/diagnosis_decode.hpp"
#include "core/results.hpp"
#include "diagnosis_support.hpp"

using namespace attnprof::core;
using attnprof::core::test::evidence_text;
using nlohmann::json;

namespace {

// The H200's measured ceilings, as `attnprof devices` records them.
constexpr double kH200Bw = 4.52e12;          // [bytes/s]
constexpr double kH200LaunchLatencyUs = 1.62;

Context h200_context() {
  Context ctx;
  ctx.backend = BackendKind::cuda;
  ctx.device.name = "Test GPU (not in the datasheet table)";
  ctx.ceilings.peak_bw_bytes_per_s = kH200Bw;
  ctx.ceilings.peak_flops_per_s["bf16"] = 8.12e14;
  ctx.ceilings.launch_latency_us = kH200LaunchLatencyUs;
  ctx.ceilings.source = "measured";
  return ctx;
}

// A decode point of attnprof's decode kernel (h32/8, d128, bf16): counters ok, its DRAM bytes
// `read_factor` x the minimum, the by-design 12.5% occupancy with the latency exposed (the rule that
// called these points occupancy-bound), split-KV stages when `splits` > 1.
Record decode_record(int64_t batch, int64_t seq_k, double p50_us, int64_t splits, double read_factor = 1.0,
                     KvDType kv = KvDType::none, int64_t window = 0) {
  Record r;
  r.shape = Shape{batch, 32, 8, 1, seq_k, 128, false, DType::bf16};
  r.shape.window = window;
  if (kv != KvDType::none) {
    r.shape.kv_dtype = kv;
    r.shape.kv_scale = KvScale::head;
  }
  r.kernel = "decode";
  r.backend = BackendKind::cuda;
  r.cost = cost_of(r.shape, KernelKind::fused);
  r.latency.n = 200;
  r.latency.p50_us = p50_us;
  r.latency.p99_us = p50_us * 1.05;
  r.latency.rel_stddev = 0.01;
  r.launch_overhead_us = 3;
  const double min_bytes = r.cost.min_bytes_read + r.cost.min_bytes_write;
  const double bytes = min_bytes * read_factor;
  const double dram_pct = bytes / (p50_us * 1e-6) / kH200Bw * 100;
  r.counters.status = CounterStatus::ok;
  r.counters.total[kMetricDramRead] = r.cost.min_bytes_read * read_factor;
  r.counters.total[kMetricDramWrite] = r.cost.min_bytes_write * read_factor;
  r.counters.total[kMetricTensorOpsBf16] = 4 * r.cost.flops;  // 16 MMA rows for a group of 4 heads
  r.counters.total[kMetricComputeSol] = 5;
  r.counters.total[kMetricMemorySol] = dram_pct;
  r.counters.total[kMetricDramSol] = dram_pct;
  r.counters.total[kMetricL2Sol] = dram_pct * 0.9;
  r.counters.total[kMetricL1Sol] = 5;
  r.counters.total[kMetricIssueActive] = 16;
  r.counters.total[kMetricWarpsPerIssue] = 4;
  r.counters.total[kMetricStallLongScoreboard] = 1.5;
  r.counters.total[kMetricStallShortScoreboard] = 0.5;
  r.counters.total[kMetricStallWait] = 0.6;
  r.occupancy.threads_per_block = 128;
  r.occupancy.registers_per_thread = 189;
  r.occupancy.blocks_per_sm = 2;
  r.occupancy.sm_count = 132;
  r.occupancy.grid_blocks = batch * 8 * splits;
  r.occupancy.waves = static_cast<double>(r.occupancy.grid_blocks) / 264;
  r.occupancy.theoretical_pct = 12.5;
  r.occupancy.limiter = "registers";
  r.plan = {{"kv_splits", splits}, {"block_n", 64}};
  if (splits > 1) {
    Stage split{"decode_split", {}, p50_us * 0.7, p50_us * 0.7, 0.7, 0.7};
    Stage combine{"decode_combine", {}, p50_us * 0.3, p50_us * 0.3, 0.3, 0.3};
    r.stages = {split, combine};
  } else {
    r.stages = {Stage{"decode", {}, p50_us, p50_us, 1, 1}};
  }
  r.verification.checked = r.verification.passed = true;
  return r;
}

double min_bytes_of(const Record& r) { return r.cost.min_bytes_read + r.cost.min_bytes_write; }

}  // namespace

TEST_CASE("a decode point: at most 16 query rows against at least 16 keys per query row") {
  CHECK(is_decode(Shape{1, 32, 8, 1, 16, 128, false, DType::bf16}));
  CHECK_FALSE(is_decode(Shape{1, 32, 8, 1, 15, 128, false, DType::bf16}));
  CHECK(is_decode(Shape{1, 32, 8, 16, 256, 128, true, DType::bf16}));
  CHECK_FALSE(is_decode(Shape{1, 32, 8, 16, 255, 128, true, DType::bf16}));
  CHECK_FALSE(is_decode(Shape{1, 32, 8, 17, 1 << 20, 128, true, DType::bf16}));  // prefill of 17 rows
  CHECK_FALSE(is_decode(Shape{1, 1, 1, 1, 1, 64, false, DType::fp32}));          // a probe's shape
  CHECK_FALSE(is_decode(Shape{4, 16, 16, 2048, 2048, 128, false, DType::bf16}));
}

TEST_CASE("tokens per call and KV-cache bytes") {
  const Shape s{64, 32, 8, 1, 8192, 128, false, DType::bf16};
  CHECK(generated_tokens(s) == 64);
  CHECK(kv_cache_bytes(s) == Approx(64.0 * 8 * 8192 * 128 * 2 * 2));  // 2.15 GB
  CHECK(generated_tokens(Shape{16, 32, 8, 4, 8192, 128, true, DType::bf16}) == 64);  // 4 draft tokens
  CHECK(kv_cache_bytes(Shape{1, 8, 1, 1, 1000, 64, false, DType::fp32}) == Approx(2.0 * 1000 * 64 * 4));
  // V rows of their own width: K 192 and V 128 elements a key.
  Shape mla{2, 16, 16, 1, 1000, 192, false, DType::bf16};
  mla.hdim_v = 128;
  CHECK(kv_cache_bytes(mla) == Approx(2.0 * 16 * 1000 * (192 + 128) * 2));
}

TEST_CASE("the combine stage's share comes from the stages, else from the launch records") {
  Record r = decode_record(1, 8192, 26, 32);
  auto c = combine_share(r);
  REQUIRE(c);
  CHECK(c->name == "decode_combine");
  CHECK(c->time_share == Approx(0.3));
  r.stages.clear();
  Launch split, combine;
  split.name = "decode_split_kernel<bf16, d128, m1>";
  split.duration_us = 15;
  combine.name = "void pytorch_flash::flash_fwd_splitkv_Combine_kernel<Traits<128, 64>, 4>(pytorch_flash::Params)";
  combine.duration_us = 5;
  r.launches = {split, combine};
  c = combine_share(r);
  REQUIRE(c);
  CHECK(c->name == "flash_fwd_splitkv_Combine_kernel");  // the function's name, without the rest
  CHECK(c->time_share == Approx(0.25));
  r.launches[1].name = "softmax";
  CHECK_FALSE(combine_share(r));
  CHECK_FALSE(combine_share(decode_record(64, 8192, 520, 1)));  // one stage: no combine
}

TEST_CASE("a long decode call at the roof reads in bandwidth terms and is memory-bound") {
  // b64 h32/8 s1x8192: 2.15 GB of KV cache in 520 us = 4.13 TB/s, 91% of the 4.52 TB/s ceiling.
  const Record r = decode_record(64, 8192, 520, 1);
  const Diagnosis d = diagnose(r, h200_context());
  CHECK(d.verdict == Verdict::memory_bound);
  const DiagnosisMetrics& m = d.metrics;
  REQUIRE(m.decode == true);
  CHECK(m.tokens_per_call == 64);
  CHECK(m.kv_cache_bytes.value() == Approx(2.147483648e9));
  CHECK(m.min_bytes_per_token.value() == Approx(min_bytes_of(r) / 64));
  CHECK(m.dram_bytes_per_token.value() == Approx(min_bytes_of(r) / 64));
  CHECK(m.excess_traffic_ratio.value() == Approx(1.0));
  CHECK(m.pct_of_hbm_ceiling.value() == Approx(min_bytes_of(r) / 520e-6 / kH200Bw * 100));
  CHECK(m.pct_of_hbm_ceiling.value() == Approx(91.4).margin(0.1));
  CHECK_FALSE(m.combine_time_share);
  CHECK(m.kv_tile_keys == 64);
  const std::string ev = evidence_text(d);
  CHECK_THAT(ev, Catch::Contains("decode, 64 generated tokens per call: streams the KV cache (2.15 GB) at 4.13 TB/s = "
                                 "91% of the 4.52 TB/s HBM ceiling; 33.6 MB per generated token, 1.00x the minimum 33.6 MB"));
  CHECK_THAT(d.next_step, Catch::Contains("HBM at 91% of the 4.52 TB/s ceiling: the kernel is at the roof"));
  CHECK_THAT(d.next_step, Catch::Contains("fp8 KV cache"));
  CHECK_THAT(d.next_step, Catch::Contains("4 query heads share each of 8 KV heads"));
  CHECK(d.next_step.find("read more than once") == std::string::npos);
  // Streams far longer than its fixed cost: the short-call rule does not apply.
  CHECK(m.hbm_stream_us.value() > m.short_call_limit_us.value());
  CHECK(ev.find("too short") == std::string::npos);
}

TEST_CASE("a decode point from 80% to 90% of the HBM ceiling is near the roof, not at it") {
  // b64 h32/8 s1x8192 at a chosen share of the 4.52 TB/s ceiling, its DRAM bytes the minimum: the share of
  // the P50 beyond the stream is then 1 - pct. On each measurement path: counters in ranges of a batched
  // session, counters from kernel replay, and no counters (the cost model's bytes over the P50).
  const auto record_at_pct = [](double pct, KvDType kv) {
    const double min_bytes = min_bytes_of(decode_record(64, 8192, 1, 1, 1.0, kv));
    return decode_record(64, 8192, min_bytes / (pct / 100 * kH200Bw) * 1e6, 1, 1.0, kv);
  };
  const auto at_pct = [&](double pct, KvDType kv, int path) {
    Record r = record_at_pct(pct, kv);
    if (path == 1) r.counters.dram_source = DramSource::replayed;
    if (path == 2) {
      r.counters = Counters{};
      r.counters.reason = "--no-counters";
    }
    return diagnose(r, h200_context());
  };
  for (int path : {0, 1, 2}) {
    INFO("path " << path);
    for (const KvDType kv : {KvDType::none, KvDType::fp8_e4m3}) {
      INFO(to_string(kv));
      const Diagnosis at = at_pct(kDecodeAtRoofPct + 0.1, kv, path);
      INFO(at.next_step);
      CHECK(at.verdict == Verdict::memory_bound);
      CHECK_THAT(at.next_step, Catch::Contains("the kernel is at the roof"));
      CHECK(at.next_step.find("near the roof") == std::string::npos);

      const Diagnosis near = at_pct(kDecodeAtRoofPct - 0.1, kv, path);
      INFO(near.next_step);
      CHECK(near.verdict == Verdict::memory_bound);
      CHECK_THAT(near.next_step, Catch::Contains("HBM at 90% of the 4.52 TB/s ceiling: near the roof, not at it "
                                                 "(streaming decode reaches 90% and more): 10% of the"));
      CHECK(near.next_step.find("at the roof, only") == std::string::npos);
      CHECK_THAT(near.next_step, Catch::Contains("sweep --stalls"));
      CHECK(near.metrics.fixed_time_share.value() == Approx(1 - (kDecodeAtRoofPct - 0.1) / 100).epsilon(1e-3));
      // The dequantization is named for an 8-bit cache only, and the fp8 advice for a 16-bit one only; the
      // clock only when it was throttled.
      CHECK((near.next_step.find("the dequantization") != std::string::npos) == (kv != KvDType::none));
      CHECK(near.next_step.find("throttled") == std::string::npos);
      CHECK((near.next_step.find("an fp8 KV cache") != std::string::npos) == (kv == KvDType::none));

      // The quantized cache of the H200's decode sweep (reports/h200-kv-quant): 86%, 14% beyond the stream.
      CHECK_THAT(at_pct(86, kv, path).next_step, Catch::Contains("at 86% of the 4.52 TB/s ceiling: near the roof, not at it "
                                                                 "(streaming decode reaches 90% and more): 14% of the"));
      CHECK_THAT(at_pct(kSolSaturatedPct + 0.1, kv, path).next_step, Catch::Contains("near the roof"));
      Record throttled = record_at_pct(85, kv);
      throttled.clock.throttled_samples = 3;
      CHECK_THAT(diagnose(throttled, h200_context()).next_step, Catch::Contains("or the clock, throttled during sampling"));
      const Diagnosis below = at_pct(kSolSaturatedPct - 0.1, kv, path);
      CHECK_THAT(below.next_step, Catch::Contains("more K/V bytes in flight per SM"));
      CHECK(below.next_step.find("near the roof") == std::string::npos);
    }
  }
}

TEST_CASE("a quantized cache at the roof is not told to quantize: the next step names what is left") {
  // b64 h32/8 s1x8192 with an 8-bit cache (1.07 GB, a scale per kv head) in 255 us: 4.2 TB/s, 93% of the
  // ceiling. Both sides of the fp8-KV advice: the bf16 twin gets it, the fp8 point does not.
  for (const KvDType kv : {KvDType::fp8_e4m3, KvDType::int8}) {
    const Record r = decode_record(64, 8192, 255, 1, 1.0, kv);
    const Diagnosis d = diagnose(r, h200_context());
    INFO(d.next_step);
    CHECK(d.verdict == Verdict::memory_bound);
    CHECK(d.metrics.pct_of_hbm_ceiling.value() > 90);
    CHECK_THAT(d.next_step, Catch::Contains("the kernel is at the roof"));
    CHECK(d.next_step.find("an fp8 KV cache") == std::string::npos);
    CHECK_THAT(d.next_step, Catch::Contains(fmt::format("already one byte per element ({})", to_string(kv))));
    CHECK_THAT(d.next_step, Catch::Contains("4 query heads share each of 8 KV heads"));
  }
  // A windowed point (a quarter of the cache in 64 us, at the roof too) is offered a narrower window,
  // not the window it has.
  const Diagnosis w = diagnose(decode_record(64, 8192, 64, 1, 1.0, KvDType::int8, 2048), h200_context());
  INFO(w.next_step);
  CHECK_THAT(w.next_step, Catch::Contains("the kernel is at the roof"));
  CHECK_THAT(w.next_step, Catch::Contains("a narrower sliding window (now 2048 keys)"));
  CHECK(w.next_step.find("fewer keys kept") == std::string::npos);
  CHECK_THAT(diagnose(decode_record(64, 8192, 255, 1, 1.0, KvDType::int8), h200_context()).next_step,
             Catch::Contains("fewer keys kept (a sliding window)"));
  // Below the roof: the deeper pipeline first, and again no fp8 advice for a cache that is fp8.
  const Diagnosis below = diagnose(decode_record(64, 8192, 380, 1, 1.0, KvDType::fp8_e4m3), h200_context());
  CHECK_THAT(below.next_step, Catch::Contains("more K/V bytes in flight per SM"));
  CHECK(below.next_step.find("fp8 KV cache") == std::string::npos);
  CHECK_THAT(diagnose(decode_record(64, 8192, 700, 1), h200_context()).next_step, Catch::Contains("fp8 KV cache"));
}

TEST_CASE("a windowed decode call streams only its window of the KV cache") {
  // b64 h32/8 s1x8192, window 1024: 268 MB of the 2.15 GB cache in 70 us.
  Record r = decode_record(64, 8192, 70, 1);
  r.shape.window = 1024;
  r.cost = cost_of(r.shape, KernelKind::fused);
  const Diagnosis d = diagnose(r, h200_context());
  REQUIRE(d.metrics.decode == true);
  CHECK(d.metrics.kv_cache_bytes.value() == Approx(2.147483648e9 / 8));
  CHECK(d.metrics.min_bytes_per_token.value() == Approx(min_bytes_of(r) / 64));
  CHECK_THAT(evidence_text(d), Catch::Contains("streams its 1024-key window of the KV cache (268 MB)"));
}

TEST_CASE("an under-filled decode call at the HBM roof is not told to split the KV sequence") {
  Record r = decode_record(64, 8192, 520, 1);
  r.occupancy.grid_blocks = 200;
  r.occupancy.waves = 200.0 / 264;
  Diagnosis d = diagnose(r, h200_context());
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.has(Flag::under_filled));
  CHECK(d.next_step.find("split the KV sequence") == std::string::npos);
  r = decode_record(64, 8192, 640, 1);  // 74% of the ceiling: more CTAs may still help
  r.occupancy.grid_blocks = 200;
  r.occupancy.waves = 200.0 / 264;
  d = diagnose(r, h200_context());
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK_THAT(d.next_step, Catch::Contains("split the KV sequence"));
}

TEST_CASE("memory-bound decode under 80% of the ceiling is told to put more bytes in flight") {
  // 2.15 GB in 640 us: 3.36 TB/s, 74%.
  const Diagnosis d = diagnose(decode_record(64, 8192, 640, 1), h200_context());
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.metrics.pct_of_hbm_ceiling.value() == Approx(74.2).margin(0.1));
  CHECK_THAT(d.next_step, Catch::Contains("HBM at 74% of the 4.52 TB/s ceiling: more K/V bytes in flight per SM"));
  CHECK(d.next_step.find("at the roof") == std::string::npos);
}

TEST_CASE("a read factor over 1.05 says the KV cache is read more than once") {
  Record r = decode_record(64, 8192, 560, 1, 1.06);
  Diagnosis d = diagnose(r, h200_context());
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.metrics.excess_traffic_ratio.value() == Approx(1.06));
  CHECK(d.metrics.dram_bytes_per_token.value() == Approx(1.06 * min_bytes_of(r) / 64));
  CHECK_THAT(d.next_step, Catch::Contains("the call reads 1.06x its minimum bytes read (over 1.05x): the KV cache is "
                                          "read more than once"));
  CHECK(d.metrics.read_traffic_ratio.value() == Approx(1.06));
  CHECK_THAT(d.next_step, Catch::Contains("its whole GQA group (4 query heads)"));
  CHECK_THAT(evidence_text(d), Catch::Contains("1.06x the minimum 33.6 MB"));
  r = decode_record(64, 8192, 560, 1, 1.05);  // at the threshold: not over it
  d = diagnose(r, h200_context());
  CHECK(d.next_step.find("read more than once") == std::string::npos);
  // The L2 tail counts as traffic, 1.04x in the ranges and 2% written back after them is 1.06x, but it is
  // written: the KV cache is read 1.04x, once.
  r = decode_record(64, 8192, 560, 1, 1.04);
  r.counters.dram_write_tail_bytes = 0.02 * min_bytes_of(r);
  d = diagnose(r, h200_context());
  CHECK(d.metrics.excess_traffic_ratio.value() == Approx(1.06));
  CHECK(d.metrics.read_traffic_ratio.value() == Approx(1.04));
  CHECK(d.next_step.find("read more than once") == std::string::npos);
}

TEST_CASE("pages smaller than the kernel's K/V tile are named for memory-bound decode") {
  Record r = decode_record(64, 8192, 520, 1);
  r.shape.page_size = 16;
  r.cost = cost_of(r.shape, KernelKind::fused);
  Diagnosis d = diagnose(r, h200_context());
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK_THAT(d.next_step, Catch::Contains("pages of 16 keys are smaller than the kernel's 64-key K/V tile: each tile "
                                          "gathers 4 pages"));
  r.shape.page_size = 64;  // a page per tile: nothing to say
  r.cost = cost_of(r.shape, KernelKind::fused);
  CHECK(diagnose(r, h200_context()).next_step.find("pages of") == std::string::npos);
  r.shape.page_size = 16;
  r.plan.erase("block_n");  // a kernel whose tile is not known is not judged
  r.cost = cost_of(r.shape, KernelKind::fused);
  d = diagnose(r, h200_context());
  CHECK(d.next_step.find("pages of") == std::string::npos);
  CHECK_FALSE(d.metrics.kv_tile_keys);
}

TEST_CASE("short decode calls at batch 1 are bound by their fixed cost, not by a by-design occupancy") {
  // The H200 decode preset, batch 1: 8.6 us at 1k keys (8 splits), 26 us at 8k, 51.8 us at 32k (29 splits).
  for (const auto& [seq_k, p50_us, splits] : {std::tuple{1024, 8.57, 8}, {8192, 26.0, 32}, {32768, 51.8, 29}}) {
    INFO("seq_k " << seq_k);
    const Record r = decode_record(1, seq_k, p50_us, splits);
    const Diagnosis d = diagnose(r, h200_context());
    CHECK(d.verdict == Verdict::launch_bound);
    CHECK(d.metrics.short_call_limit_us.value() == Approx(10 * 2 * kH200LaunchLatencyUs));
    CHECK(d.metrics.hbm_stream_us.value() == Approx(min_bytes_of(r) / kH200Bw * 1e6));
    CHECK(d.metrics.fixed_time_share.value() == Approx(1 - min_bytes_of(r) / kH200Bw * 1e6 / p50_us));
    CHECK(d.metrics.combine_time_share.value() == Approx(0.3));
    const std::string ev = evidence_text(d);
    CHECK_THAT(ev, Catch::Contains("the call is too short for its bytes"));
    CHECK_THAT(ev, Catch::Contains("the split-combine launch (30% of the call)"));
    CHECK_THAT(ev, Catch::Contains("under 10x its 2 kernel launches x 1.62 us launch latency = 32.4 us"));
    CHECK(ev.find("which more resident warps would hide") == std::string::npos);
    CHECK_THAT(d.next_step, Catch::StartsWith("fixed cost, not bandwidth, limits this call: one launch instead of 2"));
    CHECK_THAT(d.next_step, Catch::Contains(fmt::format("fewer KV splits (now {})", splits)));
    CHECK_THAT(d.next_step, Catch::Contains("batch more sequences per call"));
    CHECK_THAT(d.next_step, Catch::Contains("CUDA graph"));
    CHECK(d.next_step.find("occupancy is capped") == std::string::npos);
    CHECK(d.next_step.find("split the KV sequence") == std::string::npos);  // under-filled, but not the lever
    CHECK(d.has(Flag::under_filled));
  }
  // Evidence for the batch-1, 1k-key call, whole.
  const Diagnosis d = diagnose(decode_record(1, 1024, 8.57, 8), h200_context());
  CHECK_THAT(evidence_text(d),
             Catch::Contains("decode, 1 generated token per call: streams the KV cache (4.19 MB) at 0.491 TB/s = 11% "
                             "of the 4.52 TB/s HBM ceiling; 4.21 MB per generated token, 1.00x the minimum 4.21 MB; "
                             "the combine stage (decode_combine) takes 30% of the call"));
}

TEST_CASE("the short-call rule at and around its stream limit") {
  // One launch of 2 us: the limit is 20 us of stream, 20e-6 x 4.52e12 = 90.4 MB of minimum bytes.
  Context ctx = h200_context();
  ctx.ceilings.launch_latency_us = 2;
  Record r = decode_record(16, 8192, 100, 1);
  auto with_stream = [&](double stream_us) {
    Record x = r;
    x.cost.min_bytes_write = 0;
    x.cost.min_bytes_read = stream_us * 1e-6 * kH200Bw;
    x.counters.total[kMetricDramRead] = x.cost.min_bytes_read;
    x.counters.total[kMetricDramWrite] = 0;
    x.latency.p50_us = 2 * stream_us;  // half the time beyond the stream
    x.counters.total[kMetricMemorySol] = x.counters.total[kMetricDramSol] = 50;  // neither unit busy
    x.counters.total[kMetricL2Sol] = 45;
    return x;
  };
  Diagnosis d = diagnose(with_stream(19.99), ctx);
  CHECK(d.verdict == Verdict::launch_bound);
  CHECK(d.metrics.short_call_limit_us.value() == Approx(20));
  CHECK(d.metrics.fixed_time_share.value() == Approx(0.5));
  CHECK(d.next_step.find("one launch instead") == std::string::npos);  // one launch already
  d = diagnose(with_stream(20), ctx);  // at the limit: not under it
  CHECK(d.verdict == Verdict::occupancy_bound);
  CHECK(evidence_text(d).find("too short") == std::string::npos);
  d = diagnose(with_stream(20.01), ctx);
  CHECK(d.verdict == Verdict::occupancy_bound);
  // Two launches double the limit.
  Record two = with_stream(39.9);
  two.stages = {Stage{"decode_split", {}, 60, 60, 0.75, 0.75}, Stage{"decode_combine", {}, 20, 20, 0.25, 0.25}};
  d = diagnose(two, ctx);
  CHECK(d.verdict == Verdict::launch_bound);
  CHECK(d.metrics.short_call_limit_us.value() == Approx(40));
  two = with_stream(40.1);
  two.stages = {Stage{"decode_split", {}, 60, 60, 0.75, 0.75}, Stage{"decode_combine", {}, 20, 20, 0.25, 0.25}};
  CHECK(diagnose(two, ctx).verdict == Verdict::occupancy_bound);
}

namespace {

// A batch-1 decode point whose minimum bytes take 10 us to stream at the H200's ceiling, one launch
// (short-call limit 16.2 us), diagnosed at `p50_us`; `l2_sol` replaces decode_record's L2 throughput.
Diagnosis ten_us_stream_at(double p50_us, std::optional<double> l2_sol = std::nullopt) {
  Record x = decode_record(1, 8192, 30, 1);
  x.cost.min_bytes_write = 0;
  x.cost.min_bytes_read = 10e-6 * kH200Bw;
  x.counters.total[kMetricDramRead] = x.cost.min_bytes_read;
  x.counters.total[kMetricDramWrite] = 0;
  x.latency.p50_us = p50_us;
  x.counters.total[kMetricMemorySol] = x.counters.total[kMetricDramSol] = 10 / p50_us * 100;
  if (l2_sol) x.counters.total[kMetricL2Sol] = *l2_sol;
  return diagnose(x, h200_context());
}

}  // namespace

TEST_CASE("the short-call rule at and around its fixed-time share") {
  // 10 us of stream, one launch: limit 16.2 us; the share beyond the stream decides.
  auto at_p50 = [](double p50_us) { return ten_us_stream_at(p50_us); };
  const double at_share = 10 / (1 - kDecodeFixedTimeShareFrom);  // 15 us: a third of it beyond the stream
  CHECK(at_p50(at_share * 1.0001).verdict == Verdict::launch_bound);
  CHECK(at_p50(at_share * 1.5).verdict == Verdict::launch_bound);
  const Diagnosis streaming = at_p50(at_share * 0.9999);  // 67% of the ceiling: streaming, memory-bound
  CHECK(streaming.verdict == Verdict::memory_bound);
  CHECK_THAT(evidence_text(streaming), Catch::Contains("short, yet streaming"));
  CHECK(streaming.metrics.fixed_time_share.value() < kDecodeFixedTimeShareFrom);
}

TEST_CASE("the short-call rule at and around its limit on the time beyond the stream") {
  // 10 us of stream, one launch: limit 16.2 us; up to 16.2 us beyond the stream is fixed cost, more is the
  // kernel's work.
  auto at_p50 = [](double p50_us) { return ten_us_stream_at(p50_us, 5); };
  const Diagnosis fixed = at_p50(10 + 16.19);
  CHECK(fixed.verdict == Verdict::launch_bound);
  CHECK(fixed.metrics.short_call_limit_us.value() == Approx(16.2));
  const Diagnosis slow = at_p50(10 + 16.21);
  CHECK(slow.verdict == Verdict::occupancy_bound);  // the usual rules: neither unit busy, latency exposed
  CHECK_THAT(evidence_text(slow), Catch::Contains("beyond the stream is more than that limit: not fixed cost, the "
                                                  "kernel's own work"));
  // A prefill kernel on a batch-1 decode shape: 131 us for 17 MB (fused on the H200) is its own work.
  Record fused = decode_record(1, 4096, 131, 1);
  fused.kernel = "fused";
  CHECK(diagnose(fused, h200_context()).verdict != Verdict::launch_bound);
}

TEST_CASE("the short-call rule without a measured launch latency assumes 5 us and says so") {
  Context ctx = h200_context();
  ctx.ceilings.launch_latency_us = 0;
  // b16 h32/8 s1x8192: 537 MB, 119 us of stream; two launches at an assumed 5 us: limit 100 us.
  Record r = decode_record(16, 8192, 300, 2);
  Diagnosis d = diagnose(r, ctx);
  CHECK(d.metrics.short_call_limit_us.value() == Approx(100));
  CHECK(d.verdict != Verdict::launch_bound);
  r = decode_record(16, 1024, 30.7, 2);  // 14.8 us of stream, 52% beyond it
  d = diagnose(r, ctx);
  CHECK(d.verdict == Verdict::launch_bound);
  CHECK_THAT(evidence_text(d), Catch::Contains("x 5 us launch latency (assumed: the results have no "
                                               "context.ceilings.launch_latency_us) = 100 us"));
}

TEST_CASE("a host-bound short call is not told twice about CUDA graphs") {
  Record r = decode_record(1, 1024, 8.57, 8);
  r.launch_overhead_us = 10.1;
  const Diagnosis d = diagnose(r, h200_context());
  CHECK(d.has(Flag::host_bound));
  CHECK(d.verdict == Verdict::launch_bound);
  CHECK_THAT(d.next_step, Catch::Contains("capture the calls in a CUDA graph"));
  CHECK(d.next_step.find("replay the decode step from a CUDA graph") == std::string::npos);
}

TEST_CASE("a prefill kernel computing padded query tiles at decode is told so") {
  // fused on b16 h32/8 s1x16384: 128-row query tiles around 1 row per head, compute-bound on the padding.
  Record r = decode_record(16, 16384, 1452, 1);
  r.kernel = "fused";
  r.plan.clear();
  r.stages.clear();
  r.counters.total[kMetricTensorOpsBf16] = 128 * r.cost.flops;
  r.counters.total[kMetricComputeSol] = 85;
  r.counters.total[kMetricTensorPipeActive] = 85;
  const Diagnosis d = diagnose(r, h200_context());
  CHECK(d.verdict == Verdict::compute_bound);
  CHECK(d.metrics.decode == true);
  CHECK_THAT(d.next_step, Catch::Contains("the tensor cores do 128x the FLOPs the 1 query row per head need"));
  CHECK_THAT(evidence_text(d), Catch::Contains("streams the KV cache (1.07 GB) at 0.74 TB/s = 16% of the 4.52 TB/s"));
  r.counters.total[kMetricTensorOpsBf16] = 2 * r.cost.flops;  // at the threshold: not over it
  CHECK(diagnose(r, h200_context()).next_step.find("the tensor cores do") == std::string::npos);
}

TEST_CASE("decode metrics without counters: the minimum per token, the rate a lower bound") {
  Record r = decode_record(64, 8192, 520, 1);
  r.counters = {};
  r.counters.status = CounterStatus::unavailable;
  const Diagnosis d = diagnose(r, h200_context());
  CHECK(d.metrics.decode == true);
  CHECK(d.metrics.min_bytes_per_token.value() == Approx(min_bytes_of(r) / 64));
  CHECK_FALSE(d.metrics.dram_bytes_per_token);
  CHECK_THAT(evidence_text(d), Catch::Contains("(the cost-model minimum over the P50: a lower bound); 33.6 MB per "
                                               "generated token (the cost-model minimum)"));
}

TEST_CASE("a CPU-backend decode point gets the bandwidth view but not the GPU's short-call rule") {
  Record r = decode_record(1, 1024, 800, 1);
  r.backend = BackendKind::cpu;
  r.counters = {};
  Context ctx = h200_context();
  ctx.backend = BackendKind::cpu;
  ctx.ceilings.peak_bw_bytes_per_s = 1e11;
  const Diagnosis d = diagnose(r, ctx);
  CHECK(d.metrics.decode == true);
  CHECK_FALSE(d.metrics.short_call_limit_us);
  CHECK_THAT(evidence_text(d), Catch::Contains("of the 100 GB/s memory bandwidth ceiling"));  // a CPU's unit
}

TEST_CASE("prefill points carry no decode metrics") {
  Record r = decode_record(1, 2048, 100, 1);
  r.shape.seq_q = 2048;
  const Diagnosis d = diagnose(r, h200_context());
  CHECK_FALSE(d.metrics.decode);
  CHECK_FALSE(d.metrics.tokens_per_call);
  CHECK_FALSE(d.metrics.pct_of_hbm_ceiling);
  CHECK(evidence_text(d).find("generated token") == std::string::npos);
}

TEST_CASE("the decode metrics round-trip through JSON") {
  const Diagnosis d = diagnose(decode_record(1, 8192, 26, 32), h200_context());
  const json j = d;
  for (const char* key : {"decode", "tokens_per_call", "kv_cache_bytes", "min_bytes_per_token", "dram_bytes_per_token",
                          "pct_of_hbm_ceiling", "hbm_stream_us", "short_call_limit_us", "fixed_time_share",
                          "combine_stage", "combine_time_share", "kv_tile_keys"}) {
    INFO(key);
    CHECK_FALSE(j.at("metrics").at(key).is_null());
  }
  const Diagnosis back = j.get<Diagnosis>();
  CHECK(back.metrics.decode == true);
  CHECK(back.metrics.tokens_per_call == 1);
  CHECK(back.metrics.combine_stage == "decode_combine");
  CHECK(back.metrics.kv_tile_keys == 64);
  CHECK(back.metrics.fixed_time_share.value() == Approx(d.metrics.fixed_time_share.value()));
  // A file written before the decode metrics existed reads them as unknown.
  json old = j;
  for (const char* key : {"decode", "tokens_per_call", "combine_stage"}) old["metrics"].erase(key);
  const Diagnosis older = old.get<Diagnosis>();
  CHECK_FALSE(older.metrics.decode);
  CHECK_FALSE(older.metrics.tokens_per_call);
  CHECK_FALSE(older.metrics.combine_stage);
}
