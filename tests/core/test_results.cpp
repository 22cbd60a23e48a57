#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/results.hpp"
#include "core/roofline.hpp"

using namespace attnprof;
using namespace attnprof::core;

TEST_CASE("results round-trip through JSON, NaN and infinity included") {
  Results r;
  r.context.tool_version = "0.1.0";
  r.context.device.name = "NVIDIA H200";
  r.context.ceilings.peak_flops_per_s["bf16"] = 7.8e14;
  Record rec;
  rec.shape = Shape{2, 8, 2, 100, 300, 128, true, DType::fp16};
  rec.kernel = "fused";
  rec.status = Status::incorrect;
  rec.reason = "max error 0.5 over tolerance 0.01";
  rec.samples_us = {10.5, 11.25, std::nan("")};
  rec.latency.p50_us = 10.875;
  rec.sampling_stop = "time_budget";
  rec.verification.lse_max_abs_err = INFINITY;
  rec.occupancy.achieved_pct = 42.5;
  rec.counters.total["dram__bytes_read.sum"] = 1.0e9;
  rec.counters.dram_write_tail_bytes = 1.3e7;
  rec.counters.session = CounterSession{24, 410.5, 293.25, 63.75, 12.5};
  Launch from_graph;
  from_graph.name = "flash_fwd_kernel";
  from_graph.from_graph = true;
  rec.launches = {from_graph, Launch{}};
  Record no_tail = rec;
  no_tail.counters.dram_write_tail_bytes.reset();
  no_tail.counters.session.reset();
  no_tail.kernel = "reference";
  r.records.push_back(rec);
  r.records.push_back(no_tail);

  const std::string path = "roundtrip_test.json";
  write_results(r, path);
  Results back = read_results(path);
  std::remove(path.c_str());

  REQUIRE(back.records.size() == 2);
  const Record& b = back.records[0];
  CHECK(b.shape == rec.shape);
  CHECK(b.status == Status::incorrect);
  CHECK(b.reason == rec.reason);
  CHECK(b.sampling_stop == "time_budget");
  REQUIRE(b.samples_us.size() == 3);
  CHECK(b.samples_us[1] == 11.25);
  CHECK(std::isnan(b.samples_us[2]));
  CHECK(std::isinf(b.verification.lse_max_abs_err));
  CHECK(b.occupancy.achieved_pct.value() == 42.5);
  CHECK(b.counters.total.at("dram__bytes_read.sum") == 1.0e9);
  CHECK(b.counters.dram_write_tail_bytes.value() == 1.3e7);
  REQUIRE(b.counters.session.has_value());
  CHECK(b.counters.session->points == 24);
  CHECK(b.counters.session->pass_setup_ms == 410.5);
  CHECK(b.counters.session->run_ms == 293.25);
  CHECK(b.counters.session->pass_close_ms == 63.75);
  CHECK(b.counters.session->evaluate_ms == 12.5);
  CHECK_FALSE(back.records[1].counters.dram_write_tail_bytes.has_value());
  CHECK_FALSE(back.records[1].counters.session.has_value());
  CHECK(back.context.device.name == "NVIDIA H200");
  CHECK(back.context.ceilings.peak_flops_per_s.at("bf16") == 7.8e14);
  CHECK(point_key(b) == point_key(rec));
  REQUIRE(b.launches.size() == 2);
  CHECK(b.launches[0].from_graph);
  CHECK_FALSE(b.launches[1].from_graph);
}

TEST_CASE("a launch record without from_graph (before schema 1.6) reads as not from a graph") {
  const std::string path = "schema15_launch_test.json";
  {
    std::ofstream f(path);
    f << R"({"schema_version": "1.5", "context": {}, "records": [{"shape": {"batch": 1, "heads": 1, "seq_q": 4,)"
         R"( "seq_k": 4, "hdim": 64, "causal": false, "dtype": "bf16"}, "kernel": "fused", "status": "ok",)"
         R"( "launches": [{"name": "k", "grid": [1, 1, 1], "block": [128, 1, 1], "duration_us": 3.5}]}]})";
  }
  const Results back = read_results(path);
  std::remove(path.c_str());
  REQUIRE(back.records.size() == 1);
  REQUIRE(back.records[0].launches.size() == 1);
  CHECK(back.records[0].launches[0].name == "k");
  CHECK_FALSE(back.records[0].launches[0].from_graph);
}

