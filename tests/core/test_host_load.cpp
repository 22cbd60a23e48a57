#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "core/host_load.hpp"
#include "core/results.hpp"

using namespace attnprof::core;

TEST_CASE("host load: busy only when the load average exceeds the cores") {
  CHECK(busy({3.1, 2}));
  CHECK(busy({2.01, 2}));
  CHECK_FALSE(busy({2.0, 2}));  // as many runnable tasks as cores: every one has a core
  CHECK_FALSE(busy({0.3, 2}));
  CHECK_FALSE(busy({5.0, 0}));  // cores unknown: no claim
}

TEST_CASE("host load: the sweep's warning names the load and the cores") {
  CHECK(busy_message({3.1, 2}) == "the machine is busy: load 3.1 on 2 cores; timings will vary");
  CHECK(busy_message({1.46, 1}) == "the machine is busy: load 1.5 on 1 core; timings will vary");
}

TEST_CASE("host load: compare and history warn on a run whose recorded load exceeded its cores") {
  Context c;
  CHECK_FALSE(recorded_busy_warning(c, "old.json"));  // no load recorded (files before schema 1.11)
  c.host_load = HostLoad{1.5, 2};
  CHECK_FALSE(recorded_busy_warning(c, "calm.json"));
  c.host_load = HostLoad{3.1, 2};
  const auto w = recorded_busy_warning(c, "base.json");
  REQUIRE(w);
  CHECK(*w == "base.json was measured on a busy machine: load 3.1 on 2 cores; its timings vary with the machine's "
              "other work");
  // A label is printed as one line: a newline in a path cannot forge another line.
  const auto forged = recorded_busy_warning(c, "a\nattnprof: ok");
  REQUIRE(forged);
  CHECK(forged->find('\n') == std::string::npos);
}

TEST_CASE("host load: read from the machine") {
  const auto load = read_host_load();
  REQUIRE(load);  // Linux has getloadavg and sysconf
  CHECK(load->cores >= 1);
  CHECK(load->load_avg_1m >= 0);
}

TEST_CASE("host load: written in the context, read back; absent or null reads as none") {
  Results r;
  r.context.host_load = HostLoad{3.25, 16};
  const nlohmann::json j = r;
  REQUIRE(j.at("context").contains("host_load"));
  CHECK(j.at("context").at("host_load") == nlohmann::json({{"load_avg_1m", 3.25}, {"cores", 16}}));
  const Results back = parse_results(j.dump(), "with-load.json");
  REQUIRE(back.context.host_load);
  CHECK(back.context.host_load->load_avg_1m == 3.25);
  CHECK(back.context.host_load->cores == 16);

  // Not recorded: left out of the file (a file before 1.11, read and written again, keeps its keys).
  CHECK_FALSE(nlohmann::json(Results{}).at("context").contains("host_load"));

  nlohmann::json old = j;
  old["schema_version"] = "1.10";
  old["context"].erase("host_load");
  CHECK_FALSE(parse_results(old.dump(), "old.json").context.host_load);
  old["context"]["host_load"] = nullptr;
  CHECK_FALSE(parse_results(old.dump(), "null.json").context.host_load);
  old["context"]["host_load"] = {{"load_avg_1m", "x"}, {"cores", 2}};
  CHECK_THROWS(parse_results(old.dump(), "bad.json"));
}
