#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(half_t, float16)
