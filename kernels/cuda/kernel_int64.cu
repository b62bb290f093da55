#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(int64_t, int64)