TEST_CASE("results of schema 1.2 read with an empty sampling_stop") {
  const std::string path = "schema12_test.json";
  {
    std::ofstream f(path);
    f << R"({"schema_version": "1.2", "context": {}, "records": [)"
      << R"({"shape": {"batch": 1, "heads": 2, "kv_heads": 2, "seq_q": 64, "seq_k": 64, "hdim": 64,)"
      << R"( "causal": false, "dtype": "bf16"}, "kernel": "fused", "status": "ok"}]})";
  }
  const Results back = read_results(path);
  std::remove(path.c_str());
  REQUIRE(back.records.size() == 1);
  CHECK(back.records[0].sampling_stop.empty());
  CHECK(back.context.schema_minor == 2);
}

TEST_CASE("the reader rejects other major versions, non-JSON and missing files with InputError") {
  auto write = [](const char* path, const char* text) { std::ofstream(path) << text; };
  write("v2.json", R"({"schema_version": "2.0", "context": {}, "records": []})");
  CHECK_THROWS_AS(read_results("v2.json"), InputError);
  CHECK_THROWS_WITH(read_results("v2.json"), Catch::Contains("schema 2.0 is not supported"));
  write("garbage.json", "{not json");
  CHECK_THROWS_AS(read_results("garbage.json"), InputError);
  write("other.json", R"({"hello": 1})");
  CHECK_THROWS_WITH(read_results("other.json"), Catch::Contains("schema_version"));
  CHECK_THROWS_AS(read_results("does/not/exist.json"), InputError);
  std::remove("v2.json");
  std::remove("garbage.json");
  std::remove("other.json");
}

TEST_CASE("shape validation names the impossible field") {
  Shape s{1, 6, 4, 128, 128, 64, false, DType::bf16};
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("kv_heads 4 does not divide heads 6"));
  s.kv_heads = 3;
  CHECK_NOTHROW(s.validate());
  s.seq_q = 0;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("seq_q must be positive"));
}

#include "core/sha256.hpp"

