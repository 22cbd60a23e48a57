// A CUDA plugin kernel that writes through a bad address, leaving the CUDA context with a sticky
// error: the worker must fail that point, restart, and measure the rest (tests/plugins/gpu_plugin_test.sh).
#include <attnprof/plugin.h>

namespace {

__global__ void write_through_bad_address(int* p) { p[threadIdx.x] = 1; }

int supports(void*, const attnprof_shape*, char*, size_t) { return 1; }
int prepare(void*, const attnprof_shape*, const attnprof_tensors*, void** state, char*, size_t) {
  *state = nullptr;
  return ATTNPROF_OK;
}
int launch(void*, attnprof_stream stream, char*, size_t) {
  write_through_bad_address<<<1, 32, 0, stream>>>(reinterpret_cast<int*>(0x10));
  return ATTNPROF_OK;
}

const attnprof_kernel kKernels[] = {{sizeof(attnprof_kernel), "plugin-sticky", "writes through address 0x10",
                                     ATTNPROF_BACKEND_CUDA, ATTNPROF_COST_ATTENTION_FWD, ATTNPROF_LAYOUT_BHSD,
                                     ATTNPROF_KERNEL_PURE, nullptr, supports, nullptr, prepare, launch, nullptr}};
const attnprof_plugin kPlugin = ATTNPROF_PLUGIN_INIT(1, "sticky", "0", kKernels);

}  // namespace

extern "C" ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) { return &kPlugin; }
