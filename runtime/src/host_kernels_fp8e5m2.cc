#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(fp8_e5m2_t, fp8e5m2)
