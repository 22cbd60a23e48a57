// Small CUDA runtime helpers shared by the measurement engine: error checking that maps onto the
// testbed's error types, sticky-error detection, and an RAII event/stream pair.
#pragma once
#include <string>

#include <cuda.h>  // CUcontext
#include <cuda_runtime_api.h>
#include <cupti_result.h>

namespace attnprof::measure {

// Throws kernels::DeviceOutOfMemory for cudaErrorMemoryAllocation, kernels::CudaError otherwise,
// with `what` and cudaGetErrorString in the message.
void check_cuda(cudaError_t, const char* what);

// True for the errors that corrupt the context: every later CUDA call in this process fails too
// (illegal address, launch failure, illegal instruction, ...). The process must be restarted.
bool is_sticky(cudaError_t);

// After a failure: if the context is now unusable, returns a non-empty message naming the error.
std::string sticky_error_message();

// A device attribute (cudaDeviceGetAttribute), checked.
int device_attribute(cudaDeviceAttr, int device_index);

// CUPTI's text for a result ("CUPTI_ERROR_UNKNOWN"), or "CUPTI error N" when it has none.
std::string cupti_result_text(CUptiResult);

// A CUPTI call that failed, or a CUPTI session that cannot go on: the result (CUPTI_ERROR_UNKNOWN when
// no call returned one) and the message ("<call>: <CUPTI's text>").
struct CuptiFailure {
  CUptiResult result = CUPTI_ERROR_UNKNOWN;
  std::string what;
};
// Throws CuptiFailure{result, "<call>: <CUPTI's text>"} unless result is CUPTI_SUCCESS.
void check_cupti(CUptiResult result, const char* call);

// A kernel's demangled name as CUPTI records and samples give it mangled; the name as given when it does
// not demangle, "?" for none.
std::string demangle(const char* name);

// The driver's current context (cuCtxGetCurrent through cudart: the binary links no libcuda);
// null when none is current.
CUcontext current_context();

// Owns a cudaEvent_t (timing enabled).
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream);

 private:
  cudaEvent_t event_ = nullptr;
};

// Milliseconds between two recorded events (synchronises on `end`).
double elapsed_ms(const Event& begin, const Event& end);

// Owns a non-blocking stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Owns a device allocation.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace attnprof::measure
