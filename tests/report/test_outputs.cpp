// The outputs of `explain`, `calibrate` and `devices` (src/report/outputs.cpp), golden
// (report/golden.hpp): each rendered from a committed fixture and compared with a committed file in
// tests/report/golden/.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/calibration.hpp"
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
