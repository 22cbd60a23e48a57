// measure/cuda/range_marker.cu: the begin and end markers that cut a batched counter session into
// points are one block each, of the warp counts counter_batch.hpp reads them by. A GPU test: exits 77
// without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <string>

#include "gpu/gpu_test_support.hpp"
#include "measure/counter_batch.hpp"
#include "measure/cuda/cuda_util.hpp"
#include "measure/cuda/launch_records.hpp"
#include "measure/cuda/range_marker.hpp"

namespace m = attnprof::measure;

namespace {
uint64_t g_seed = 0;
}  // namespace

TEST_CASE("range markers: one block of kBeginMarkerWarps or kEndMarkerWarps warps, named as such") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m::Stream stream;
  const m::LaunchRecording rec = m::record_launches(
      [&] {
        m::launch_range_marker(m::RangeMarker::begin, stream.get());
        m::launch_range_marker(m::RangeMarker::end, stream.get());
      },
      stream.get());
  REQUIRE(rec.error.empty());
  REQUIRE(rec.launches.size() == 2);
  for (const auto& l : rec.launches) {
    CHECK(l.name.find("attnprof_range_marker_kernel") != std::string::npos);
    CHECK(l.grid == std::array<int64_t, 3>{1, 1, 1});
  }
  CHECK(rec.launches[0].block[0] == 32 * m::kBeginMarkerWarps);
  CHECK(rec.launches[1].block[0] == 32 * m::kEndMarkerWarps);
  CHECK(m::kBeginMarkerWarps != m::kEndMarkerWarps);
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_range_marker", argc, argv, g_seed); }
