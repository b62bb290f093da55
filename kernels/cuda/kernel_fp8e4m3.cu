#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(cclab::fp8_e4m3_t, fp8e4m3)