TEST_CASE("sha256 matches the FIPS 180-4 test vectors", "[sha256]") {
  using attnprof::core::sha256_hex;
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 55, 56 and 64 bytes: the padding's one-block and two-block cases.
  CHECK(sha256_hex(std::string(55, 'a')) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(sha256_hex(std::string(56, 'a')) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(sha256_hex(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST_CASE("schema 1.5 writes the exact and the convention's FLOPs and TFLOP/s") {
  Results r;
  Record rec;
  rec.shape = Shape{1, 4, 4, 1, 4096, 128, true, DType::bf16};
  rec.kernel = "fused";
  rec.cost.flops = 8.0e9;
  rec.cost.flops_fa_convention = 4.0e9;
  rec.tflops = 80;
  rec.tflops_fa_convention = 40;
  r.records.push_back(rec);
  const nlohmann::json j = r;
  CHECK(j.at("schema_version") == "1.14");
  CHECK(j.at("records")[0].at("cost").at("flops_fa_convention") == 4.0e9);
  CHECK_FALSE(j.at("records")[0].at("cost").contains("flops_causal_exact"));
  const Results back = parse_results(j.dump(), "mem");
  CHECK(back.records[0].cost.flops == 8.0e9);
  CHECK(back.records[0].cost.flops_fa_convention == 4.0e9);
  CHECK(back.records[0].tflops == 80);
  CHECK(back.records[0].tflops_fa_convention == 40);
}

TEST_CASE("a file before 1.5: its convention FLOPs kept as such, causal costs recomputed exactly") {
  // What attnprof 1.4 wrote for a decode point (one query row over 4096 keys, causal): flops and
  // tflops halved by the convention, although the one row sees every key.
  const std::string causal = R"({"shape": {"batch": 1, "heads": 4, "kv_heads": 4, "seq_q": 1, "seq_k": 4096,)"
                             R"( "hdim": 128, "causal": true, "dtype": "bf16"}, "kernel": "fused", "status": "ok",)"
                             R"( "latency": {"n": 30, "p50_us": 100.0}, "tflops": 0.04194304,)"
                             R"( "cost": {"flops": 4194304, "flops_dense": 8388608, "flops_causal_exact": 8388608,)"
                             R"( "min_bytes_read": 1, "min_bytes_write": 1, "sp_bytes": 0, "intensity": 1}})";
  const std::string dense = R"({"shape": {"batch": 1, "heads": 4, "kv_heads": 4, "seq_q": 64, "seq_k": 64,)"
                            R"( "hdim": 64, "causal": false, "dtype": "bf16"}, "kernel": "fused", "status": "ok",)"
                            R"( "latency": {"n": 30, "p50_us": 10.0}, "tflops": 0.5,)"
                            R"( "cost": {"flops": 4194304, "flops_dense": 4194304, "min_bytes_read": 7}})";
  const Results back = parse_results(R"({"schema_version": "1.4", "context": {}, "records": [)" + causal + "," +
                                         dense + "]}",
                                     "old");
  const Record& c = back.records[0];
  CHECK(c.cost.flops == 8388608);               // 4 * 4 heads * 128 * 4096 unmasked scores
  CHECK(c.cost.flops_fa_convention == 4194304);  // what the file called flops
  CHECK(c.cost.min_bytes_read == (4.0 * 128 + 2 * 4.0 * 4096 * 128) * 2);  // recomputed, not 1
  CHECK(c.tflops == Approx(8388608 / 100e-6 / 1e12));
  CHECK(c.tflops_fa_convention == Approx(0.04194304));
  const Record& d = back.records[1];  // dense: both conventions agree, figures stay as written
  CHECK(d.cost.flops == 4194304);
  CHECK(d.cost.flops_fa_convention == 4194304);
  CHECK(d.cost.min_bytes_read == 7);
  CHECK(d.tflops == 0.5);
  CHECK(d.tflops_fa_convention == 0.5);

  // The same text as 1.5 is taken as written.
  const Results now = parse_results(R"({"schema_version": "1.5", "context": {}, "records": [)" + causal + "]}", "new");
  CHECK(now.records[0].cost.flops == 4194304);
  CHECK(now.records[0].cost.min_bytes_read == 1);
}

TEST_CASE("the vocabulary's enums write and read the strings results files have always held") {
  for (const auto& [value, name] : EnumNames<CounterStatus>::names) {
    CHECK(nlohmann::json(value) == std::string(name));
    CHECK(nlohmann::json(std::string(name)).get<CounterStatus>() == value);
  }
  CHECK(nlohmann::json(CounterStatus::not_collected) == "not_collected");
  CHECK(nlohmann::json(CounterStatus::pending) == "pending");
  CHECK(nlohmann::json(BackendKind::cuda) == "cuda");
  CHECK(nlohmann::json(BackendKind::none) == "");
  CHECK(nlohmann::json(TimingMode::cold_graph) == "cold+graph");
  CHECK(nlohmann::json(TimingMode::warm_graph) == "warm+graph");
  CHECK(graph_replayed(TimingMode::warm) == TimingMode::warm_graph);
  CHECK(nlohmann::json(Status::incorrect) == "incorrect");

  // A record as older attnprofs wrote it: its strings read into the enums and are written back as they were.
  const std::string old_record = R"({"shape": {"batch": 1, "heads": 2, "kv_heads": 2, "seq_q": 64, "seq_k": 64,
      "hdim": 64, "causal": false, "dtype": "bf16"}, "kernel": "fused", "backend": "cuda", "status": "ok",
      "timing_mode": "warm+graph", "counters": {"status": "pending", "reason": "later"}})";
  const Record rec = nlohmann::json::parse(old_record).get<Record>();
  CHECK(rec.backend == BackendKind::cuda);
  CHECK(rec.timing_mode == TimingMode::warm_graph);
  CHECK(rec.counters.status == CounterStatus::pending);
  const nlohmann::json back(rec);
  CHECK(back.at("backend") == "cuda");
  CHECK(back.at("timing_mode") == "warm+graph");
  CHECK(back.at("counters").at("status") == "pending");

  // Absent fields read as before: no backend or mode (""), counters not collected.
  const Record bare = nlohmann::json::parse(R"({"shape": {"batch": 1, "heads": 2, "kv_heads": 2, "seq_q": 64,
      "seq_k": 64, "hdim": 64, "causal": false, "dtype": "bf16"}, "kernel": "fused", "status": "ok"})").get<Record>();
  CHECK(bare.backend == BackendKind::none);
  CHECK(bare.timing_mode == TimingMode::none);
  CHECK(bare.counters.status == CounterStatus::not_collected);
  CHECK(nlohmann::json(bare).at("backend") == "");
}

