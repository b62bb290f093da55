#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(int64_t, int64)
