#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(int8_t, int8)
