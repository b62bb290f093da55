#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(double, float64)
