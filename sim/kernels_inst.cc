// sim/kernels_inst.cc - the table of simulator kernels by datatype: all 12 of ncclDataType_t, one
// translation unit each (kernels_<type>.cc).
#include "sim/world.h"

namespace cclab {
namespace sim {

#define CCLAB_DECLARE(NAME)                                                                                 \
  bool sim_coll_##NAME(SimExec&, const CollWork&, const RingView&, int, ConnInfo*, ConnInfo*);              \
  bool sim_tree_##NAME(SimExec&, const CollWork&, const TreeLinks&, const TreeConns&, int);                \
  bool sim_pat_##NAME(SimExec&, const CollWork&, const PatConns&, int);                                    \
  bool sim_nvls_##NAME(SimExec&, const CollWork&, NvlsConn&, int, int, const NvlsTreeConns*);
CCLAB_DECLARE(int8)
CCLAB_DECLARE(uint8)
CCLAB_DECLARE(int32)
CCLAB_DECLARE(uint32)
CCLAB_DECLARE(int64)
CCLAB_DECLARE(uint64)
CCLAB_DECLARE(float16)
CCLAB_DECLARE(float32)
CCLAB_DECLARE(float64)
CCLAB_DECLARE(bfloat16)
CCLAB_DECLARE(fp8e4m3)
CCLAB_DECLARE(fp8e5m2)
#undef CCLAB_DECLARE

// The kernel of one family for a datatype (nullptr for a type the simulator does not run).
#define CCLAB_KERNEL_SWITCH(PREFIX)                          \
  switch (t) {                                               \
    case SimType::kInt8: return PREFIX##int8;                \
    case SimType::kUint8: return PREFIX##uint8;              \
    case SimType::kInt32: return PREFIX##int32;              \
    case SimType::kUint32: return PREFIX##uint32;            \
    case SimType::kInt64: return PREFIX##int64;              \
    case SimType::kUint64: return PREFIX##uint64;            \
    case SimType::kFloat16: return PREFIX##float16;          \
    case SimType::kFloat32: return PREFIX##float32;          \
    case SimType::kFloat64: return PREFIX##float64;          \
    case SimType::kBfloat16: return PREFIX##bfloat16;        \
    case SimType::kFloat8e4m3: return PREFIX##fp8e4m3;       \
    case SimType::kFloat8e5m2: return PREFIX##fp8e5m2;       \
    default: return nullptr;                                 \
  }

SimCollFn sim_coll_kernel(SimType t) { CCLAB_KERNEL_SWITCH(sim_coll_) }
SimTreeFn sim_tree_kernel(SimType t) { CCLAB_KERNEL_SWITCH(sim_tree_) }
SimPatFn sim_pat_kernel(SimType t) { CCLAB_KERNEL_SWITCH(sim_pat_) }
SimNvlsFn sim_nvls_kernel(SimType t) { CCLAB_KERNEL_SWITCH(sim_nvls_) }
#undef CCLAB_KERNEL_SWITCH

}  // namespace sim
}  // namespace cclab
