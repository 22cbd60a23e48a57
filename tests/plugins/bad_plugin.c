/* Plugins that are wrong in one way each, for the loader's error tests (tests/plugins/CMakeLists.txt
 * builds this file once per defect). Every variant but NO_ENTRY exports a table whose one kernel
 * would load on the CPU backend (it writes nothing), so each test sees exactly its one defect. Built
 * with no defect it is a plugin of the ABI version of the header it is built against that declares no
 * flag but ATTNPROF_KERNEL_PURE, for the reasons attnprof gives when it does not run a windowed,
 * packed, backward, quantized or fp8 point. */
#include <attnprof/plugin.h>

#include <stdio.h>
#include <string.h>

#ifndef KERNEL_NAME
#define KERNEL_NAME "bad-plugin-kernel"
#endif

static int supports(void* user, const attnprof_shape* s, char* reason, size_t size) {
  (void)user, (void)s, (void)reason, (void)size;
  return 1;
}

static int prepare(void* user, const attnprof_shape* s, const attnprof_tensors* t, void** state, char* e, size_t n) {
  (void)user, (void)s, (void)e, (void)n;
  *state = (void*)t;
  return ATTNPROF_OK;
}

static int launch(void* state, attnprof_stream stream, char* error, size_t size) {
  (void)stream, (void)state, (void)error, (void)size;
  return ATTNPROF_OK;
}

static const attnprof_kernel kernels[] = {{
    sizeof(attnprof_kernel),
#if defined(NULL_NAME)
    NULL,
#else
    KERNEL_NAME,
#endif
    "a plugin with one defect",
#if defined(BAD_BACKEND)
    7,
#else
    ATTNPROF_BACKEND_CPU,
#endif
    ATTNPROF_COST_ATTENTION_FWD,
#if defined(NO_LAYOUT)
    0,
#else
    ATTNPROF_LAYOUT_BHSD,
#endif
#if defined(FLAG_UNDER_V1)
    ATTNPROF_KERNEL_PURE | ATTNPROF_KERNEL_MASKS_WINDOW,
#elif defined(UNKNOWN_FLAG)
    ATTNPROF_KERNEL_PURE | 1024u,
#else
    ATTNPROF_KERNEL_PURE,
#endif
    NULL,
    supports,
    NULL,
    prepare,
#if defined(NULL_LAUNCH)
    NULL,
#else
    launch,
#endif
    NULL,
}};

#if !defined(NO_ENTRY)
#if defined(ABI_MISMATCH)
static const attnprof_plugin plugin = {99, sizeof(attnprof_plugin), sizeof(attnprof_kernel), 1, "bad", "0", kernels};
#elif defined(ABI_NEXT)
static const attnprof_plugin plugin = {ATTNPROF_PLUGIN_ABI_VERSION + 1, sizeof(attnprof_plugin), sizeof(attnprof_kernel),
                                       1, "bad", "0", kernels};
#elif defined(ABI_ZERO)
static const attnprof_plugin plugin = {0, sizeof(attnprof_plugin), sizeof(attnprof_kernel), 1, "bad", "0", kernels};
#elif defined(FLAG_UNDER_V1)
/* A version-1 table (its structs are version 2's: the same sizes) declaring a flag of version 2. */
static const attnprof_plugin plugin = {1, sizeof(attnprof_plugin), sizeof(attnprof_kernel), 1, "bad", "0", kernels};
#elif defined(STRUCT_SIZE)
static const attnprof_plugin plugin = {ATTNPROF_PLUGIN_ABI_VERSION, sizeof(attnprof_plugin) + 8, sizeof(attnprof_kernel),
                                       1, "bad", "0", kernels};
#elif defined(NO_TABLE)
#define PLUGIN_NULL
#else
static const attnprof_plugin plugin = ATTNPROF_PLUGIN_INIT(1, "bad", "0", kernels);
#endif

ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) {
#if defined(PLUGIN_NULL)
  (void)kernels;
  return NULL;
#else
  return &plugin;
#endif
}
#else
/* Exports something, but not the entry point. */
ATTNPROF_PLUGIN_EXPORT int not_an_attnprof_plugin(void) { return kernels[0].backend; }
#endif
