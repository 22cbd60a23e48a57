#include "measure/cuda/cuda_util.hpp"

#include <cupti.h>
#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "kernels/common/testbed.hpp"

namespace attnprof::measure {

void check_cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  const std::string message = fmt::format("{}: {} ({})", what, cudaGetErrorString(error),
                                          cudaGetErrorName(error));
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // allocation failures are not sticky: clear it
    throw kernels::DeviceOutOfMemory(message);
  }
  throw kernels::CudaError(message);
}

bool is_sticky(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

std::string sticky_error_message() {
  // A sticky error is returned again by every synchronising call; a non-sticky one is consumed by
  // cudaGetLastError and the device synchronises cleanly afterwards.
  cudaError_t error = cudaDeviceSynchronize();
  if (error == cudaSuccess) error = cudaGetLastError();
  if (!is_sticky(error)) {
    cudaGetLastError();
    return {};
  }
  return fmt::format("sticky CUDA error: {} ({}); the process must be restarted",
                     cudaGetErrorString(error), cudaGetErrorName(error));
}

Event::Event() { check_cuda(cudaEventCreate(&event_), "cudaEventCreate"); }
Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}
void Event::record(cudaStream_t stream) { check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord"); }

double elapsed_ms(const Event& begin, const Event& end) {
  check_cuda(cudaEventSynchronize(end.get()), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, begin.get(), end.get()), "cudaEventElapsedTime");
  return ms;
}

Stream::Stream() { check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  check_cuda(cudaMalloc(&ptr_, bytes), "cudaMalloc");
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

int device_attribute(cudaDeviceAttr attr, int device_index) {
  int value = 0;
  check_cuda(cudaDeviceGetAttribute(&value, attr, device_index), "cudaDeviceGetAttribute");
  return value;
}

std::string cupti_result_text(CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  return text ? text : fmt::format("CUPTI error {}", static_cast<int>(result));
}

void check_cupti(CUptiResult result, const char* call) {
  if (result != CUPTI_SUCCESS) throw CuptiFailure{result, fmt::format("{}: {}", call, cupti_result_text(result))};
}

std::string demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

// The driver's current context, fetched through cudart: the binary links no libcuda.
CUcontext current_context() {
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  void* symbol = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check_cuda(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &symbol, 12000, cudaEnableDefault, &found),
             "cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)");
  if (found != cudaDriverEntryPointSuccess || symbol == nullptr) return nullptr;
  CUcontext ctx = nullptr;
  reinterpret_cast<CtxGetCurrent>(symbol)(&ctx);
  return ctx;
}

}  // namespace attnprof::measure
