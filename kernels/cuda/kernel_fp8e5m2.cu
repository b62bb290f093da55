#include "kernels/cuda/kernel_inst.cuh"
CCLAB_CUDA_KERNEL(cclab::fp8_e5m2_t, fp8e5m2)
