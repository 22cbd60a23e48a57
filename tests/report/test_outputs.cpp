// The outputs of `explain`, `calibrate` and `devices` (src/report/outputs.cpp), golden
// (report/golden.hpp): each rendered from a committed fixture and compared with a committed file in
// tests/report/golden/.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/calibration.hpp"
#include "core/diagnosis.hpp"
#include "core/explain.hpp"
#include "core/results.hpp"
#include "core/sweep_spec.hpp"
#include "report/golden.hpp"
#include "report/outputs.hpp"

using namespace attnprof;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(ATTNPROF_SOURCE_DIR) / "tests/report";

// `attnprof devices --json` read back: the fixture of the devices table.
run::DeviceList devices_from_json(const nlohmann::json& j) {
  run::DeviceList list;
  for (const auto& d : j.at("devices"))
    list.devices.push_back({.id = d.at("id").get<int>(),
                            .backend = d.at("backend").get<std::string>(),
                            .info = d.at("device").get<core::DeviceInfo>(),
                            .ceilings = d.at("ceilings").get<core::Ceilings>()});
  list.notices = j.at("notices").get<std::vector<std::string>>();
  return list;
}

}  // namespace

TEST_CASE("golden: explain, as a table and as JSON", "[golden]") {
  const core::Explanation e =
      core::explain("h200", core::parse_shape("batch=8,heads=16,kv_heads=4,seq=4096,hdim=128,causal=1,dtype=bf16"));
  golden::check(kDir / "golden/explain_h200.terminal", report::render_explanation(e));
  golden::check(kDir / "golden/explain_h200.json", report::render_explanation_json(e));
}

TEST_CASE("golden: calibrate's table of the probes' verdicts", "[golden]") {
  core::Results results = core::read_results((kDir / "fixtures/calibration_results.json").string());
  const auto rows = core::check_calibration(results);
  const std::string table = report::render_calibration(rows);
  golden::check(kDir / "golden/calibration.terminal", table);
  CHECK_THAT(table, Catch::Contains("DIFFERS"));
  CHECK_THAT(table, Catch::Contains("5 of 7 probes diagnosed as expected"));
}

TEST_CASE("calibrate's table names the memory level when only the level differs", "[outputs]") {
  core::CalibrationRow row;
  row.probe = "l2-copy";
  row.expected = row.got = core::kVerdictMemory;
  row.expected_level = core::MemoryLevel::l2;
  row.got_level = core::MemoryLevel::dram;
  const std::string table = report::render_calibration({row});
  CHECK_THAT(table, Catch::Contains("DIFFERS (memory level dram, expected l2)"));
  CHECK_THAT(table, Catch::Contains("0 of 1 probes diagnosed as expected"));
}

TEST_CASE("golden: devices, as a table and as JSON; the JSON reads back as its own fixture", "[golden]") {
  const run::DeviceList list =
      devices_from_json(nlohmann::json::parse(golden::read(kDir / "fixtures/devices.json")));
  golden::check(kDir / "golden/devices.terminal", report::render_devices(list));
  const std::string json = report::render_devices_json(list);
  golden::check(kDir / "golden/devices.json", json);
  CHECK(report::render_devices_json(devices_from_json(nlohmann::json::parse(json))) == json);
}

TEST_CASE("golden: the CPU device in its own words: cores, LLC, its clock, DRAM GB/s, GFLOP/s", "[golden]") {
  const run::DeviceList list =
      devices_from_json(nlohmann::json::parse(golden::read(kDir / "fixtures/devices_cpu.json")));
  const std::string table = report::render_devices(list);
  golden::check(kDir / "golden/devices_cpu.terminal", table);
  for (const char* gpu_word : {"SMs", "SM MHz", " L2 ", " cc ", "TF"}) {
    INFO(gpu_word);
    CHECK(table.find(gpu_word) == std::string::npos);
  }
  // A list of both kinds: each under its own header.
  run::DeviceList both = devices_from_json(nlohmann::json::parse(golden::read(kDir / "fixtures/devices.json")));
  both.devices.push_back(list.devices.front());
  const std::string mixed = report::render_devices(both);
  CHECK_THAT(mixed, Catch::Contains(" SMs ") && Catch::Contains(" cores ") && Catch::Contains("\n\nid "));
}

namespace {

run::DeviceList h200_devices() {
  run::DeviceEntry e;
  e.id = 1;
  e.backend = "cuda";
  e.info.name = "NVIDIA H200";
  e.info.compute_capability = "9.0";
  e.info.sm_count = 132;
  e.info.memory_bytes = int64_t{141} << 30;
  e.info.l2_bytes = int64_t{60} << 20;
  e.info.sm_clock_max_mhz = 1980;
  e.ceilings.source = "measured";
  e.ceilings.peak_bw_bytes_per_s = 4.4e12;
  e.ceilings.peak_flops_per_s["bf16"] = 7.5e14;
  run::DeviceList list;
  list.devices = {e};
  list.notices = {"a notice"};
  return list;
}

}  // namespace

TEST_CASE("devices' table, one line per device with its figures, notices first") {
  const std::string table = report::render_devices(h200_devices());
  INFO(table);
  CHECK(table.rfind("notice: a notice\n", 0) == 0);
  const size_t row = table.find("\n1   cuda  NVIDIA H200");
  REQUIRE(row != std::string::npos);
  const std::string line = table.substr(row + 1, table.find('\n', row + 1) - row - 1);
  for (const char* cell : {" 9.0 ", " 132 ", "141.0 GiB", "60 MiB", "1980", "4400", "750.0", "measured"})
    CHECK(line.find(cell) != std::string::npos);
  CHECK(line.find(" - ") != std::string::npos);  // no fp16 or fp32 figure
}

TEST_CASE("devices' JSON holds every device with its info and ceilings, and the notices") {
  const nlohmann::json j = nlohmann::json::parse(report::render_devices_json(h200_devices()));
  REQUIRE(j.at("devices").size() == 1);
  const nlohmann::json& d = j.at("devices")[0];
  CHECK(d.at("id") == 1);
  CHECK(d.at("backend") == "cuda");
  CHECK(d.at("device").at("name") == "NVIDIA H200");
  CHECK(d.at("ceilings").at("peak_bw_bytes_per_s") == 4.4e12);
  CHECK(j.at("notices") == nlohmann::json({"a notice"}));
}
