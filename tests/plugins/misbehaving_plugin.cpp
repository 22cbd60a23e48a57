// A CPU plugin kernel that misbehaves in one way, chosen at build time (tests/plugins/CMakeLists.txt):
// throws from launch(), crashes (SIGSEGV), hangs, returns an error, writes wrong numbers, writes
// nothing, or is "rebuilt" during the sweep (its first launch appends a byte to its own file, as a
// rebuild at the same path would change it, and crashes so that a fresh worker loads it again). The sweep
// must record that one point's failure and go on; the first two variants also test that the worker
// isolation holds for code attnprof has never seen.
#include <attnprof/plugin.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdint>
#include <stdexcept>

namespace {

int supports(void*, const attnprof_shape*, char*, size_t) { return 1; }

struct State {
  attnprof_shape n;
  attnprof_tensors t;
};

int prepare(void*, const attnprof_shape* n, const attnprof_tensors* t, void** state, char*, size_t) {
  *state = new State{*n, *t};
  return ATTNPROF_OK;
}

void release(void*, void* state) { delete static_cast<State*>(state); }

int launch(void* state, attnprof_stream, char* error, size_t size) {
  const State& st = *static_cast<const State*>(state);
  (void)st, (void)error, (void)size;
#if defined(MODE_THROW)
  throw std::runtime_error("the plugin's launch() threw on purpose");
#elif defined(MODE_CRASH)
  std::raise(SIGSEGV);
#elif defined(MODE_HANG)
  for (;;) ::pause();
#elif defined(MODE_REBUILD)
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&launch), &self) != 0 && self.dli_fname != nullptr) {
    const int fd = ::open(self.dli_fname, O_WRONLY | O_APPEND);
    if (fd >= 0 && ::write(fd, "x", 1) == 1) ::close(fd);
  }
  std::raise(SIGSEGV);
#elif defined(MODE_FAIL)
  snprintf(error, size, "the plugin reports a launch failure on purpose");
  return 3;
#elif defined(MODE_WRONG)
  // Every element written, finite, and wrong.
  auto* o = reinterpret_cast<float*>(static_cast<uintptr_t>(st.t.o.data));
  for (int64_t e = 0; e < st.n.batch * st.n.heads * st.n.seq_q * st.n.hdim; ++e) o[e] = 0.25f;
  auto* lse = reinterpret_cast<float*>(static_cast<uintptr_t>(st.t.lse.data));
  for (int64_t e = 0; lse != nullptr && e < st.n.batch * st.n.heads * st.n.seq_q; ++e) lse[e] = 1.f;
#else
  return ATTNPROF_OK;  // MODE_NOWRITE: O stays poisoned
#endif
  return ATTNPROF_OK;
}

const attnprof_kernel kKernels[] = {{sizeof(attnprof_kernel), KERNEL_NAME, "misbehaves on purpose", ATTNPROF_BACKEND_CPU,
                                     ATTNPROF_COST_ATTENTION_FWD, ATTNPROF_LAYOUT_BHSD,
                                     ATTNPROF_KERNEL_PURE | ATTNPROF_KERNEL_WRITES_LSE, nullptr, supports, nullptr,
                                     prepare, launch, release}};
const attnprof_plugin kPlugin = ATTNPROF_PLUGIN_INIT(1, "misbehaving", "0", kKernels);

}  // namespace

extern "C" ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) { return &kPlugin; }
