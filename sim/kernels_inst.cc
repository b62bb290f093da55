// sim/kernels_inst.cc - the table of simulator kernels by datatype. Timing-only runs of a type that is
// not instantiated use the instantiated type of the same size (the schedule's arithmetic depends on
// the element size only); payload runs need the type itself.
#include "sim/world.h"

namespace cclab {
namespace sim {

#define CCLAB_DECLARE(NAME)                                                                                 \
  bool sim_coll_##NAME(SimExec&, const CollWork&, const RingView&, int, ConnInfo*, ConnInfo*);              \
  bool sim_tree_##NAME(SimExec&, const CollWork&, const TreeLinks&, const TreeConns&, int);
CCLAB_DECLARE(int8)
CCLAB_DECLARE(float16)
CCLAB_DECLARE(bfloat16)
CCLAB_DECLARE(float32)
CCLAB_DECLARE(int32)
CCLAB_DECLARE(float64)
#undef CCLAB_DECLARE

SimCollFn sim_coll_kernel(SimType t) {
  switch (t) {
    case SimType::kInt8: return sim_coll_int8;
    case SimType::kFloat16: return sim_coll_float16;
    case SimType::kBfloat16: return sim_coll_bfloat16;
    case SimType::kFloat32: return sim_coll_float32;
    case SimType::kInt32: return sim_coll_int32;
    case SimType::kFloat64: return sim_coll_float64;
    default: return nullptr;
  }
}

SimTreeFn sim_tree_kernel(SimType t) {
  switch (t) {
    case SimType::kInt8: return sim_tree_int8;
    case SimType::kFloat16: return sim_tree_float16;
    case SimType::kBfloat16: return sim_tree_bfloat16;
    case SimType::kFloat32: return sim_tree_float32;
    case SimType::kInt32: return sim_tree_int32;
    case SimType::kFloat64: return sim_tree_float64;
    default: return nullptr;
  }
}

}  // namespace sim
}  // namespace cclab
