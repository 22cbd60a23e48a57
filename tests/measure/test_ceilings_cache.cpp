// measure/ceilings_cache.cpp: cache keys from device names, a round trip through the cache directory,
// corrupt or implausible files read as no entry.
#include <filesystem>
#include <fstream>
#include <string>

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

TEST_CASE("ceilings cache: the fp8 roof and the probes round-trip; an entry from before them is stale",
          "[ceilings-cache]") {
  const fs::path dir = scratch_cache_dir();
  attnprof::core::Ceilings c;
  c.source = "measured+datasheet";
  c.peak_bw_bytes_per_s = 4.58e12;
  c.peak_flops_per_s = {{"bf16", 8e14}, {"fp16", 8e14}, {"fp32", 5.5e13}, {"fp8_e4m3", 1.4e15}};
  c.flops_per_s_per_mhz = {{"fp8_e4m3", 1.4e15 / 1600}};
  c.compute_probes["gemm_fp8_e4m3"] = {1.4e15, 1600, ""};
  c.compute_probes["mma_fp8_e4m3"] = {5.6e14, 1900, ""};
  REQUIRE(m::save_ceilings("nvidia-h200", c));
  const auto back = m::load_ceilings("nvidia-h200");
  REQUIRE(back.has_value());
  CHECK(back->peak_flops_per_s.at("fp8_e4m3") == 1.4e15);
  CHECK(back->flops_per_s_per_mhz.at("fp8_e4m3") == 1.4e15 / 1600);
  CHECK(back->compute_probes.at("mma_fp8_e4m3").sm_mhz == 1900);

  // What the previous attnprof cached for an H200 (format 4): valid ceilings without an fp8 roof. It is
  // measured again rather than used, so that fp8 points get their roof.
  const auto entry = [](int format) {
    return R"({"format": )" + std::to_string(format) +
           R"(, "key": "nvidia-h200", "ceilings": {"peak_bw_bytes_per_s": 4.577e12,)"
           R"( "peak_flops_per_s": {"bf16": 8.006e14, "fp16": 8.006e14, "fp32": 5.55e13},)"
           R"( "flops_per_s_per_mhz": {"bf16": 4.958e11}, "probe_sm_mhz": {"bf16": 1614.7},)"
           R"( "source": "measured+datasheet"}})";
  };
  std::ofstream(dir / "nvidia-h200.json") << entry(4);
  CHECK_FALSE(m::load_ceilings("nvidia-h200").has_value());
  // Only the format number makes it stale: the same body at this attnprof's format reads.
  std::ofstream(dir / "nvidia-h200.json") << entry(m::kCeilingsCacheFormat);
  CHECK(m::load_ceilings("nvidia-h200").has_value());
  fs::remove_all(dir);
}