TEST_CASE("an unknown enum string is an InputError that names it and what is accepted") {
  CHECK_THROWS_WITH(parse_enum<CounterStatus>("collected"),
                    "unknown counter status 'collected' (expected 'not_collected', 'ok', 'unavailable', 'pending')");
  CHECK_THROWS_AS(nlohmann::json("tpu").get<BackendKind>(), InputError);
  CHECK_THROWS_WITH(nlohmann::json("hot").get<TimingMode>(), Catch::Contains("unknown timing mode 'hot'"));
  CHECK_THROWS_WITH(nlohmann::json(3).get<CounterStatus>(), Catch::Contains("counter status 3 is not a string"));
  CHECK_THROWS_WITH(parse_status("great"), Catch::Contains("unknown point status 'great'"));

  const std::string file = R"({"schema_version": "1.5", "context": {"backend": "cuda"}, "records": [{"shape":
      {"batch": 1, "heads": 2, "kv_heads": 2, "seq_q": 64, "seq_k": 64, "hdim": 64, "causal": false, "dtype": "bf16"},
      "kernel": "fused", "status": "ok", "counters": {"status": "half"}}]})";
  CHECK_THROWS_WITH(parse_results(file, "odd.json"), "'odd.json': unknown counter status 'half' (expected "
                                                     "'not_collected', 'ok', 'unavailable', 'pending')");
  const std::string bad_backend = R"({"schema_version": "1.5", "context": {"backend": "tpu"}, "records": []})";
  CHECK_THROWS_WITH(parse_results(bad_backend, "b.json"), Catch::Contains("unknown backend 'tpu'"));
}

TEST_CASE("counters.dram_source: written as its string, absent reads as none, anything else is refused") {
  Counters c;
  c.status = CounterStatus::ok;
  c.dram_source = DramSource::single_pass;
  const nlohmann::json j = c;
  CHECK(j.at("dram_source") == "single-pass");
  CHECK(j.get<Counters>().dram_source == DramSource::single_pass);
  CHECK(nlohmann::json::object().get<Counters>().dram_source == DramSource::none);
  CHECK(nlohmann::json(Counters{}).at("dram_source") == "");
  const nlohmann::json unknown = {{"dram_source", "sideways"}}, number = {{"dram_source", 5}};
  CHECK_THROWS_WITH(unknown.get<Counters>(), Catch::Contains("unknown DRAM source 'sideways'"));
  CHECK_THROWS_WITH(number.get<Counters>(), "DRAM source 5 is not a string");
}

TEST_CASE("counters that read ok without a value are unavailable, in a session and in a file") {
  // torch:flash's backward in reports/h200-backward: a session of its own that recorded no range.
  Counters c;
  c.status = CounterStatus::ok;
  c.reason = "batched session not used (x): collected in a session of its own; kernel replay";
  c.dram_source = DramSource::replayed;
  mark_nothing_counted(c);
  CHECK(c.status == CounterStatus::unavailable);
  CHECK_THAT(c.reason, Catch::StartsWith("batched session not used (x)"));
  CHECK_THAT(c.reason, Catch::EndsWith("; no counter value: the session recorded no range (none of the call's kernel "
                                       "launches was profiled)"));
  CHECK(c.dram_source == DramSource::none);
  // One value, one range, or another status: left as they are.
  Counters one;
  one.status = CounterStatus::ok;
  one.total["dram__bytes_read.sum"] = 1;
  mark_nothing_counted(one);
  CHECK(one.status == CounterStatus::ok);
  Counters ranges;
  ranges.status = CounterStatus::ok;
  ranges.per_kernel.push_back(KernelCounters{"0", {}});
  mark_nothing_counted(ranges);
  CHECK(ranges.status == CounterStatus::ok);
  Counters none;
  mark_nothing_counted(none);
  CHECK(none.status == CounterStatus::not_collected);
  CHECK(none.reason.empty());
  // A file that holds such a point reads it as unavailable.
  Results r;
  Record rec;
  rec.shape = Shape{1, 2, 2, 64, 64, 64, false, DType::bf16};
  rec.kernel = "torch:flash";
  rec.counters.status = CounterStatus::ok;
  r.records = {rec};
  const Results back = parse_results(nlohmann::json(r).dump(), "file");
  CHECK(back.records[0].counters.status == CounterStatus::unavailable);
  CHECK_THAT(back.records[0].counters.reason, Catch::StartsWith("no counter value"));
}

