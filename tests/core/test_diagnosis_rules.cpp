// The diagnosis as a list of rules: the table against docs/diagnosis.md (every rule a section naming
// its thresholds, and no other), then each rule on known-answer inputs, at and around its thresholds.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "core/cost_model.hpp"
#include "core/diagnosis.hpp"
#include "core/diagnosis_facts.hpp"
#include "core/diagnosis_rules.hpp"
#include "core/results.hpp"
#include "diagnosis_support.hpp"
#include "file_text.hpp"

using namespace attnprof::core;
using namespace attnprof::core::test;
namespace fs = std::filesystem;

namespace {

using attnprof::test_support::slurp;

// The section of a rule: from its anchor to the next rule anchor, heading or table row.
std::map<std::string, std::string> documented_rules() {
  const std::string doc = slurp(fs::path(ATTNPROF_SOURCE_DIR) / "docs/diagnosis.md");
  std::map<std::string, std::string> sections;
  const std::regex anchor(R"re(<a id="rule-([a-z0-9-]+)"></a>)re");
  for (std::sregex_iterator it(doc.begin(), doc.end(), anchor), stop; it != stop; ++it) {
    const size_t from = static_cast<size_t>(it->position(0) + it->length(0));
    size_t to = doc.size();
    for (const char* end : {"<a id=\"rule-", "\n#", "\n|"}) to = std::min(to, doc.find(end, from));
    sections[(*it)[1]] = doc.substr(from, to - from);
  }
  return sections;
}

std::set<std::string> thresholds_named(const std::string& text) {
  std::set<std::string> names;
  const std::regex name(R"(`(k[A-Z][A-Za-z0-9]+)`)");
  for (std::sregex_iterator it(text.begin(), text.end(), name), stop; it != stop; ++it) names.insert((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("rules: every rule has a section in docs/diagnosis.md naming exactly its thresholds, and back") {
  const auto sections = documented_rules();
  const std::string thresholds_header = slurp(fs::path(ATTNPROF_SOURCE_DIR) / "src/core/thresholds.hpp") +
                                        slurp(fs::path(ATTNPROF_SOURCE_DIR) / "src/core/decode_terms.hpp");
  std::set<std::string> names;
  for (const Rule& rule : diagnosis_rules()) {
    const std::string name(rule.name);
    INFO("rule " << name);
    CHECK(names.insert(name).second);
    CHECK(find_rule(rule.name) == &rule);
    CHECK(rule.anchor() == "rule-" + name);
    const auto section = sections.find(name);
    REQUIRE(section != sections.end());
    std::set<std::string> listed;
    for (std::string_view t : rule.thresholds) {
      listed.insert(std::string(t));
      INFO("threshold " << t);
      const bool defined = thresholds_header.find("constexpr double " + std::string(t) + " =") != std::string::npos ||
                           thresholds_header.find("constexpr int64_t " + std::string(t) + " =") != std::string::npos;
      CHECK(defined);
    }
    INFO("section: " << section->second);
    CHECK(thresholds_named(section->second) == listed);
  }
  for (const auto& [name, text] : sections) {
    INFO("section rule-" << name);
    CHECK(find_rule(name) != nullptr);
  }
}

TEST_CASE("rules: the verdict rules are decided in the documented order") {
  std::vector<std::string> verdicts;
  for (const Rule& rule : diagnosis_rules())
    if (rule.kind == RuleKind::verdict) verdicts.emplace_back(rule.name);
  CHECK(verdicts == std::vector<std::string>{"no-latency", "launch-bound", "short-call", "no-ceilings", "compute-roof",
                                             "occupancy-bound", "latency-bound", "compute-bound", "memory-bound",
                                             "latency-bound-issue", "undetermined-without-counters"});
  // The metrics say which rule decided.
  Record r = counted_record();
  CHECK(diagnosed(r).metrics.verdict_rule == "latency-bound");
  r.latency.p50_us = 0;
  CHECK(diagnosed(r).metrics.verdict_rule == "no-latency");
}

TEST_CASE("memory level: a plain HBM stream names DRAM, not the L2 that its fills keep busy") {
  // HBM 82%, L2 87%, L2 bytes about the DRAM bytes, hit rate about 0: every L2 byte is a DRAM byte.
  Record r = counted_record();
  with_levels(r, 82, 87, 1.02, 0.1);
  Diagnosis d = diagnosed(r);
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.metrics.memory_level == MemoryLevel::dram);
  CHECK(d.metrics.l2_explained_by_dram == true);
  CHECK(d.metrics.l2_over_dram_bytes.value() == Approx(1.02));
  CHECK_THAT(evidence_text(d), Catch::Contains("L2 87% (0.51 TB/s, 1.02x the DRAM bytes, hit rate 0.1%)"));
  CHECK_THAT(evidence_text(d), Catch::Contains("every DRAM byte passes L2 twice (fill and read) and HBM is saturated"));
  CHECK_THAT(d.next_step, Catch::Contains("at 82% of HBM bandwidth"));
  CHECK_THAT(d.next_step, !Catch::Contains("re-read from L2"));
  // Under saturation the same stream still names DRAM: no re-reads shown.
  with_levels(r, 65, 87, 1.02, 0.1);
  d = diagnosed(r);
  CHECK(d.metrics.memory_level == MemoryLevel::dram);
  CHECK_THAT(evidence_text(d), Catch::Contains("its traffic shows no re-reads"));
}

TEST_CASE("memory level: L2-resident re-reads name L2, with the re-read next step") {
  Record r = counted_record();
  with_levels(r, 20, 75, 10, 90);
  Context ctx = gpu_context();
  ctx.ceilings.l2_bw_bytes_per_s = 1.0e13;
  const Diagnosis d = diagnose(r, ctx);
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.metrics.memory_level == MemoryLevel::l2);
  CHECK(d.metrics.l2_explained_by_dram == false);
  CHECK_THAT(evidence_text(d), Catch::Contains("of the 10 TB/s L2 ceiling"));
  CHECK_THAT(d.next_step, Catch::Contains("K/V are re-read from L2 by many CTAs"));
}

TEST_CASE("memory level: a backward call's next steps name what its blocks of keys re-read and sum") {
  // fused-sm90's backward on the H100 (an earlier kernel, b4 h16 s4096 d128): L2 at 62%, HBM
  // at 9%, the Q/dO re-reads and dQ's fp32 reductions in L2.
  Record r = counted_record();
  r.shape.pass = attnprof::core::Pass::bwd;
  with_levels(r, 20, 75, 10, 90);
  Context ctx = gpu_context();
  ctx.ceilings.l2_bw_bytes_per_s = 1.0e13;
  Diagnosis d = diagnose(r, ctx);
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.metrics.memory_level == MemoryLevel::l2);
  CHECK_THAT(d.next_step, Catch::Contains("re-reads Q and dO from L2 for every block"));
  CHECK_THAT(d.next_step, Catch::Contains("dQ"));
  CHECK_THAT(d.next_step, !Catch::Contains("K/V are re-read"));
  r.shape.pass = attnprof::core::Pass::fwd_bwd;  // the backward is most of such a call
  CHECK_THAT(diagnose(r, ctx).next_step, Catch::Contains("re-reads Q and dO from L2 for every block"));
  // A stream at HBM: the bytes a backward can shed are its own.
  with_levels(r, 82, 87, 1.02, 0.1);
  d = diagnosed(r);
  CHECK(d.metrics.memory_level == MemoryLevel::dram);
  CHECK_THAT(d.next_step, Catch::Contains("dQ's fp32 accumulator"));
  CHECK_THAT(d.next_step, !Catch::Contains("lower-precision K/V"));
  // The forward keeps its own wording.
  r.shape.pass = attnprof::core::Pass::fwd;
  CHECK_THAT(diagnosed(r).next_step, Catch::Contains("lower-precision K/V"));
  // L1/shared (fused's backward on the H200, reports/h200-backward: 72% against the tensor pipe's 40%).
  r.shape.pass = attnprof::core::Pass::bwd;
  r.counters.total[kMetricDramSol] = 4;
  r.counters.total[kMetricL2Sol] = 30;
  r.counters.total[kMetricL1Sol] = 72;
  r.counters.total[kMetricMemorySol] = 72;
  r.counters.total[kMetricComputeSol] = 40;
  d = diagnosed(r);
  CHECK(d.metrics.memory_level == MemoryLevel::l1);
  CHECK_THAT(d.next_step, Catch::Contains("each Q, dO, K or V fragment feeds more MMAs"));
  CHECK_THAT(d.next_step, !Catch::Contains("Q kept in registers"));
  // On wgmma (fused-sm90's backward, reports/h200-backward at b4 h16 s4096 d128: L1/shared 69%, tensor pipe 58%),
  // whose operands come from shared memory already: bytes per MMA and the dS and dQ round trips.
  r.counters.total[kMetricTensorInstHmma] = 1e11 / 65536;
  d = diagnosed(r);
  CHECK(d.metrics.memory_level == MemoryLevel::l1);
  CHECK_THAT(d.next_step, Catch::Contains("on wgmma, which reads its operands there"));
  CHECK_THAT(d.next_step, Catch::Contains("dS and dQ round trips"));
  CHECK_THAT(d.next_step, !Catch::Contains("wgmma reading operands straight from shared memory"));
  r.shape.pass = attnprof::core::Pass::fwd;
  CHECK_THAT(diagnosed(r).next_step, Catch::Contains("fewer staging round trips"));
  r.shape.pass = attnprof::core::Pass::bwd;
  r.counters.total.erase(kMetricTensorInstHmma);
  // Neither unit busy: the loads to pipeline deeper are the backward's.
  r.counters.total[kMetricL1Sol] = 30;
  r.counters.total[kMetricMemorySol] = 30;
  r.counters.total[kMetricComputeSol] = 30;
  r.counters.total[kMetricTensorPipeActive] = 30;
  d = diagnosed(r);
  CHECK(d.verdict == Verdict::latency_bound);
  CHECK_THAT(d.next_step, Catch::Contains("deeper pipelining of the Q and dO loads"));
  r.shape.pass = attnprof::core::Pass::fwd;
  CHECK_THAT(diagnosed(r).next_step, Catch::Contains("deeper pipelining of K/V loads"));
}

TEST_CASE("excess traffic: a backward's fp32 dQ accumulator is named with its share of the excess") {
  // fused's backward sums dQ with atomics (plan.dq_atomic 1): 16 heads x 8192 rows x 128 x 4 B = 67.1 MB,
  // up to 3x of it (zeroed, written back, read) against the 250 MB over the 150 MB minimum.
  Record r = counted_record();
  r.shape.pass = attnprof::core::Pass::bwd;
  r.plan["dq_atomic"] = 1;
  r.counters.total[kMetricDramRead] = 2.0e8;
  r.counters.total[kMetricDramWrite] = 2.0e8;
  const std::string text = evidence_text(diagnosed(r));
  CHECK_THAT(text, Catch::Contains("fp32 accumulator of 0.0671 GB (plan.dq_atomic)"));
  CHECK_THAT(text, Catch::Contains("up to 0.201 GB of DRAM traffic, 81% of the 0.25 GB over the minimum"));
  // No accumulator, or a forward: no such line.
  r.plan.erase("dq_atomic");
  CHECK_THAT(evidence_text(diagnosed(r)), !Catch::Contains("fp32 accumulator"));
  r.plan["dq_atomic"] = 1;
  r.shape.pass = attnprof::core::Pass::fwd;
  CHECK_THAT(evidence_text(diagnosed(r)), !Catch::Contains("fp32 accumulator"));
  // Within the minimum there is nothing for it to explain.
  r.shape.pass = attnprof::core::Pass::bwd;
  r.counters.total[kMetricDramRead] = 1.0e8;
  r.counters.total[kMetricDramWrite] = 0.5e8;
  CHECK_THAT(evidence_text(diagnosed(r)), !Catch::Contains("fp32 accumulator"));
}

TEST_CASE("memory level: an L2-resident copy whose writes came from replayed passes names L2") {
  // calibrate's l2-copy on the H200: 503 MB of output per call that stays in L2; 7.9 MB read and 11.7 MB
  // written by DRAM on replayed passes; L2 moved 1.26 GB at 99.7% hits. The re-read ratio is against the
  // counted DRAM bytes (64x), not the outputs' minimum standing in for the untrusted writes (2.47x).
  Record r = counted_record();
  r.cost.min_bytes_read = r.cost.min_bytes_write = 503316480;
  r.counters.dram_source = DramSource::replayed;
  r.counters.total[kMetricDramRead] = 7888896;
  r.counters.total[kMetricDramWrite] = 11737600;
  r.counters.total[kMetricDramSol] = 2.8;
  r.counters.total[kMetricL2Sol] = 79.2;
  r.counters.total[kMetricL1Sol] = 46.5;
  r.counters.total[kMetricMemorySol] = 79.2;
  r.counters.total[kMetricComputeSol] = 13.8;
  r.counters.total[kMetricL2Bytes] = 1263115936;
  r.counters.total[kMetricL2HitRate] = 99.7;
  const Diagnosis d = diagnosed(r);
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.metrics.memory_level == MemoryLevel::l2);
  CHECK(d.metrics.l2_over_dram_bytes.value() == Approx(1263115936.0 / (7888896 + 11737600)));
}

