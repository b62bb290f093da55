#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(int64_t, int64)
