// kernels/cpu/probes.cpp: the CPU roofline's probes give physically possible figures (bounds loose enough
// for a loaded 2-core machine, far from the nonsense of a wrong byte or FLOP count), and the cache flush
// writes every element exactly once.
#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/cpu/probes.hpp"

namespace cpu = attnprof::kernels::cpu;

TEST_CASE("stream_bytes_per_s: between 100 MB/s and 10 TB/s over buffers above the caches") {
  const double bytes_per_s = cpu::stream_bytes_per_s(size_t{16} << 20, 2);  // [bytes/s]
  INFO(bytes_per_s);
  CHECK(bytes_per_s > 1e8);
  CHECK(bytes_per_s < 1e13);
}

TEST_CASE("fma_flops_per_s: between 100 MFLOP/s and 100 TFLOP/s") {
  const double flops_per_s = cpu::fma_flops_per_s(0.02, 1);  // [FLOP/s]
  INFO(flops_per_s);
  CHECK(flops_per_s > 1e8);
  CHECK(flops_per_s < 1e14);
}

TEST_CASE("flush_caches adds one to every element, once") {
  std::vector<float> buffer(100003, 2.0f);
  buffer[0] = -1.0f;
  cpu::flush_caches(buffer);
  CHECK(buffer[0] == 0.0f);
  size_t wrong = 0;
  for (size_t i = 1; i < buffer.size(); ++i) wrong += buffer[i] != 3.0f;
  CHECK(wrong == 0);
  std::vector<float> empty;
  cpu::flush_caches(empty);
  CHECK(empty.empty());
}
