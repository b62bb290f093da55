#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(float, float32)
