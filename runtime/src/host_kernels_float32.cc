#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(float, float32)
