#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(uint64_t, uint64)
