#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(int8_t, int8)
