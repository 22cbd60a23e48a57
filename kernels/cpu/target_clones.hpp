// Function multi-versioning for the CPU hot loops: GCC emits one clone per listed x86-64 ISA level and
// an ifunc resolver picks the best at load time. Elsewhere (Clang, other architectures) a no-op.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ATTNPROF_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNPROF_CPU_CLONES
#endif
