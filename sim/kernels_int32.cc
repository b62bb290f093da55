#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(int32_t, int32)
