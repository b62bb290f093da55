#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(uint64_t, uint64)
