// sim/kernels_inst.cc - the table of simulator kernels by datatype: all 12 of ncclDataType_t, one
// translation unit each (kernels_<type>.cc).
#include "sim/world.h"

namespace cclab {
namespace sim {

#define CCLAB_DECLARE(NAME)                                                                                 \
  bool sim_coll_##NAME(SimExec&, const CollWork&, const RingView&, int, ConnInfo*, ConnInfo*);              \
  bool sim_tree_##NAME(SimExec&, const CollWork&, const TreeLinks&, const TreeConns&, int);                \
  bool sim_pat_##NAME(SimExec&, const CollWork&, const PatConns&, int, void*);                             \
  bool sim_nvls_##NAME(SimExec&, const CollWork&, NvlsConn&, int, int);
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

SimCollFn sim_coll_kernel(SimType t) {
  switch (t) {
    case SimType::kInt8: return sim_coll_int8;
    case SimType::kUint8: return sim_coll_uint8;
    case SimType::kInt32: return sim_coll_int32;
    case SimType::kUint32: return sim_coll_uint32;
    case SimType::kInt64: return sim_coll_int64;
    case SimType::kUint64: return sim_coll_uint64;
    case SimType::kFloat16: return sim_coll_float16;
    case SimType::kFloat32: return sim_coll_float32;
    case SimType::kFloat64: return sim_coll_float64;
    case SimType::kBfloat16: return sim_coll_bfloat16;
    case SimType::kFloat8e4m3: return sim_coll_fp8e4m3;
    case SimType::kFloat8e5m2: return sim_coll_fp8e5m2;
    default: return nullptr;
  }
}

SimPatFn sim_pat_kernel(SimType t) {
  switch (t) {
    case SimType::kInt8: return sim_pat_int8;
    case SimType::kUint8: return sim_pat_uint8;
    case SimType::kInt32: return sim_pat_int32;
    case SimType::kUint32: return sim_pat_uint32;
    case SimType::kInt64: return sim_pat_int64;
    case SimType::kUint64: return sim_pat_uint64;
    case SimType::kFloat16: return sim_pat_float16;
    case SimType::kFloat32: return sim_pat_float32;
    case SimType::kFloat64: return sim_pat_float64;
    case SimType::kBfloat16: return sim_pat_bfloat16;
    case SimType::kFloat8e4m3: return sim_pat_fp8e4m3;
    case SimType::kFloat8e5m2: return sim_pat_fp8e5m2;
    default: return nullptr;
  }
}

SimTreeFn sim_tree_kernel(SimType t) {
  switch (t) {
    case SimType::kInt8: return sim_tree_int8;
    case SimType::kUint8: return sim_tree_uint8;
    case SimType::kInt32: return sim_tree_int32;
    case SimType::kUint32: return sim_tree_uint32;
    case SimType::kInt64: return sim_tree_int64;
    case SimType::kUint64: return sim_tree_uint64;
    case SimType::kFloat16: return sim_tree_float16;
    case SimType::kFloat32: return sim_tree_float32;
    case SimType::kFloat64: return sim_tree_float64;
    case SimType::kBfloat16: return sim_tree_bfloat16;
    case SimType::kFloat8e4m3: return sim_tree_fp8e4m3;
    case SimType::kFloat8e5m2: return sim_tree_fp8e5m2;
    default: return nullptr;
  }
}

SimNvlsFn sim_nvls_kernel(SimType t) {
  switch (t) {
    case SimType::kInt8: return sim_nvls_int8;
    case SimType::kUint8: return sim_nvls_uint8;
    case SimType::kInt32: return sim_nvls_int32;
    case SimType::kUint32: return sim_nvls_uint32;
    case SimType::kInt64: return sim_nvls_int64;
    case SimType::kUint64: return sim_nvls_uint64;
    case SimType::kFloat16: return sim_nvls_float16;
    case SimType::kFloat32: return sim_nvls_float32;
    case SimType::kFloat64: return sim_nvls_float64;
    case SimType::kBfloat16: return sim_nvls_bfloat16;
    case SimType::kFloat8e4m3: return sim_nvls_fp8e4m3;
    case SimType::kFloat8e5m2: return sim_nvls_fp8e5m2;
    default: return nullptr;
  }
}

}  // namespace sim
}  // namespace cclab
