// A CUDA plugin kernel that never finishes, chosen at build time (tests/plugins/CMakeLists.txt): its
// launch() waits forever on the host (HANG_HOST), or it enqueues a GPU kernel that spins forever
// (HANG_GPU), leaving work on the device when its worker is killed at --point-timeout. The points
// after it must measure on an idle GPU (tests/plugins/gpu_killed_point_test.sh).
#include <attnprof/plugin.h>

#include <unistd.h>

namespace {

__global__ void spin_forever(volatile int* flag) {
  while (*flag == 0) {
  }
}

int supports(void*, const attnprof_shape*, char*, size_t) { return 1; }
int prepare(void*, const attnprof_shape*, const attnprof_tensors*, void** state, char*, size_t) {
  *state = nullptr;
  return ATTNPROF_OK;
}
int launch(void*, attnprof_stream stream, char*, size_t) {
#if defined(HANG_GPU)
  static int* flag = nullptr;
  if (flag == nullptr && cudaMalloc(&flag, sizeof(int)) == cudaSuccess) cudaMemset(flag, 0, sizeof(int));
  spin_forever<<<132, 128, 0, static_cast<cudaStream_t>(stream)>>>(flag);
#else
  for (;;) ::pause();
#endif
  return ATTNPROF_OK;
}

const attnprof_kernel kKernels[] = {{sizeof(attnprof_kernel), KERNEL_NAME, "never finishes on purpose",
                                     ATTNPROF_BACKEND_CUDA, ATTNPROF_COST_ATTENTION_FWD, ATTNPROF_LAYOUT_BHSD,
                                     ATTNPROF_KERNEL_PURE, nullptr, supports, nullptr, prepare, launch, nullptr}};
const attnprof_plugin kPlugin = ATTNPROF_PLUGIN_INIT(1, "hang", "0", kKernels);

}  // namespace

extern "C" ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) { return &kPlugin; }
