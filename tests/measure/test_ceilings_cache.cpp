// measure/ceilings_cache.cpp: cache keys from device names, a round trip through the cache directory,
// corrupt or implausible files read as no entry.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "measure/ceilings_cache.hpp"
#include "measure/measure_test_support.hpp"

namespace m = attnprof::measure;
namespace fs = std::filesystem;
using attnprof::measure_test::scratch_cache_dir;

TEST_CASE("ceilings cache: keys, round trip, corrupt files", "[ceilings-cache]") {
  const fs::path dir = scratch_cache_dir();
  CHECK(m::ceilings_cache_dir() == dir.string());
  CHECK(m::device_cache_key("NVIDIA H200") == "nvidia-h200");
  CHECK(m::device_cache_key("CPU: AMD EPYC 9654 96-Core Processor t2") == "cpu-amd-epyc-9654-96-core-processor-t2");
  CHECK(m::device_cache_key("../..") == "device");

  CHECK_FALSE(m::load_ceilings("nothing-here").has_value());
  attnprof::core::Ceilings c;
  c.source = "measured";
  c.peak_bw_bytes_per_s = 1.5e11;
  c.peak_flops_per_s["fp32"] = 2e12;
  REQUIRE(m::save_ceilings("dev", c));
  const auto back = m::load_ceilings("dev");
  REQUIRE(back.has_value());
  CHECK(back->peak_bw_bytes_per_s == c.peak_bw_bytes_per_s);
  CHECK(back->peak_flops_per_s.at("fp32") == 2e12);

  std::ofstream(dir / "dev.json") << "{ not json";
  CHECK_FALSE(m::load_ceilings("dev").has_value());
  std::ofstream(dir / "dev.json") << R"({"format": 1, "key": "dev", "ceilings": {"peak_bw_bytes_per_s": 0}})";
  CHECK_FALSE(m::load_ceilings("dev").has_value());
  fs::remove_all(dir);
}