TEST_CASE("memory level: L2 binds at and around each of its thresholds") {
  Record r = counted_record();
  auto level = [&](double dram, double l2, double ratio, double hit) {
    with_levels(r, dram, l2, ratio, hit);
    return diagnosed(r).metrics.memory_level;
  };
  // The bytes ratio: 2.5x the DRAM bytes.
  CHECK(level(50, 70, 2.49, 90) == MemoryLevel::dram);
  CHECK(level(50, 70, 2.5, 90) == MemoryLevel::l2);
  CHECK(level(50, 70, 2.51, 90) == MemoryLevel::l2);
  // The hit rate: 50%.
  CHECK(level(50, 70, 5, 49.9) == MemoryLevel::dram);
  CHECK(level(50, 70, 5, 50) == MemoryLevel::l2);
  CHECK(level(50, 70, 5, 50.1) == MemoryLevel::l2);
  // The lead over HBM: 10 points.
  CHECK(level(60.1, 70, 5, 90) == MemoryLevel::dram);
  CHECK(level(60, 70, 5, 90) == MemoryLevel::l2);
  CHECK(level(59.9, 70, 5, 90) == MemoryLevel::l2);
  // HBM saturated (80%) binds whatever L2 does.
  CHECK(level(80, 95, 5, 90) == MemoryLevel::dram);
  CHECK(level(79.9, 95, 5, 90) == MemoryLevel::l2);
  // Without the L2 bytes the hit rate alone decides; without both, the margin alone (older files).
  r.counters.total.erase(kMetricL2Bytes);
  r.counters.total[kMetricDramSol] = 50;
  r.counters.total[kMetricL2Sol] = 70;
  r.counters.total[kMetricL2HitRate] = 10;
  CHECK(diagnosed(r).metrics.memory_level == MemoryLevel::dram);
  r.counters.total.erase(kMetricL2HitRate);
  const Diagnosis d = diagnosed(r);
  CHECK(d.metrics.memory_level == MemoryLevel::l2);
  // Re-reads not shown: the generic L2 step, not the K/V one.
  CHECK_THAT(d.next_step, Catch::Contains("L2 at 70% of its throughput"));
  CHECK_THAT(d.next_step, !Catch::Contains("re-read from L2"));
}

