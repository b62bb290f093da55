#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(fp8_e5m2_t, fp8e5m2)