TEST_CASE("schema 1.8: a packed batch's shape and padded cost round-trip; older files read as dense") {
  Results r;
  Record rec;
  rec.shape = Shape{3, 8, 2, 300, 300, 64, true, DType::bf16};
  rec.shape.seq_lens = {300, 17, 1};
  rec.shape.lengths = "uniform:1:300";
  rec.shape.lengths_seed = 4;
  rec.kernel = "fused";
  rec.cost = cost_of(rec.shape, KernelKind::fused);
  r.records.push_back(rec);
  Record dense;
  dense.shape = Shape{1, 8, 2, 300, 300, 64, true, DType::bf16};
  dense.kernel = "fused";
  dense.cost = cost_of(dense.shape, KernelKind::fused);
  r.records.push_back(dense);
  const nlohmann::json j = r;
  CHECK(j.at("schema_version") == "1.14");
  const auto& packed = j.at("records")[0];
  CHECK(packed.at("shape").at("seq_lens") == std::vector<int64_t>{300, 17, 1});
  CHECK(packed.at("cost").at("padded_flops") == rec.cost.padded_flops);
  CHECK_FALSE(j.at("records")[1].at("shape").contains("seq_lens"));
  CHECK_FALSE(j.at("records")[1].at("cost").contains("padded_flops"));
  const Results back = parse_results(j.dump(), "mem");
  CHECK(back.records[0].shape == rec.shape);
  CHECK(back.records[0].cost.padded_min_bytes == rec.cost.padded_min_bytes);
  CHECK(point_key(back.records[0]) == point_key(rec));
  CHECK_FALSE(back.records[1].shape.varlen());
  CHECK(back.records[1].cost.padded_flops == 0);
  // A 1.7 file has neither field: dense.
  nlohmann::json old = j;
  old["schema_version"] = "1.7";
  old["records"].erase(0);
  CHECK_FALSE(parse_results(old.dump(), "old").records[0].shape.varlen());
  // A length that is not an integer is refused.
  nlohmann::json bad = j;
  bad["records"][0]["shape"]["seq_lens"] = {300, "17", 1};
  CHECK_THROWS_AS(parse_results(bad.dump(), "bad"), InputError);
}

TEST_CASE("schema 1.9: hdim_v written only when it differs; older files read V as wide as K") {
  Results r;
  Record mla;
  mla.shape = Shape{1, 16, 16, 4096, 4096, 192, true, DType::bf16};
  mla.shape.hdim_v = 128;
  mla.kernel = "reference";
  mla.cost = cost_of(mla.shape, KernelKind::materialized);
  r.records.push_back(mla);
  Record same = mla;
  same.shape.hdim_v = 0;
  same.cost = cost_of(same.shape, KernelKind::materialized);
  r.records.push_back(same);
  const nlohmann::json j = r;
  CHECK(j.at("schema_version") == "1.14");
  CHECK(j.at("records")[0].at("shape").at("hdim_v") == 128);
  CHECK_FALSE(j.at("records")[1].at("shape").contains("hdim_v"));
  CHECK(j.at("records")[0].at("key") == "b1 h16/16 s4096x4096 d192v128 causal bf16 | reference");
  const Results back = parse_results(j.dump(), "mem");
  CHECK(back.records[0].shape == mla.shape);
  CHECK(back.records[0].cost.flops == mla.cost.flops);
  CHECK(point_key(back.records[0]) == point_key(mla));
  CHECK(point_key(back.records[1]) != point_key(back.records[0]));
  CHECK(back.records[1].shape.value_hdim() == 192);
  // A 1.8 file has no hdim_v: V and O as wide as Q and K.
  nlohmann::json old = j;
  old["schema_version"] = "1.8";
  old["records"].erase(0);
  const Results older = parse_results(old.dump(), "old");
  CHECK(older.context.schema_minor == 8);
  CHECK_FALSE(older.records[0].shape.distinct_hdim_v());
  CHECK(older.records[0].shape == same.shape);
  // An hdim_v no shape may have is refused.
  nlohmann::json bad = j;
  bad["records"][0]["shape"]["hdim_v"] = "128";
  CHECK_THROWS_AS(parse_results(bad.dump(), "bad"), InputError);
}

