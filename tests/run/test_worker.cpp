// run/worker.hpp: the protocol's first line (WorkerConfig, with the MeasureOptions inside it) reads
// back what it wrote, and writes the JSON the workers have always read.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "measure/backend.hpp"
#include "run/worker.hpp"

using namespace attnprof;
using nlohmann::json;

namespace {

measure::MeasureOptions odd_options() {
  measure::MeasureOptions o;
  o.warmup_calls = 5;
  o.warmup_seconds = 0.25;
  o.min_samples = 12;
  o.max_samples = 900;
  o.target_rel_ci = 0.002;
  o.min_seconds_per_point = 0.5;
  o.max_seconds_per_point = 2.5;
  o.cold_l2 = false;
  o.counters = false;
  o.counter_batch = 16;
  o.extra_metrics = {"lts__t_bytes.sum"};
  o.verify = false;
  o.stalls = true;
  o.timeline = true;
  o.verify_rows = 64;
  o.seed = 1234567890123ULL;
  o.point_timeout_s = 30;
  return o;
}

// The JSON of odd_options() as the hand-written writer spelled it before the NLOHMANN macro: one key
// per field, under the field's own name.
const char* const kOddOptionsJson =
    R"({"cold_l2":false,"counter_batch":16,"counters":false,"extra_metrics":["lts__t_bytes.sum"],)"
    R"("max_samples":900,"max_seconds_per_point":2.5,"min_samples":12,"min_seconds_per_point":0.5,)"
    R"("point_timeout_s":30.0,"seed":1234567890123,"stalls":true,"target_rel_ci":0.002,"timeline":true,)"
    R"("verify":false,)"
    R"("verify_rows":64,)"
    R"("warmup_calls":5,"warmup_seconds":0.25})";

}  // namespace

TEST_CASE("MeasureOptions: JSON as before, and back to equal options") {
  const json j = odd_options();
  CHECK(j.dump() == kOddOptionsJson);
  const auto back = json::parse(kOddOptionsJson).get<measure::MeasureOptions>();
  CHECK(json(back) == j);
  CHECK(back.seed == 1234567890123ULL);
  CHECK(back.extra_metrics == std::vector<std::string>{"lts__t_bytes.sum"});
  CHECK_FALSE(back.cold_l2);
}

TEST_CASE("MeasureOptions: every field is required on read") {
  json j = odd_options();
  j.erase("verify_rows");
  CHECK_THROWS_AS(j.get<measure::MeasureOptions>(), json::out_of_range);
}

TEST_CASE("WorkerConfig: the first protocol line, written and read back") {
  // A path is bytes: one that is not UTF-8 travels as hex and comes back the same.
  const std::string odd_path = "/opt/odd\xff\x1b.so";
  const run::WorkerConfig config{"cpu", 1, odd_options(), {{"/opt/a.so", std::string(64, 'a'), {"a"}},
                                                             {odd_path, std::string(64, 'b'), {"b1", "b2"}}}, true};
  const json j = config;
  CHECK(j.dump() == std::string(R"({"backend":"cpu","device":1,"options":)") + kOddOptionsJson +
                        R"(,"plugins":[{"kernels":["a"],"path_hex":"2f6f70742f612e736f","sha256":")" +
                        std::string(64, 'a') +
                        R"("},{"kernels":["b1","b2"],"path_hex":"2f6f70742f6f6464ff1b2e736f","sha256":")" +
                        std::string(64, 'b') + R"("}],"settle":true})");
  const auto back = json::parse(j.dump()).get<run::WorkerConfig>();
  CHECK(back.backend == "cpu");
  CHECK(back.device == 1);
  REQUIRE(back.plugins.size() == 2);
  CHECK(back.plugins[1].path == odd_path);
  CHECK(back.plugins[1].sha256 == std::string(64, 'b'));
  CHECK(back.plugins[1].kernels == std::vector<std::string>{"b1", "b2"});
  CHECK(back.settle);
  CHECK(json(back.options) == json(config.options));
  json missing = j;
  missing.erase("backend");
  CHECK_THROWS_AS(missing.get<run::WorkerConfig>(), json::out_of_range);
  json bad_hex = j;
  bad_hex["plugins"][0]["path_hex"] = "2f6";
  CHECK_THROWS(bad_hex.get<run::WorkerConfig>());
}
