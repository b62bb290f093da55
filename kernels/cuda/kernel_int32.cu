#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(int32_t, int32)