TEST_CASE("memory level: L2 named on re-read bytes but a stream's hit rate gets no K/V re-read step") {
  // cuDNN decode-like: L2 far ahead of HBM on bytes, hit rate 0.1%.
  Record r = counted_record();
  with_levels(r, 40, 70, 3, 0.1);
  r.counters.total.erase(kMetricL2HitRate);
  r.counters.total[kMetricL2HitRate] = 0.1;
  const Diagnosis d = diagnosed(r);
  CHECK(d.metrics.memory_level == MemoryLevel::dram);  // the hit rate shows no re-reads
  CHECK_THAT(d.next_step, !Catch::Contains("re-read from L2"));
}

TEST_CASE("decode: memory-bound on DRAM with the decode next step although L2 edges out HBM") {
  // b64 h32/8 s1x8192 on a 4.52 TB/s part: 2.15 GB in 520 us, HBM 91%, L2 96% (its fills), hit rate 0.1%.
  Record r;
  r.shape = Shape{64, 32, 8, 1, 8192, 128, false, DType::bf16};
  r.kernel = "cudnn";
  r.backend = BackendKind::cuda;
  r.status = Status::ok;
  r.cost = cost_of(r.shape, KernelKind::fused);
  r.latency.n = 100;
  r.latency.p50_us = 520;
  r.latency.p99_us = 530;
  r.counters.status = CounterStatus::ok;
  r.counters.total[kMetricDramRead] = r.cost.min_bytes_read;
  r.counters.total[kMetricDramWrite] = r.cost.min_bytes_write;
  r.counters.total[kMetricComputeSol] = 10;
  r.counters.total[kMetricL1Sol] = 20;
  with_levels(r, 91, 96, 1.01, 0.1);
  r.verification.checked = r.verification.passed = true;
  Context ctx = gpu_context();
  ctx.ceilings.peak_bw_bytes_per_s = 4.52e12;
  ctx.ceilings.launch_latency_us = 1.62;
  const Diagnosis d = diagnose(r, ctx);
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.metrics.memory_level == MemoryLevel::dram);
  CHECK_THAT(d.next_step, Catch::Contains("of the 4.52 TB/s ceiling: the kernel is at the roof"));
  CHECK_THAT(d.next_step, !Catch::Contains("re-read from L2"));
}

