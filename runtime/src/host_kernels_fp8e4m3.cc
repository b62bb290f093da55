#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(fp8_e4m3_t, fp8e4m3)
