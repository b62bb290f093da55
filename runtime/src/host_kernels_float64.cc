#include "host_kernels_inst.h"

CCLAB_HOST_KERNEL(double, float64)