TEST_CASE("schema 1.12: a backward point's pass and gradient checks round-trip; absent grads read as none") {
  Results r;
  Record bwd;
  bwd.shape = Shape{1, 4, 2, 256, 256, 64, true, DType::bf16};
  bwd.shape.pass = Pass::bwd;
  bwd.kernel = "reference";
  bwd.cost = cost_of(bwd.shape, KernelKind::materialized);
  bwd.verification.checked = true;
  bwd.verification.passed = true;
  GradCheck dq;
  dq.rows_checked = 64;
  dq.rows_total = 1024;
  dq.max_abs_err = 1.5e-3;
  dq.mean_abs_err = 2.5e-4;
  dq.naive_max_abs_err = 1.25e-3;
  dq.tolerance = 4.5e-3;
  dq.passed = true;
  GradCheck dk = dq;
  dk.rows_total = 512;
  dk.max_abs_err = NAN;  // a poisoned element reads back as such
  dk.passed = false;
  bwd.verification.grads = {{"dq", dq}, {"dk", dk}, {"dv", dq}};
  r.records.push_back(bwd);
  Record fwd = bwd;
  fwd.shape.pass = Pass::fwd;
  fwd.verification.grads.clear();
  r.records.push_back(fwd);

  const nlohmann::json j = r;
  CHECK(j.at("schema_version") == "1.14");
  const nlohmann::json& grads = j.at("records")[0].at("verification").at("grads");
  CHECK(grads.size() == 3);
  CHECK(grads.at("dq").at("tolerance") == 4.5e-3);
  CHECK(grads.at("dk").at("max_abs_err") == "nan");
  CHECK_FALSE(j.at("records")[1].at("verification").contains("grads"));
  CHECK(j.at("records")[0].at("shape").at("pass") == "bwd");

  const Results back = parse_results(j.dump(), "mem");
  const Verification& v = back.records[0].verification;
  REQUIRE(v.grads.size() == 3);
  CHECK(v.grads.at("dq").rows_checked == 64);
  CHECK(v.grads.at("dq").naive_max_abs_err == 1.25e-3);
  CHECK(v.grads.at("dq").passed);
  CHECK(v.grads.at("dk").rows_total == 512);
  CHECK(std::isnan(v.grads.at("dk").max_abs_err));
  CHECK_FALSE(v.grads.at("dk").passed);
  CHECK(back.records[0].shape.pass == Pass::bwd);
  CHECK(back.records[1].verification.grads.empty());
  CHECK(point_key(back.records[0]) != point_key(back.records[1]));
  // A 1.11 file has no grads and no pass: a forward point.
  nlohmann::json old = j;
  old["schema_version"] = "1.11";
  old["records"].erase(0);
  CHECK(parse_results(old.dump(), "old").records[0].verification.grads.empty());
  // grads that are not an object of objects are refused.
  nlohmann::json bad = j;
  bad["records"][0]["verification"]["grads"] = {1, 2};
  CHECK_THROWS_AS(parse_results(bad.dump(), "bad"), InputError);
  bad["records"][0]["verification"]["grads"] = {{"dq", 3}};
  CHECK_THROWS_AS(parse_results(bad.dump(), "bad"), InputError);
}

TEST_CASE("schema 1.13: a quantized point's kv_dtype, kv_scale and verification.quantization round-trip") {
  Results r;
  Record q;
  q.shape = Shape{64, 32, 8, 1, 8192, 128, true, DType::bf16};
  q.shape.page_size = 16;
  q.shape.kv_dtype = KvDType::fp8_e4m3;
  q.shape.kv_scale = KvScale::head;
  q.kernel = "reference";
  q.cost = cost_of(q.shape, KernelKind::materialized);
  q.verification.checked = true;
  q.verification.passed = true;
  q.verification.o_max_abs_err = 1.5e-3;
  q.verification.quant.checked = true;
  q.verification.quant.o_max_abs_err = 2.5e-2;
  q.verification.quant.o_mean_abs_err = 3.0e-3;
  q.verification.quant.o_max_rel_err = 4.0e-2;
  r.records.push_back(q);
  Record plain = q;
  plain.shape.kv_dtype = KvDType::none;
  plain.shape.kv_scale = KvScale::tensor;
  plain.verification.quant = QuantCost{};
  r.records.push_back(plain);

  const nlohmann::json j = r;
  CHECK(j.at("schema_version") == "1.14");
  const nlohmann::json& rec = j.at("records")[0];
  CHECK(rec.at("shape").at("kv_dtype") == "fp8_e4m3");
  CHECK(rec.at("shape").at("kv_scale") == "head");
  CHECK(rec.at("key") == "b64 h32/8 s1x8192 d128 causal bf16 kv-fp8_e4m3/head page16 | reference");
  const nlohmann::json& quant = rec.at("verification").at("quantization");
  CHECK(quant.at("o_max_abs_err") == 2.5e-2);
  CHECK(quant.at("o_mean_abs_err") == 3.0e-3);
  CHECK(quant.at("o_max_rel_err") == 4.0e-2);
  CHECK_FALSE(quant.contains("checked"));
  const nlohmann::json& unquantized = j.at("records")[1];
  CHECK_FALSE(unquantized.at("shape").contains("kv_dtype"));
  CHECK_FALSE(unquantized.at("shape").contains("kv_scale"));
  CHECK_FALSE(unquantized.at("verification").contains("quantization"));

  const Results back = parse_results(j.dump(), "mem");
  CHECK(back.records[0].shape == q.shape);
  const QuantCost& c = back.records[0].verification.quant;
  CHECK(c.checked);
  CHECK(c.o_max_abs_err == 2.5e-2);
  CHECK(c.o_mean_abs_err == 3.0e-3);
  CHECK(c.o_max_rel_err == 4.0e-2);
  CHECK_FALSE(back.records[1].verification.quant.checked);
  CHECK(point_key(back.records[0]) != point_key(back.records[1]));
  // A 1.12 file has neither: K and V in the dtype, nothing to report.
  nlohmann::json old = j;
  old["schema_version"] = "1.12";
  old["records"].erase(0);
  const Results older = parse_results(old.dump(), "old");
  CHECK_FALSE(older.records[0].shape.quantized_kv());
  CHECK_FALSE(older.records[0].verification.quant.checked);
  // quantization that is not an object is refused.
  nlohmann::json bad = j;
  bad["records"][0]["verification"]["quantization"] = 3;
  CHECK_THROWS_AS(parse_results(bad.dump(), "bad"), InputError);
}

