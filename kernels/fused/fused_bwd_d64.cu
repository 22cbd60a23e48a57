// The fused kernel's backward at hdim 64 (fp16 and bf16; fused_launch.hpp says why one file per head dim).
#include "kernels/fused/fused_bwd_instance.cuh"

ATTNPROF_FUSED_BWD_INSTANTIATE(64)
