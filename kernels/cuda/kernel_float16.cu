#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(cclab::half_t, float16)
