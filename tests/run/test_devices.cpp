// run/devices.cpp: `attnprof devices` lists the CPU backend as device 0 with its ceilings and refuses an
// unknown backend (the table and the JSON are report::render_devices, tested in tests/report).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "core/errors.hpp"
#include "run/devices.hpp"

namespace run = attnprof::run;

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