TEST_CASE("excess traffic: reads and writes each against their minimum, from 4 MB") {
  Record r = counted_record();
  auto excess = [&](double read, double write, std::optional<double> tail = std::nullopt) {
    r.counters.total[kMetricDramRead] = read;
    r.counters.total[kMetricDramWrite] = write;
    r.counters.dram_write_tail_bytes = tail;
    return diagnosed(r).has(Flag::excess_traffic);
  };
  // Reads: 1.3x the 1e8 minimum.
  CHECK_FALSE(excess(1.29e8, 0.5e8));
  CHECK_FALSE(excess(1.3e8, 0.5e8));
  CHECK(excess(1.31e8, 0.5e8));
  // Writes (with the L2 tail): 1.3x the 5e7 minimum; the reads far under it do not hide them.
  CHECK_FALSE(excess(0.9e8, 0.64e8));
  CHECK(excess(0.9e8, 0.66e8));
  CHECK(excess(0.9e8, 0.5e8, 0.16e8));
  CHECK_FALSE(excess(0.9e8, 0.5e8, 0.14e8));
  CHECK(diagnosed(r).metrics.write_traffic_ratio.value() == Approx(1.28));
  // The floor: a direction counted under 4 MB is noise, whatever its ratio.
  r.cost.min_bytes_read = 1e6;
  r.cost.min_bytes_write = 0.5e8;
  CHECK_FALSE(excess(3.99e6, 0.5e8));
  const Diagnosis under = diagnosed(r);
  CHECK(under.metrics.read_traffic_ratio.value() == Approx(3.99));
  CHECK_THAT(evidence_text(under), Catch::Contains("below which DRAM counts are noise: not judged"));
  CHECK(excess(4e6, 0.5e8));
  CHECK(excess(4.01e6, 0.5e8));
}

