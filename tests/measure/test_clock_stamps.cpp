// The SM clock from two sets of per-SM stamps (src/measure/clock_stamps.hpp).
#include "measure/clock_stamps.hpp"

#include <vector>

#include <catch2/catch.hpp>

using attnprof::measure::clock_mhz_between;
using attnprof::measure::ClockStamp;

namespace {

// A stamp of SM `sm` at `ns` on an SM whose counter ran at `mhz` since time 0.
ClockStamp at(int sm, uint64_t ns, double mhz) {
  return ClockStamp{static_cast<int64_t>(static_cast<double>(ns) * mhz / 1e3), ns, sm, 0};
}

}  // namespace

TEST_CASE("the clock is cycles over nanoseconds on the same SM, the median over SMs") {
  // Three SMs at 1800 MHz over 1 ms; SM counters start at different values (they are not synchronised).
  std::vector<ClockStamp> before{at(0, 1'000'000, 1800), at(1, 1'000'500, 1800), at(2, 1'001'000, 1800)};
  std::vector<ClockStamp> after{at(0, 2'000'000, 1800), at(1, 2'000'200, 1800), at(2, 2'000'900, 1800)};
  before[1].cycles += 123'456'789;
  after[1].cycles += 123'456'789;
  CHECK(clock_mhz_between(before, after) == Approx(1800).epsilon(1e-6));

  // One SM reading far off (e.g. its counter gated while idle) does not move the median.
  after[2].cycles = before[2].cycles + 1000;
  CHECK(clock_mhz_between(before, after) == Approx(1800).epsilon(1e-6));
}

TEST_CASE("stamps are matched by SM id, not by slot") {
  const std::vector<ClockStamp> before{at(5, 0, 1500), at(7, 0, 1900)};
  const std::vector<ClockStamp> after{at(7, 500'000, 1900), at(9, 500'000, 1000)};
  CHECK(clock_mhz_between(before, after) == Approx(1900).epsilon(1e-6));
}

TEST_CASE("an SM stamped twice uses the widest interval it saw") {
  const std::vector<ClockStamp> before{at(3, 100'000, 1700), at(3, 110'000, 1700)};
  const std::vector<ClockStamp> after{at(3, 190'000, 1700), at(3, 200'000, 1700)};
  CHECK(clock_mhz_between(before, after) == Approx(1700).epsilon(1e-6));
}

TEST_CASE("no reading without a common SM, from unwritten slots, or over too short an interval") {
  CHECK(clock_mhz_between({}, {}) == 0);
  CHECK(clock_mhz_between({at(1, 0, 1800)}, {at(2, 1'000'000, 1800)}) == 0);
  ClockStamp unwritten{};  // sm -1: the fill value of a slot no block wrote
  CHECK(clock_mhz_between({unwritten}, {unwritten}) == 0);
  CHECK(clock_mhz_between({at(1, 0, 1800)}, {at(1, attnprof::measure::kMinClockIntervalNs - 1, 1800)}) == 0);
  CHECK(clock_mhz_between({at(1, 0, 1800)}, {at(1, attnprof::measure::kMinClockIntervalNs, 1800)}) ==
        Approx(1800).epsilon(1e-3));
}
