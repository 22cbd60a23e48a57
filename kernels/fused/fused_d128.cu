// The fused kernel's instantiations at hdim 128 (fp16 and bf16; fused_launch.hpp says why one file per head dim).
#include "kernels/fused/fused_instance.cuh"

ATTNPROF_FUSED_INSTANTIATE(128)
