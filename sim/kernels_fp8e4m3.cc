#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(fp8_e4m3_t, fp8e4m3)
