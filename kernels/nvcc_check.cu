// Compile-only check: every kernels/ header must build under nvcc, device pass included.
// Instantiations are added here as the headers grow; nothing runs.
#include "kernels/platform.h"

__global__ void cclab_nvcc_check_platform(int* out) {
#if CCLAB_DEVICE_PASS
  out[threadIdx.x] = 1;
#endif
}
