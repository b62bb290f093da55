#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(uint8_t, uint8)
