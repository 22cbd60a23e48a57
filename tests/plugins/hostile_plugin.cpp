// A plugin that misbehaves while it is loaded or asked what it supports, in one way chosen at build
// time (tests/plugins/CMakeLists.txt): its entry point is data, crashes, aborts, hangs or throws; its
// supports() crashes, aborts or hangs; its constructor calls exit(0) or prints on stdout. attnprof
// runs such code only in its plugin probe, so each must end as one line and exit 2 (or, for the
// constructor that prints, a clean listing).
#include <attnprof/plugin.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace {

int supports(void*, const attnprof_shape*, char*, size_t) {
#if defined(SUPPORTS_SEGV)
  std::raise(SIGSEGV);
#elif defined(SUPPORTS_ABORT)
  std::abort();
#elif defined(SUPPORTS_HANG)
  for (;;) ::pause();
#endif
  return 1;
}

int prepare(void*, const attnprof_shape*, const attnprof_tensors*, void** state, char*, size_t) {
  *state = nullptr;
  return ATTNPROF_OK;
}

int launch(void*, attnprof_stream, char*, size_t) { return ATTNPROF_OK; }

const attnprof_kernel kKernels[] = {{sizeof(attnprof_kernel), "hostile", "misbehaves while loaded", ATTNPROF_BACKEND_CPU,
                                     ATTNPROF_COST_ATTENTION_FWD, ATTNPROF_LAYOUT_BHSD, ATTNPROF_KERNEL_PURE, nullptr,
                                     supports, nullptr, prepare, launch, nullptr}};
const attnprof_plugin kPlugin = ATTNPROF_PLUGIN_INIT(1, "hostile", "0", kKernels);

#if defined(CTOR_EXIT)
__attribute__((constructor)) void on_load() { std::exit(0); }
#elif defined(CTOR_PRINT)
__attribute__((constructor)) void on_load() {
  std::printf("hello from a plugin's constructor\n");
  std::fflush(stdout);
}
#endif

}  // namespace

#if defined(ENTRY_AS_DATA)
// The entry point's symbol on a data object (plugin.h declares the function, so the object takes the
// symbol by its assembler name): calling it jumps into data.
extern "C" ATTNPROF_PLUGIN_EXPORT const unsigned char entry_as_data[16] __asm__("attnprof_plugin_entry") = {0xff, 0xff,
                                                                                                          0xff, 0xff};
#else
extern "C" ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) {
#if defined(ENTRY_SEGV)
  std::raise(SIGSEGV);
#elif defined(ENTRY_ABORT)
  std::abort();
#elif defined(ENTRY_HANG)
  for (;;) ::pause();
#elif defined(ENTRY_THROW)
  throw std::runtime_error("the plugin's entry point threw on purpose");
#endif
  return &kPlugin;
}
#endif