TEST_CASE("borderline: a verdict within its band of a threshold names the other side") {
  Record r = counted_record();
  with_stalls(r, 0.501);
  Diagnosis d = diagnosed(r);
  CHECK(d.verdict == Verdict::occupancy_bound);
  CHECK(d.has(Flag::borderline));
  CHECK_THAT(evidence_text(d), Catch::Contains("borderline: occupancy-bound at stall share 0.501; within 0.03 of 0.5: "
                                               "latency-bound on the other side"));
  with_stalls(r, 0.499);
  d = diagnosed(r);
  CHECK(d.verdict == Verdict::latency_bound);
  CHECK(d.has(Flag::borderline));
  CHECK_THAT(evidence_text(d), Catch::Contains("latency-bound at stall share 0.499; within 0.03 of 0.5: "
                                               "occupancy-bound on the other side"));
  with_stalls(r, 0.5);  // on the threshold: occupancy-bound, the other side just under it
  d = diagnosed(r);
  CHECK(d.verdict == Verdict::occupancy_bound);
  CHECK(d.has(Flag::borderline));
  // The band's edges: 0.529 inside, 0.531 outside.
  with_stalls(r, 0.529);
  CHECK(diagnosed(r).has(Flag::borderline));
  with_stalls(r, 0.531);
  CHECK_FALSE(diagnosed(r).has(Flag::borderline));
  // A number near its threshold that would not change the verdict raises nothing: no limiter, so the
  // stall share cannot make it occupancy-bound.
  with_stalls(r, 0.501);
  r.occupancy.limiter.clear();
  CHECK(diagnosed(r).verdict == Verdict::latency_bound);
  CHECK_FALSE(diagnosed(r).has(Flag::borderline));
}

