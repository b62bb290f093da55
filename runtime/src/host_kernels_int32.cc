#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(int32_t, int32)
