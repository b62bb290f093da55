#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(half_t, float16)
