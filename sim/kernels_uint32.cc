#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(uint32_t, uint32)
