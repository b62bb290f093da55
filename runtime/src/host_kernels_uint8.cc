#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(uint8_t, uint8)
