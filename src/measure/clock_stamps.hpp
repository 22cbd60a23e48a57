// The SM clock under load, from two stamps around a measured call: every SM's cycle counter
// (clock64) and the global nanosecond timer (%globaltimer), read by one block per SM just before
// and just after the call. Cycles over nanoseconds on the same SM is that SM's mean clock over the
// interval, so a clock the power manager lowered while the call ran shows, where a probe kernel run
// between samples would read the clock the idle GPU returns to.
// This part needs no GPU: the stamps' kernel is in cuda/timer.cu.
#pragma once
#include <cstdint>
#include <vector>

namespace attnprof::measure {

struct ClockStamp {
  int64_t cycles = 0;    // clock64() of the SM
  uint64_t ns = 0;       // %globaltimer
  int32_t sm = -1;       // %smid; -1: the block never wrote (its slot keeps the fill value)
  int32_t pad = 0;
};

// Intervals shorter than this are not used: the global timer ticks in steps of up to 1 us.
inline constexpr uint64_t kMinClockIntervalNs = 20'000;

// Median over the SMs stamped in both `before` and `after` of cycles / ns, in MHz; 0 when no SM is
// in both or the interval is shorter than kMinClockIntervalNs.
double clock_mhz_between(const std::vector<ClockStamp>& before, const std::vector<ClockStamp>& after);

}  // namespace attnprof::measure
