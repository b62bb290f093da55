#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(uint8_t, uint8)
