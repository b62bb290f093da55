#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(bfloat16_t, bfloat16)
