#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(uint32_t, uint32)
