#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(uint32_t, uint32)
