#include "sim/kernels_inst.h"
CCLAB_SIM_KERNEL(float, float32)
