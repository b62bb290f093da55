#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(int8_t, int8)
