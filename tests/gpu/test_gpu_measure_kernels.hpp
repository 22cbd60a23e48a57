// Host entry points of the known kernels used by test_gpu_measure.cpp (defined in the .cu file).
#pragma once
#include <cstddef>

namespace attnprof::test {

void launch_copy(const void* src, void* dst, size_t bytes, int blocks, void* stream);
void launch_empty(void* stream);
// Every block spins until its SM's clock64() advanced `cycles`: a call that lasts a known number of
// SM cycles whatever the clock.
void launch_spin(long long cycles, int blocks, void* stream);
// The function pointer for cudaFuncGetAttributes / the occupancy API; sets the dynamic shared memory
// limit the launch needs.
const void* smem_kernel_func(size_t dynamic_smem_bytes);
const void* wide_kernel_func();

}  // namespace attnprof::test