TEST_CASE("borderline: SOL percentages within 3 points of 60, the P50 within 5% of the launch limit") {
  Record r = counted_record();
  with_levels(r, 62.9, 30, 1, 1);  // memory-bound on HBM at 62.9%: latency-bound under 60
  Diagnosis d = diagnosed(r);
  CHECK(d.verdict == Verdict::memory_bound);
  CHECK(d.has(Flag::borderline));
  CHECK_THAT(evidence_text(d), Catch::Contains("memory-bound at memory throughput 62.9%; within 3 points of 60%: "
                                               "latency-bound on the other side"));
  with_levels(r, 63.1, 30, 1, 1);
  CHECK(diagnosed(r).verdict == Verdict::memory_bound);
  CHECK_FALSE(diagnosed(r).has(Flag::borderline));
  // Launch-bound: 10 us per launch without a measured latency; 5% of it is 0.5 us.
  r = counted_record();
  r.latency.p50_us = 9.6;
  d = diagnosed(r);
  CHECK(d.verdict == Verdict::launch_bound);
  CHECK(d.has(Flag::borderline));
  r.latency.p50_us = 9.4;
  CHECK_FALSE(diagnosed(r).has(Flag::borderline));
  r.latency.p50_us = 10.4;
  CHECK(diagnosed(r).verdict != Verdict::launch_bound);
  CHECK(diagnosed(r).has(Flag::borderline));
}

TEST_CASE("wgmma kernels are never occupancy-bound: one CTA per SM is their design") {
  Record r = counted_record();
  with_stalls(r, 0.6);  // low occupancy, idle issue slots, warps waiting on results
  r.counters.total[kMetricTensorInstHmma] = 1e11 / 65536;
  Diagnosis d = diagnosed(r);
  CHECK(d.verdict == Verdict::latency_bound);
  CHECK(d.metrics.tensor_ops_per_instruction.value() == Approx(65536));
  CHECK_THAT(evidence_text(d), Catch::Contains("by design: a wgmma kernel (65536 tensor ops per instruction, over 8192)"));
  CHECK_THAT(d.next_step, Catch::Contains("one warp-specialised CTA per SM on wgmma"));
  CHECK_THAT(d.next_step, Catch::Contains("deepen the K/V ring"));
  CHECK_THAT(d.next_step, !Catch::Contains("use fewer registers"));
  // A backward's ring holds Q and dO, its non-MMA work is P's exp2 and dS, its consumers own keys.
  r.shape.pass = attnprof::core::Pass::bwd;
  d = diagnosed(r);
  CHECK_THAT(d.next_step, Catch::Contains("deepen the Q/dO ring, overlap more of P's exp2 and dS"));
  CHECK_THAT(d.next_step, !Catch::Contains("softmax"));
  r.shape.pass = attnprof::core::Pass::fwd;
  // At the threshold (8192, not over it) mma.sync rules apply: occupancy-bound.
  r.counters.total[kMetricTensorInstHmma] = 1e11 / 8192;
  CHECK(diagnosed(r).verdict == Verdict::occupancy_bound);
  r.counters.total[kMetricTensorInstHmma] = 1e11 / 8193;
  CHECK(diagnosed(r).verdict == Verdict::latency_bound);
  // An FP32 kernel (the register-heavy calibration probe): its FP32 FLOPs over a few stray tensor
  // instructions are not warpgroup MMAs; it stays occupancy-bound.
  r.shape.dtype = DType::fp32;
  r.counters.total.erase(kMetricTensorOpsBf16);
  r.counters.total[kMetricFfma] = 1.1e10;
  r.counters.total[kMetricTensorInstHmma] = 4200;
  const Diagnosis fp32 = diagnose(r, [] {
    Context ctx = gpu_context();
    ctx.ceilings.peak_flops_per_s["fp32"] = 8e14;
    return ctx;
  }());
  CHECK_FALSE(fp32.metrics.tensor_ops_per_instruction.has_value());
  CHECK(fp32.verdict == Verdict::occupancy_bound);
}

