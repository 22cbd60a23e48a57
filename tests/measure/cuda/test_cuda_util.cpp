// measure/cuda/cuda_util.cpp: CUDA errors become exceptions naming the call (out of memory its own
// kind), sticky errors are told apart, and the RAII event, stream and buffer work. A GPU test: exits 77
// without a CUDA device.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <string>

#include "gpu/gpu_test_support.hpp"
#include "kernels/common/testbed.hpp"
#include "measure/cuda/cuda_util.hpp"

namespace m = attnprof::measure;
namespace kernels = attnprof::kernels;

namespace {
uint64_t g_seed = 0;
}  // namespace

TEST_CASE("check_cuda: success passes; an error names the call; out of memory is DeviceOutOfMemory") {
  CHECK_NOTHROW(m::check_cuda(cudaSuccess, "cudaFree"));
  CHECK_THROWS_AS(m::check_cuda(cudaErrorInvalidValue, "cudaMemcpy"), kernels::CudaError);
  CHECK_THROWS_WITH(m::check_cuda(cudaErrorInvalidValue, "cudaMemcpy"), Catch::Contains("cudaMemcpy") &&
                                                                             Catch::Contains("cudaErrorInvalidValue"));
  CHECK_THROWS_AS(m::check_cuda(cudaErrorMemoryAllocation, "cudaMalloc"), kernels::DeviceOutOfMemory);
  CHECK_THROWS_AS(m::DeviceBuffer(size_t{1} << 60), kernels::DeviceOutOfMemory);  // an exabyte
  CHECK(m::sticky_error_message().empty());  // the failed allocation left nothing sticky
}

TEST_CASE("is_sticky: faults that poison the context, not recoverable errors") {
  CHECK(m::is_sticky(cudaErrorIllegalAddress));
  CHECK(m::is_sticky(cudaErrorLaunchFailure));
  CHECK(m::is_sticky(cudaErrorAssert));
  CHECK_FALSE(m::is_sticky(cudaSuccess));
  CHECK_FALSE(m::is_sticky(cudaErrorMemoryAllocation));
  CHECK_FALSE(m::is_sticky(cudaErrorInvalidValue));
}

TEST_CASE("Event, Stream, DeviceBuffer: a timed copy on a stream of a buffer of the size asked") {
  m::Stream stream;
  CHECK(stream.get() != nullptr);
  m::DeviceBuffer a(size_t{64} << 20), b(size_t{64} << 20);
  CHECK(a.bytes() == size_t{64} << 20);
  REQUIRE(a.get() != nullptr);
  m::Event begin, end;
  begin.record(stream.get());
  m::check_cuda(cudaMemcpyAsync(b.get(), a.get(), a.bytes(), cudaMemcpyDeviceToDevice, stream.get()), "copy");
  end.record(stream.get());
  const double ms = m::elapsed_ms(begin, end);
  CHECK(ms > 0);
  CHECK(ms < 1000);
  m::Event moved(std::move(begin));
  CHECK(moved.get() != nullptr);
  CHECK(begin.get() == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from event is empty
}

int main(int argc, char** argv) { return attnprof::gpu_test::run_session("test_cuda_util", argc, argv, g_seed); }
