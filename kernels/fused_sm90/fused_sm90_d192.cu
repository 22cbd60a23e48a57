// fused-sm90's instantiations for 192-column tiles (fp16 and bf16, every schedule; fused_sm90_launch.hpp
// says why one file per tile width).
#include "kernels/fused_sm90/fused_sm90_instance.cuh"

ATTNPROF_SM90_INSTANTIATE(192)
