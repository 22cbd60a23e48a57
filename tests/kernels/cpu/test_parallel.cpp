// kernels/cpu/parallel.cpp: parallel_for covers [0, count) exactly once in chunks of `grain` (fewer at
// the end), calls nothing for an empty range, and rethrows a body's exception after every thread joined.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/cpu/parallel.hpp"

namespace k = attnprof::kernels;

TEST_CASE("hardware_threads is at least one") { CHECK(k::hardware_threads() >= 1); }

TEST_CASE("parallel_for covers every index exactly once, in chunks of the grain") {
  for (const auto& [count, grain] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 3}, {1000, 1}, {1000, 64},
                                                                             {999, 1000}, {5000, 7}}) {
    INFO("count " << count << ", grain " << grain);
    std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    k::parallel_for(count, grain, [&](int64_t begin, int64_t end) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        chunks.emplace_back(begin, end);
      }
      for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    int64_t wrong = 0;
    for (const auto& h : hits) wrong += h.load() != 1;
    CHECK(wrong == 0);
    // One thread takes the whole range as one chunk; several take grain-sized chunks, the last shorter.
    for (const auto& [begin, end] : chunks) {
      CHECK(begin < end);
      if (chunks.size() > 1) {
        CHECK(begin % grain == 0);
        CHECK((end - begin == grain || end == count));
      }
    }
  }
}

TEST_CASE("parallel_for of an empty range calls nothing; a grain below one counts as one") {
  int calls = 0;
  k::parallel_for(0, 4, [&](int64_t, int64_t) { ++calls; });
  k::parallel_for(-3, 4, [&](int64_t, int64_t) { ++calls; });
  CHECK(calls == 0);
  std::atomic<int64_t> covered{0};
  k::parallel_for(100, 0, [&](int64_t begin, int64_t end) { covered += end - begin; });
  CHECK(covered.load() == 100);
}

TEST_CASE("parallel_for rethrows the first exception of a body in the caller") {
  std::atomic<int> calls{0};
  CHECK_THROWS_WITH(k::parallel_for(1000, 1,
                                    [&](int64_t begin, int64_t) {
                                      ++calls;
                                      if (begin == 17 || begin == 0) throw std::runtime_error("chunk failed");
                                    }),
                    "chunk failed");
  CHECK(calls.load() >= 1);
}
