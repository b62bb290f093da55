#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(uint64_t, uint64)
