// src/cli/validators.hpp: the CLI11 validators refuse bad values while parsing (exit 2 in main.cpp).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli/validators.hpp"

using namespace attnprof::cli;

namespace {

// The validator's message for `value`: empty when it is accepted.
std::string check(const CLI::Validator& validator, std::string value) { return validator(value); }

}  // namespace

TEST_CASE("kDeviceId: an id in range or all") {
  CHECK(check(kDeviceId, "0").empty());
  CHECK(check(kDeviceId, "7").empty());
  CHECK(check(kDeviceId, "all").empty());
  CHECK(check(kDeviceId, std::to_string(kMaxDeviceId)).empty());
  for (const char* bad : {"", "x", "-1", "1.5", "0x1", "ALL", "99999", "1 ", "010x", "+1"}) {
    INFO(bad);
    CHECK_FALSE(check(kDeviceId, bad).empty());
  }
}

TEST_CASE("kDeviceList: every entry a device id, none empty") {
  for (const char* good : {"0", "all", "0,2", "0,2,all", "1,1023"}) {
    INFO(good);
    CHECK(check(kDeviceList, good).empty());
  }
  // CLI11's delimiter would drop the empty entries of "0," and "0,,1" and let them through.
  for (const char* bad : {"", ",", "0,", ",0", "0,,1", "0,x", "0, 1", "x"}) {
    INFO(bad);
    CHECK_FALSE(check(kDeviceList, bad).empty());
  }
  CHECK(check(kDeviceList, "0,,1").find("empty entry") != std::string::npos);
  CHECK(device_entries("0,,1") == std::vector<std::string>{"0", "", "1"});
  CHECK(device_entries("0,") == std::vector<std::string>{"0", ""});
}

TEST_CASE("kDeviceList on an option refuses a list with an empty entry while parsing") {
  CLI::App app;
  std::vector<std::string> devices;
  app.add_option("--devices", devices)->allow_extra_args(false)->check(kDeviceList);
  app.parse("--devices 0,2,all", false);  // the combination rule is the sweep command's (cli/sweep.cpp)
  CHECK(devices == std::vector<std::string>{"0,2,all"});
  CHECK_THROWS_AS(app.parse("--devices 0,x", false), CLI::ValidationError);
  CHECK_THROWS_AS(app.parse("--devices 0,,1", false), CLI::ValidationError);
  CHECK_THROWS_AS(app.parse("--devices 0,", false), CLI::ValidationError);
}

TEST_CASE("kOpenUnitInterval and kGateThreshold") {
  CHECK(check(kOpenUnitInterval, "0.01").empty());
  CHECK(check(kOpenUnitInterval, "0.95").empty());
  for (const char* bad : {"0", "1", "-0.5", "nan", "inf", "x"}) {
    INFO(bad);
    CHECK_FALSE(check(kOpenUnitInterval, bad).empty());
  }
  CHECK(check(kGateThreshold, "0").empty());
  CHECK(check(kGateThreshold, "0.03").empty());
  for (const char* bad : {"-0.01", "10", "nan", "x"}) {
    INFO(bad);
    CHECK_FALSE(check(kGateThreshold, bad).empty());
  }
}

TEST_CASE("kFinite refuses what CLI11's ranges let through") {
  CHECK(check(kFinite, "1e3").empty());
  CHECK_FALSE(check(kFinite, "nan").empty());
  CHECK_FALSE(check(kFinite, "inf").empty());
}
