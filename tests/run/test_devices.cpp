// run/devices.cpp: `attnprof devices` lists the CPU backend as device 0 with its ceilings, refuses an
// unknown backend, and writes the table and the JSON from a device list.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "run/devices.hpp"

namespace run = attnprof::run;

namespace {

run::DeviceList h200_list() {
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

TEST_CASE("devices: the table, one line per device with its figures, notices first") {
  std::ostringstream out;
  run::write_devices_table(h200_list(), out);
  const std::string table = out.str();
  INFO(table);
  CHECK(table.rfind("notice: a notice\n", 0) == 0);
  const size_t row = table.find("\n1   cuda  NVIDIA H200");
  REQUIRE(row != std::string::npos);
  const std::string line = table.substr(row + 1, table.find('\n', row + 1) - row - 1);
  for (const char* cell : {" 9.0 ", " 132 ", "141.0 GiB", "60 MiB", "1980", "4400", "750.0", "measured"})
    CHECK(line.find(cell) != std::string::npos);
  CHECK(line.find(" - ") != std::string::npos);  // no fp16 or fp32 figure
}

TEST_CASE("devices: the JSON holds every device with its info and ceilings, and the notices") {
  std::ostringstream out;
  run::write_devices_json(h200_list(), out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  REQUIRE(j.at("devices").size() == 1);
  const nlohmann::json& d = j.at("devices")[0];
  CHECK(d.at("id") == 1);
  CHECK(d.at("backend") == "cuda");
  CHECK(d.at("device").at("name") == "NVIDIA H200");
  CHECK(d.at("ceilings").at("peak_bw_bytes_per_s") == 4.4e12);
  CHECK(j.at("notices") == nlohmann::json({"a notice"}));
}

TEST_CASE("devices: the CPU backend is device 0 with measured ceilings; an unknown backend is refused") {
  CHECK_THROWS_WITH(run::list_devices("tpu", false), Catch::Contains("unknown backend 'tpu'"));
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / ("attnprof-devices-test-" + std::to_string(::getpid()));
  ::setenv("ATTNPROF_CACHE_DIR", cache.c_str(), 1);
  const run::DeviceList list = run::list_devices("cpu", false);
  REQUIRE(list.devices.size() == 1);
  CHECK(list.devices[0].id == 0);
  CHECK(list.devices[0].backend == "cpu");
  CHECK(list.devices[0].info.name.rfind("CPU: ", 0) == 0);
  CHECK(list.devices[0].ceilings.peak_bw_bytes_per_s > 0);
  std::filesystem::remove_all(cache);
  ::unsetenv("ATTNPROF_CACHE_DIR");
}