TEST_CASE("schema 1.14: an fp8 prefill point's dtype and o_max_bound_ratio round-trip; a 1.13 file still loads") {
  Results r;
  Record f;
  f.shape = Shape{2, 16, 16, 4096, 4096, 128, true, DType::fp8_e4m3};
  imply_fp8_kv_format(f.shape);
  f.kernel = "reference";
  f.cost = cost_of(f.shape, KernelKind::materialized);
  f.verification.checked = true;
  f.verification.passed = true;
  f.verification.o_max_abs_err = 2.0e-3;
  f.verification.tolerance = 4.0e-2;
  f.verification.o_max_bound_ratio = 0.125;
  f.verification.quant.checked = true;
  f.verification.quant.o_max_abs_err = 3.0e-2;
  r.records.push_back(f);
  Record twin = f;
  twin.shape.dtype = DType::bf16;
  twin.shape.kv_dtype = KvDType::none;
  twin.verification.o_max_bound_ratio.reset();
  twin.verification.quant = QuantCost{};
  r.records.push_back(twin);

  const nlohmann::json j = r;
  CHECK(j.at("schema_version") == "1.14");
  const nlohmann::json& rec = j.at("records")[0];
  CHECK(rec.at("shape").at("dtype") == "fp8_e4m3");
  CHECK_FALSE(rec.at("shape").contains("kv_dtype"));  // implied by the dtype
  CHECK_FALSE(rec.at("shape").contains("kv_scale"));
  CHECK(rec.at("key") == "b2 h16/16 s4096x4096 d128 causal fp8_e4m3 | reference");
  CHECK(rec.at("verification").at("o_max_bound_ratio") == 0.125);
  CHECK_FALSE(j.at("records")[1].at("verification").contains("o_max_bound_ratio"));

  const Results back = parse_results(j.dump(), "mem");
  CHECK(back.records[0].shape == f.shape);
  CHECK(back.records[0].shape.kv_dtype == KvDType::fp8_e4m3);
  REQUIRE(back.records[0].verification.o_max_bound_ratio.has_value());
  CHECK(*back.records[0].verification.o_max_bound_ratio == 0.125);
  CHECK_FALSE(back.records[1].verification.o_max_bound_ratio.has_value());
  CHECK(point_key(back.records[0]) != point_key(back.records[1]));

  // A 1.13 file (no fp8 point, no bound ratio) reads as it did.
  nlohmann::json old = j;
  old["schema_version"] = "1.13";
  old["records"].erase(0);
  const Results older = parse_results(old.dump(), "old");
  REQUIRE(older.records.size() == 1);
  CHECK(older.records[0].shape == twin.shape);
  CHECK_FALSE(older.records[0].verification.o_max_bound_ratio.has_value());
  // A bound ratio that is not a number, and an fp8 shape naming another KV format, are refused.
  nlohmann::json bad = j;
  bad["records"][0]["verification"]["o_max_bound_ratio"] = "high";
  CHECK_THROWS_AS(parse_results(bad.dump(), "bad"), InputError);
  bad = j;
  bad["records"][0]["shape"]["kv_dtype"] = "int8";
  CHECK_THROWS_AS(parse_results(bad.dump(), "bad"), InputError);
}