TEST_CASE("instruction mix: a latency- or occupancy-bound point names the classes its warps issued most") {
  const std::string line =
      "warp instructions by class (counters): FMA 30%, ALU 20%, load/store 15% of 1 G executed, 10 per 1k FLOP";
  Record r = counted_record();  // compute 30%, memory 40%: neither busy
  const Diagnosis plain = diagnosed(r);
  REQUIRE(plain.verdict == Verdict::latency_bound);
  CHECK_THAT(evidence_text(plain), !Catch::Contains("warp instructions by class"));
  with_instruction_mix(r);  // 1e9 warp instructions over 1e11 FLOPs
  Diagnosis d = diagnosed(r);
  CHECK(d.verdict == Verdict::latency_bound);  // evidence only: the verdict is the counters' as before
  CHECK_THAT(evidence_text(d), Catch::Contains(line));
  with_stalls(r, 0.6);
  d = diagnosed(r);
  CHECK(d.verdict == Verdict::occupancy_bound);
  CHECK_THAT(evidence_text(d), Catch::Contains(line));
  // The SM busy without one unit leading: the instructions it issues besides the MMAs.
  r = counted_record();
  with_instruction_mix(r);
  r.counters.total[kMetricComputeSol] = 70;
  d = diagnosed(r);
  CHECK(d.verdict == Verdict::latency_bound);
  CHECK(d.metrics.verdict_rule == "latency-bound-issue");
  CHECK_THAT(evidence_text(d), Catch::Contains(line));
  // A compute-bound point's evidence is its pipe's: no class line.
  r.counters.total[kMetricTensorPipeActive] = 80;
  r.counters.total[kMetricComputeSol] = 85;
  d = diagnosed(r);
  CHECK(d.verdict == Verdict::compute_bound);
  CHECK_THAT(evidence_text(d), !Catch::Contains("warp instructions by class"));
}

TEST_CASE("without counters the verdict rests on the roofline, and says so when it cannot") {
  Record r = counted_record();
  r.counters = Counters{};
  r.counters.status = CounterStatus::unavailable;
  r.counters.reason = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  // 1e11 FLOP in 300 us = 42% of 800 TFLOP/s; 1.5e8 B = 12.5% of 4 TB/s: no unit shown busy.
  Diagnosis d = diagnosed(r);
  CHECK(d.verdict == Verdict::unknown);
  CHECK(d.metrics.verdict_rule == "undetermined-without-counters");
  CHECK(d.has(Flag::counters_unavailable));
  CHECK_THAT(evidence_text(d), Catch::Contains("undetermined without counters"));
  CHECK_THAT(d.next_step, Catch::Contains("collect the counters"));
  // Even with a low occupancy it claims no occupancy or stall diagnosis.
  with_stalls(r, 0.6);
  r.counters.total.clear();
  d = diagnosed(r);
  CHECK(d.verdict == Verdict::unknown);
  CHECK_THAT(evidence_text(d), !Catch::Contains("theoretical occupancy"));
  // The minimum bytes at 60% of the bandwidth prove HBM busy: memory-bound from the roofline.
  r.cost.min_bytes_read = 0.605 * kBw * 300e-6 - r.cost.min_bytes_write;
  CHECK(diagnosed(r).verdict == Verdict::memory_bound);
  r.cost.min_bytes_read = 0.595 * kBw * 300e-6 - r.cost.min_bytes_write;
  CHECK(diagnosed(r).verdict == Verdict::unknown);
  // Launch-bound stands without counters.
  r.latency.p50_us = 5;
  CHECK(diagnosed(r).verdict == Verdict::launch_bound);
}


TEST_CASE("roofline: an fp8 point is not placed against the 16-bit tensor roof") {
  Record r = counted_record();
  r.shape.dtype = DType::fp8_e4m3;
  imply_fp8_kv_format(r.shape);
  const Diagnosis d = diagnosed(r);  // ceilings with a bf16 roof only
  CHECK_THAT(evidence_text(d), Catch::Contains("no fp8_e4m3 roof"));
  CHECK_THAT(evidence_text(d), !Catch::Contains("the bf16 ridge"));
  CHECK_FALSE(d.metrics.pct_of_roof);
  // With an fp8 roof the point is placed against it.
  Context ctx = gpu_context();
  ctx.ceilings.peak_flops_per_s["fp8_e4m3"] = 2 * kPeakBf16;
  const Diagnosis placed = diagnose(r, ctx);
  CHECK_THAT(evidence_text(placed), Catch::Contains("fp8_e4m3 ridge"));
}
