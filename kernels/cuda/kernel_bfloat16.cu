#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(cclab::bfloat16_t, bfloat16)