TEST_CASE("schema 1.14: the ceilings' fp8 roof and compute probes round-trip; a 1.13 file has neither") {
  Results r;
  Ceilings& c = r.context.ceilings;
  c.peak_bw_bytes_per_s = 4.4e12;
  c.peak_flops_per_s = {{"bf16", 8e14}, {"fp16", 8e14}, {"fp32", 5.5e13}, {"fp8_e4m3", 1.4e15}};
  c.flops_per_s_per_mhz = {{"bf16", 8e14 / 1755}, {"fp8_e4m3", 1.4e15 / 1600}};
  c.probe_sm_mhz = {{"bf16", 1755}, {"fp8_e4m3", 1600}};
  c.compute_probes["gemm_fp8_e4m3"] = {1.4e15, 1600, ""};
  c.compute_probes["mma_fp8_e4m3"] = {0, 0, "sm_80 has no fp8 tensor cores (sm_89 and later)"};
  const nlohmann::json j = r;
  CHECK(j.at("schema_version") == "1.14");
  const nlohmann::json& probes = j.at("context").at("ceilings").at("compute_probes");
  CHECK(probes.at("gemm_fp8_e4m3").at("flops_per_s") == 1.4e15);
  CHECK(probes.at("mma_fp8_e4m3").at("not_run") == "sm_80 has no fp8 tensor cores (sm_89 and later)");
  const Results back = parse_results(j.dump(), "mem");
  const Ceilings& b = back.context.ceilings;
  CHECK(b.peak_flops_per_s == c.peak_flops_per_s);
  CHECK(b.flops_per_s_per_mhz == c.flops_per_s_per_mhz);
  CHECK(b.probe_sm_mhz == c.probe_sm_mhz);
  REQUIRE(b.compute_probes.size() == 2);
  CHECK(b.compute_probes.at("gemm_fp8_e4m3").sm_mhz == 1600);
  CHECK(b.compute_probes.at("mma_fp8_e4m3").not_run == c.compute_probes.at("mma_fp8_e4m3").not_run);
  CHECK(peak_flops_for(b, DType::fp8_e4m3) == 1.4e15);

  // Ceilings without compute probes (datasheet, CPU) write none.
  Results plain;
  plain.context.ceilings.peak_flops_per_s["bf16"] = 8e14;
  CHECK_FALSE(nlohmann::json(plain).at("context").at("ceilings").contains("compute_probes"));

  // What attnprof wrote at 1.13 for an H200: no fp8 figure, no compute probes. It loads; an fp8 point
  // of it has no roof (and does not borrow bf16's), its bf16 points the one they had.
  const Results old = parse_results(
      R"({"schema_version": "1.13", "context": {"ceilings": {"peak_bw_bytes_per_s": 4.577e12,)"
      R"( "peak_flops_per_s": {"bf16": 8.006e14, "fp16": 8.006e14, "fp32": 5.55e13},)"
      R"( "datasheet_flops_per_s": {"bf16": 9.894e14, "fp16": 9.894e14, "fp32": 6.7e13},)"
      R"( "flops_per_s_per_mhz": {"bf16": 4.958e11, "fp16": 4.958e11, "fp32": 2.83e10},)"
      R"( "probe_sm_mhz": {"bf16": 1614.7, "fp16": 1614.7, "fp32": 1961.5}, "source": "measured+datasheet"}},)"
      R"( "records": []})",
      "old.json");
  CHECK(old.context.schema_minor == 13);
  CHECK(old.context.ceilings.compute_probes.empty());
  CHECK(peak_flops_for(old.context.ceilings, DType::bf16) == 8.006e14);
  CHECK(peak_flops_for(old.context.ceilings, DType::fp8_e4m3) == 0);
  CHECK_THAT(missing_roof(old.context.ceilings, DType::fp8_e4m3), Catch::StartsWith("no fp8_e4m3 roof"));

  // A malformed probes field is one line naming it.
  CHECK_THROWS_WITH(parse_results(R"({"schema_version": "1.14", "context": {"ceilings": {"compute_probes": 3}},)"
                                  R"( "records": []})",
                                  "bad.json"),
                    Catch::Contains("'compute_probes' is not an object"));
  CHECK_THROWS_WITH(parse_results(R"({"schema_version": "1.14", "context": {"ceilings": {"compute_probes":)"
                                  R"( {"gemm_fp8_e4m3": [1]}}}, "records": []})",
                                  "bad.json"),
                    Catch::Contains("compute_probes 'gemm_fp8_e4m3' is not an object"));
}
