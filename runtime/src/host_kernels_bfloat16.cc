#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(bfloat16_t, bfloat16)
